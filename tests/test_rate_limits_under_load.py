"""The rate limits hold under concurrent clients, on the embedded default's cache (diskcache
under var/, no REDIS_URL) exactly as on Redis: the counters are atomic across threads and
processes, so a burst gets exactly the limit's number of answers and no more.

The real-process tests run gunicorn with several workers of several threads, the way `make
run` and production do, and send from ten client threads at once.
"""

from __future__ import annotations

import http.client
import json
import multiprocessing
import queue
import re
import threading
import time
import urllib.parse
from collections import Counter
from collections.abc import Callable
from typing import TypeVar
from uuid import uuid4

import pytest

from core.throttling import hit, parse_rate, unhit, window
from tests.accounts.factories import issue_scored_data_key
from tests.hits import count_in_process, hit_from_threads
from tests.processes import free_port, service_env, start_gunicorn

T = TypeVar("T")
CLIENTS = 10
TOO_MANY_REQUESTS = {
    "success": False,
    "message": "Too many requests. Please slow down.",
}
TOO_MANY_FAILURES = {
    "success": False,
    "message": "Too many failed authentication attempts. Please try again later.",
}
WRONG_PASSWORD = "Please enter the correct username and password"
THROTTLED_SIGN_IN = "Too many failed sign-in attempts."


@pytest.fixture(params=["embedded", "redis"])
def cache_dir(request, tmp_path, settings) -> str:
    """The embedded default's cache in a directory of this test's own ("embedded"; the
    returned directory), or the test settings' Redis ("redis"; "")."""
    if request.param == "redis":
        return ""
    directory = str(tmp_path / "cache")
    settings.CACHES = {"default": {**settings.EMBEDDED_CACHE, "LOCATION": directory}}
    return directory


# --- the counter itself -----------------------------------------------------------------------


@pytest.mark.slow
def test_hit_counts_exactly_from_many_threads_in_several_processes(cache_dir):
    key = f"test:{uuid4().hex}"
    processes, threads, hits = 3, 4, 40
    context = multiprocessing.get_context("spawn")
    start = context.Barrier(processes + 1)
    answers = context.Queue()
    children = [
        context.Process(
            target=count_in_process,
            args=(key,),
            kwargs={
                "threads": threads,
                "hits": hits,
                "cache_dir": cache_dir,
                "start": start,
                "answers": answers,
            },
        )
        for _ in range(processes)
    ]
    for child in children:
        child.start()
    try:
        here = hit_from_threads(key, threads=threads, hits=hits, start=start)
        there = [answers.get(timeout=120) for _ in children]
    finally:
        for child in children:
            child.join(timeout=30)
            if child.is_alive():
                child.kill()

    counts = here + [count for answered in there for count in answered]
    total = (processes + 1) * threads * hits
    # Every hit got a count of its own: none lost, none counted twice.
    assert sorted(counts) == list(range(1, total + 1))
    assert hit(key, 60) == total + 1


def test_unhit_takes_one_hit_back(cache_dir):
    key = f"test:{uuid4().hex}"
    hit(key, 60)
    hit(key, 60)

    unhit(key)

    assert hit(key, 60) == 2


def test_unhit_leaves_nothing_behind_once_the_counter_expired(cache_dir):
    key = f"test:{uuid4().hex}"
    hit(key, 0)  # lives 1 s
    time.sleep(1.2)

    unhit(key)
    unhit(f"test:{uuid4().hex}")  # never counted

    assert hit(key, 60) == 1  # a fresh count, not one after a -1 left behind


# --- real servers -----------------------------------------------------------------------------


class Clients:
    """Sends requests from ``CLIENTS`` threads at once to a server on ``port``."""

    def __init__(self, port: int) -> None:
        self.port = port

    def send(
        self, requests: list[tuple[str, str, dict[str, str], str]]
    ) -> list[tuple[int, bytes]]:
        """(method, path, headers, body) each, answered as (status, body), in order."""
        answers: list[tuple[int, bytes] | None] = [None] * len(requests)
        todo: queue.SimpleQueue[int] = queue.SimpleQueue()
        for n in range(len(requests)):
            todo.put(n)
        start = threading.Barrier(CLIENTS)

        def client() -> None:
            start.wait(timeout=30)
            while True:
                try:
                    n = todo.get_nowait()
                except queue.Empty:
                    return
                answers[n] = self.request(*requests[n])

        threads = [threading.Thread(target=client) for _ in range(CLIENTS)]
        for thread in threads:
            thread.start()
        for thread in threads:
            thread.join(timeout=120)
        assert all(answer is not None for answer in answers)
        return [answer for answer in answers if answer is not None]

    def request(
        self, method: str, path: str, headers: dict[str, str], body: str = ""
    ) -> tuple[int, bytes]:
        conn = http.client.HTTPConnection("127.0.0.1", self.port, timeout=60)
        try:
            conn.request(method, path, body=body or None, headers=headers)
            response = conn.getresponse()
            return response.status, response.read()
        finally:
            conn.close()


