"""Outages of the servers behind the API, with real servers: the cache (Redis) killed and
restarted while requests arrive, the database cut away from a running gunicorn and given back.

Every request is answered in its interface's shape: never a 500. With the cache gone the
limits let requests through; with the database gone the answer is 503 with Retry-After,
and the service recovers by itself once it is back.
"""

from __future__ import annotations

import http.client
import json
import logging
import select
import signal
import threading
import urllib.parse

import psycopg
import pytest
from django.db import connection
from rest_framework.test import APIClient

from core.throttling import cache_outage
from leads.models import Lead, Outcome
from tests.leads.factories import VendorRegistrationFactory, adf, catch_all_rule
from tests.processes import (
    TcpProxy,
    free_port,
    service_env,
    start_gunicorn,
    start_redis,
    wait_for,
)
from tests.users.factories import UserFactory

UNAVAILABLE = "The service is temporarily unavailable. Please retry in a few seconds."
VENDOR = {"vendor_id": "V-77", "vendor_name": "Outage Motors"}


@pytest.fixture
def dealer(tenant):
    VendorRegistrationFactory(account=tenant.account, **VENDOR)
    catch_all_rule(tenant.account)
    return tenant


def lead_form(dealer, n: int) -> dict[str, str]:
    return {"xml": adf(prospect_id=f"OUT-{n}", **VENDOR), **dealer.headers}


# --- the cache --------------------------------------------------------------------------------


@pytest.fixture
def private_cache(tmp_path, settings, monkeypatch):
    """The default cache on a Redis of this test's own, which the test may kill."""
    port = free_port()
    redis = start_redis(tmp_path, port)
    settings.CACHES = {
        "default": {
            "BACKEND": "django.core.cache.backends.redis.RedisCache",
            "LOCATION": f"redis://127.0.0.1:{port}/0",
            "OPTIONS": settings.REDIS_CACHE_OPTIONS,
        }
    }
    monkeypatch.setattr(cache_outage, "down", False)
    holder = {"redis": redis}
    yield port, tmp_path, holder
    holder["redis"].kill()


def throttling_log(caplog) -> list[str]:
    return [r.getMessage() for r in caplog.records if r.name == "core.throttling"]


@pytest.mark.slow
@pytest.mark.django_db
def test_every_api_answers_while_the_cache_is_killed_and_limits_count_again_after(
    dealer, private_cache, settings, one_window, caplog
):
    port, tmp_path, holder = private_cache
    settings.API_RATE_LIMITS = {**settings.API_RATE_LIMITS, "leads": "5/min"}
    settings.AUTH_FAILURE_LIMIT = "2/min"
    client = APIClient()
    statuses: list[int] = []

    def post(n: int) -> None:
        response = client.post("/api/nl", lead_form(dealer, n))
        statuses.append(response.status_code)

    for n in range(3):
        post(n)
    holder["redis"].kill(signal.SIGKILL)
    with caplog.at_level(logging.WARNING, logger="core.throttling"):
        for n in range(
            3, 15
        ):  # past the limit of 5: nothing counts while Redis is away
            post(n)
        users = dealer.client().get(
            f"/api/users/find/available-user-code?organizationId={dealer.organization.pk}"
        )
        wrong = [
            APIClient()
            .get(
                "/api/users/find/available-user-code", HTTP_APIUSER="x", HTTP_APIKEY="y"
            )
            .status_code
            for _ in range(4)
        ]
        call = APIClient().post(
            "/api/clicktocallv2", {}, format="json", HTTP_API_KEY=dealer.key
        )
        down_messages = throttling_log(caplog)

        holder["redis"] = start_redis(tmp_path, port)
        after = [
            client.post("/api/nl", lead_form(dealer, n)).status_code
            for n in range(15, 21)
        ]
        back_messages = throttling_log(caplog)[len(down_messages) :]

    assert statuses == [200] * 15
    assert users.status_code == 200
    assert wrong == [
        401,
        401,
        401,
        401,
    ]  # the failure limit of 2 is not counting either
    assert call.status_code == 422  # through authentication and the rate limit
    # One warning for the whole outage, however many requests met it.
    assert len(down_messages) == 1
    assert "cache cannot be reached" in down_messages[0]
    # Back: the counters start again, and the limit of 5 applies.
    assert after == [200] * 5 + [429]
    assert Lead.objects.count() == 15 + 5
    assert back_messages == ["The cache answers again; rate limits count again."]


@pytest.mark.slow
@pytest.mark.django_db
def test_admin_sign_in_works_while_the_cache_is_down(
    client, admin_user, private_cache, settings
):
    _, _, holder = private_cache
    settings.ADMIN_LOGIN_FAILURE_LIMIT = "1/min"
    holder["redis"].kill(signal.SIGKILL)

    wrong = [
        client.post("/admin/login/", {"username": "admin", "password": "x"}).status_code
        for _ in range(3)
    ]
    right = client.post(
        "/admin/login/?next=/admin/",
        {"username": "admin", "password": "password", "next": "/admin/"},
    )

    assert wrong == [200, 200, 200]
    assert right.status_code == 302


def under_a_file(tmp_path) -> str:
    """A directory that cannot be made (OSError)."""
    (tmp_path / "a-file").write_text("")
    return str(tmp_path / "a-file" / "cache")


def not_a_database(tmp_path) -> str:
    """A directory whose SQLite file is not a database (sqlite3.DatabaseError)."""
    (tmp_path / "cache" / "000").mkdir(parents=True)
    (tmp_path / "cache" / "000" / "cache.db").write_bytes(b"not a database" * 100)
    return str(tmp_path / "cache")


@pytest.mark.django_db
@pytest.mark.parametrize("broken", [under_a_file, not_a_database])
def test_limits_let_requests_through_when_the_embedded_cache_is_broken(
    tenant, settings, tmp_path, monkeypatch, caplog, broken
):
    settings.CACHES = {
        "default": {**settings.EMBEDDED_CACHE, "LOCATION": broken(tmp_path)}
    }
    settings.AUTH_FAILURE_LIMIT = "2/min"
    monkeypatch.setattr(cache_outage, "down", False)

    with caplog.at_level(logging.WARNING, logger="core.throttling"):
        wrong = [
            APIClient()
            .get(
                "/api/users/find/available-user-code", HTTP_APIUSER="x", HTTP_APIKEY="y"
            )
            .status_code
            for _ in range(4)
        ]
        users = tenant.client().get(
            f"/api/users/find/available-user-code?organizationId={tenant.organization.pk}"
        )

    assert wrong == [401] * 4
    assert users.status_code == 200
    messages = throttling_log(caplog)
    assert len(messages) == 1
    assert "cache cannot be reached" in messages[0]


# --- the database, in-process -----------------------------------------------------------------


@pytest.mark.django_db(transaction=True)
def test_a_connection_closed_under_a_request_is_answered_503_in_each_shape(dealer):
    user_api = dealer.client()
    url = f"/api/users/find/available-user-code?organizationId={dealer.organization.pk}"
    try:
        connection.ensure_connection()
        connection.connection.close()  # the server went away under the open connection
        intake = APIClient().post("/api/nl", lead_form(dealer, 1))
        users = user_api.get(url)
        call = APIClient().post(
            "/api/clicktocallv2", {}, format="json", HTTP_API_KEY=dealer.key
        )
    finally:
        connection.close()

    for response in (intake, users, call):
        assert response.status_code == 503
        assert response["Retry-After"] == "5"
    assert intake.json() == {"reason": UNAVAILABLE}
    assert users.json() == {"success": False, "message": UNAVAILABLE}
    assert call.json() == {"success": False, "message": UNAVAILABLE}
    # The broken connection is discarded (a server does it at the end of the request, the
    # finally above here): the next request connects again and works.
    assert APIClient().post("/api/nl", lead_form(dealer, 2)).status_code == 200


@pytest.mark.django_db(transaction=True)
def test_a_database_error_outside_the_api_views_is_a_503_too(admin_client):
    admin_client.get("/admin/")  # signed in, session stored
    try:
        connection.ensure_connection()
        connection.connection.close()
        admin_client.raise_request_exception = False
        page = admin_client.get("/admin/")
    finally:
        connection.close()

    assert page.status_code == 503
    assert page["Retry-After"] == "5"
    assert page.content.decode() == UNAVAILABLE


# --- the database, under a real gunicorn ------------------------------------------------------


class Poster:
    """Posts leads to a server one after another, recording each answer."""

    def __init__(self, port: int, dealer) -> None:
        self.port = port
        self.dealer = dealer
        self.answers: list[tuple[int, int, dict, str | None]] = []
        self.sent = 0

    def post(self, n: int) -> tuple[int, dict, str | None]:
        body = urllib.parse.urlencode(lead_form(self.dealer, n))
        conn = http.client.HTTPConnection("127.0.0.1", self.port, timeout=30)
        try:
            conn.request(
                "POST",
                "/api/nl",
                body=body,
                headers={"Content-Type": "application/x-www-form-urlencoded"},
            )
            response = conn.getresponse()
            data = json.loads(response.read() or b"{}")
            answer = (response.status, data, response.getheader("Retry-After"))
        finally:
            conn.close()
        self.answers.append((n, *answer))
        return answer

    def run_until(self, stop: threading.Event) -> None:
        while not stop.is_set():
            self.post(self.sent)
            self.sent += 1