def in_one_window(period: int, run: Callable[[], T], *, room: float = 30) -> T:
    """``run()``'s answer from a run that began and ended within one rate-limit window (the
    servers count by this machine's clock too): it starts with ``room`` seconds of its window
    left, and in the unlikely case it outlasts them anyway it runs again, in a window none of
    its requests reached."""
    fresh_from = 0
    for _ in range(5):
        while True:
            number, left = window(period)
            if number >= fresh_from and left >= room:
                break
            time.sleep(left + 0.05)
        answer = run()
        ended = window(period)[0]
        if ended == number:
            return answer
        fresh_from = ended + 1
    raise AssertionError("five runs in a row outlasted their window")


def statuses(answers: list[tuple[int, bytes]]) -> Counter[int]:
    return Counter(status for status, _ in answers)


def sign_in_form(clients: Clients) -> tuple[dict[str, str], str]:
    """Headers and body for a sign-in to the admin as "admin" with a wrong password."""
    conn = http.client.HTTPConnection("127.0.0.1", clients.port, timeout=30)
    try:
        conn.request("GET", "/admin/login/")
        page = conn.getresponse()
        html = page.read().decode()
        cookie = page.getheader("Set-Cookie") or ""
    finally:
        conn.close()
    csrf_cookie = re.search(r"csrftoken=([^;]+)", cookie)
    csrf_field = re.search(r'name="csrfmiddlewaretoken" value="([^"]+)"', html)
    assert csrf_cookie
    assert csrf_field
    headers = {
        "Content-Type": "application/x-www-form-urlencoded",
        "Cookie": f"csrftoken={csrf_cookie.group(1)}",
    }
    body = urllib.parse.urlencode(
        {
            "username": "admin",
            "password": "wrong",
            "next": "/admin/",
            "csrfmiddlewaretoken": csrf_field.group(1),
        }
    )
    return headers, body


def wrong_key(n: int, tenant, dates: str) -> tuple[str, str, dict[str, str], str]:
    """The ``n``-th request with a wrong key, on each API that takes a key in turn."""
    if n % 3 == 0:
        return ("GET", f"/api/scoreddata?apikey=sd_wrong_{n}&{dates}", {}, "")
    if n % 3 == 1:
        path = f"/api/users/find/available-user-code?organizationId={tenant.organization.pk}"
        return (
            "GET",
            path,
            {"apiuser": tenant.credential.api_user, "apikey": f"wrong-{n}"},
            "",
        )
    headers = {"api_key": f"wrong-{n}", "Content-Type": "application/json"}
    return ("POST", "/api/clicktocallv2", headers, "{}")


@pytest.mark.slow
@pytest.mark.django_db(transaction=True)
def test_limits_hold_for_concurrent_clients_of_several_server_processes(
    tenant, admin_user, cache_dir, settings, tmp_path
):
    env = service_env(CELERY_BROKER_URL="memory://")
    if cache_dir:
        env["EMBEDDED_CACHE_DIR"] = cache_dir
    port = free_port()
    server = start_gunicorn(tmp_path, env=env, port=port, workers=3)
    clients = Clients(port)
    scored_key = issue_scored_data_key(tenant.account)
    scored_limit, period = parse_rate(settings.API_RATE_LIMITS["scoreddata"])
    failure_limit, failure_period = parse_rate(settings.AUTH_FAILURE_LIMIT)
    sign_in_limit, sign_in_period = parse_rate(settings.ADMIN_LOGIN_FAILURE_LIMIT)
    assert (
        period == failure_period == sign_in_period
    )  # one window holds all three bursts
    dates = "fromDate=2026-01-01&toDate=2026-01-02"
    scored: list[tuple[str, str, dict[str, str], str]] = [
        ("GET", f"/api/scoreddata?apikey={scored_key}&{dates}", {}, "")
    ] * (scored_limit + 10)
    wrong = [wrong_key(n, tenant, dates) for n in range(200)]
    form_headers, form = sign_in_form(clients)
    sign_ins = [("POST", "/admin/login/?next=/admin/", form_headers, form)] * (
        sign_in_limit * 2
    )

    try:
        scored_answers, wrong_answers, sign_in_answers = in_one_window(
            period,
            lambda: (clients.send(scored), clients.send(wrong), clients.send(sign_ins)),
        )
    finally:
        server.stop()

    assert statuses(scored_answers) == {200: scored_limit, 429: 10}
    assert all(
        json.loads(body) == TOO_MANY_REQUESTS
        for status, body in scored_answers
        if status == 429
    )
    assert statuses(wrong_answers) == {401: failure_limit, 429: 200 - failure_limit}
    assert all(
        json.loads(body) == TOO_MANY_FAILURES
        for status, body in wrong_answers
        if status == 429
    )
    pages = [body.decode() for _, body in sign_in_answers]
    assert statuses(sign_in_answers) == {200: sign_in_limit * 2}
    assert sum(WRONG_PASSWORD in page for page in pages) == sign_in_limit
    assert sum(THROTTLED_SIGN_IN in page for page in pages) == sign_in_limit