@pytest.mark.slow
@pytest.mark.django_db(transaction=True)
def test_gunicorn_answers_503_while_the_database_is_away_and_recovers_alone(
    dealer, tmp_path
):
    db = connection.settings_dict
    proxy = TcpProxy(int(db["PORT"] or 5432))
    proxy.up()
    port = free_port()
    env = service_env(
        DATABASE_URL=f"postgres://{db['USER'] or 'postgres'}@127.0.0.1:{proxy.port}/{db['NAME']}",
        # Persistent, health-checked connections, as in production: the hard case.
        DATABASE_CONN_MAX_AGE="60",
        CELERY_BROKER_URL="memory://",
    )
    if db.get("PASSWORD"):
        env["PGPASSWORD"] = db["PASSWORD"]
    server = start_gunicorn(tmp_path, env=env, port=port)
    poster = Poster(port, dealer)
    stop = threading.Event()
    sender = threading.Thread(target=poster.run_until, args=(stop,))
    try:
        assert [poster.post(n)[0] for n in range(1000, 1003)] == [200, 200, 200]

        # Leads keep arriving while the database goes away and comes back.
        sender.start()
        wait_for(lambda: poster.sent >= 3, timeout=30, what="leads", process=server)
        proxy.down()
        wait_for(
            lambda: len(answered(poster, 503)) >= 5,
            timeout=30,
            what="answers during the outage",
            process=server,
        )
        proxy.up()
        back_from = poster.sent
        wait_for(
            lambda: len([n for n in answered(poster, 200) if n > back_from]) >= 5,
            timeout=30,
            what="answers after the outage",
            process=server,
        )
        stop.set()
        sender.join(timeout=30)
        # Everything refused meanwhile is sent again, as integrators do on 503.
        refused = answered(poster, 503)
        retried = [poster.post(n)[0] for n in refused]
    finally:
        stop.set()
        server.stop()
        proxy.down()

    assert {status for _, status, _, _ in poster.answers} == {200, 503}
    for _, status, body, retry_after in poster.answers:
        if status == 503:
            assert body == {"reason": UNAVAILABLE}
            assert retry_after == "5"
    assert retried == [200] * len(refused)
    # Every lead answered 200 is stored: the ones retried after a 503 too.
    accepted = {
        body["leadId"] for _, status, body, _ in poster.answers if status == 200
    }
    assert Lead.objects.filter(pk__in=accepted).count() == len(accepted)
    sent = {f"OUT-{n}" for n, _, _, _ in poster.answers}
    processed = Lead.objects.exclude(outcome=Outcome.RECEIVED)
    assert set(processed.values_list("prospect_id", flat=True)) == sent
    # A lead stored just before the database went away waits, raw, for the leads sweep.
    assert all(
        any(f">{p}</id>" in xml for p in sent)
        for xml in Lead.objects.filter(outcome=Outcome.RECEIVED).values_list(
            "raw_xml", flat=True
        )
    )


def answered(poster: Poster, status: int) -> list[int]:
    """The lead numbers whose (latest) answer had ``status``."""
    return [n for n, got, _, _ in list(poster.answers) if got == status]


@pytest.mark.django_db(transaction=True)
def test_a_kept_connection_is_checked_without_a_round_trip_and_replaced_once_closed(
    dealer, monkeypatch
):
    """core.postgresql: a connection kept from an earlier request is reused without a
    ``SELECT 1`` while its socket holds nothing to read; once the server has closed it,
    the next request replaces it before its first query, the User API's prepared read
    (core.db) included, and answers 200."""
    from django.db import close_old_connections
    from django.db.backends.postgresql.base import DatabaseWrapper as Django

    selects = []
    django_check = Django.is_usable

    def counted(self):
        selects.append(1)
        return django_check(self)

    monkeypatch.setattr(Django, "is_usable", counted)
    user = UserFactory(account=dealer.account)
    api = dealer.client()

    def request(path):
        close_old_connections()  # what a server does as each request starts
        return api.get(path).status_code

    monkeypatch.setitem(connection.settings_dict, "CONN_MAX_AGE", 60)
    connection.close()
    try:
        assert request(f"/api/users/{user.pk}") == 200
        kept = connection.connection
        assert request(f"/api/users/{user.pk}") == 200
        assert request(ORM_READ.format(org=dealer.organization.pk)) == 200
        assert connection.connection is kept  # reused, never checked by SELECT 1
        assert selects == []

        with psycopg.connect(ADMIN_DSN.format(**connection.settings_dict)) as admin:
            admin.execute("SELECT pg_terminate_backend(%s)", [kept.info.backend_pid])
        wait_for(lambda: _readable(kept), timeout=10, what="the server's goodbye")

        assert request(f"/api/users/{user.pk}") == 200
        assert connection.connection is not kept
        assert selects == [1]  # the socket said something: Django's check ran, failed
        assert APIClient().post("/api/nl", lead_form(dealer, 3)).status_code == 200
    finally:
        connection.close()


# An ORM read of the User API (no prepared statement).
ORM_READ = "/api/users/find/available-user-code?organizationId={org}"
ADMIN_DSN = "host={HOST} port={PORT} user={USER} dbname={NAME}"


def _readable(conn) -> bool:
    return bool(select.select([conn.fileno()], [], [], 0)[0])
