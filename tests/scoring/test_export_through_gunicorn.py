"""Exports through the shipped gunicorn configuration: a long scored-data export is served
whole however slowly the client reads (a worker streaming an answer is not killed as hung),
and a date the service refuses is answered before any streaming starts."""

import http.client
import json
import time
from datetime import timedelta

import pytest
from django.test import Client
from django.utils import timezone

from accounts.services import scored_data_key_issue
from calls.models import Call, CallStatus
from tests.processes import free_port, service_env, start_gunicorn
from tests.scoring.factories import CallFactory, in_role

pytestmark = [pytest.mark.slow, pytest.mark.django_db(transaction=True)]

CALLS = 3000
# The worker timeout the server runs with: far shorter than the client takes to read
# (PAUSES pauses of PAUSE_SECONDS, twice the timeout). Not 1 s: a threaded worker tells the
# arbiter it is alive once per turn of its loop, which waits up to 1 s for a connection to
# be ready, so with a 1 s timeout a busy machine had an idle worker killed as hung.
TIMEOUT_SECONDS = "3"
PAUSES = 4
PAUSE_SECONDS = 1.5


def test_an_export_read_slowly_outlives_the_worker_timeout(tenant, tmp_path):
    account = tenant.account
    template = CallFactory.build(account=account, status=CallStatus.ANSWER)
    start = timezone.now() - timedelta(days=1)
    calls = []
    for n in range(CALLS):
        call = CallFactory.build(
            account=account,
            status=CallStatus.ANSWER,
            phone=template.phone,
            call_notes="Sales lead. New 2025 Toyota RAV4. " * 8,
        )
        call.received_at = start + timedelta(seconds=n)
        calls.append(call)
    Call.objects.bulk_create(calls)
    key = scored_data_key_issue(account=account)
    port = free_port()
    server = start_gunicorn(
        tmp_path,
        env=service_env(GUNICORN_TIMEOUT=TIMEOUT_SECONDS),
        port=port,
    )
    try:
        connection = http.client.HTTPConnection("127.0.0.1", port, timeout=60)
        connection.request(
            "GET",
            f"/api/scoreddata?apikey={key}&fromDate=2000-01-01&toDate=2100-01-01",
        )
        response = connection.getresponse()
        assert response.status == 200
        body = bytearray()
        reads = 0
        while block := response.read(64 * 1024):
            body += block
            reads += 1
            if reads <= PAUSES:  # a slow client: the server waits on a full socket
                time.sleep(PAUSE_SECONDS)
        connection.close()
    finally:
        server.stop()
    assert reads > PAUSES, "the answer fit in the socket buffers: make it longer"
    assert body.startswith(b"[")
    assert body.endswith(b"]")
    assert body.count(b'"dealerName"') == CALLS


def test_a_date_at_the_end_of_the_calendar_is_refused_before_streaming(
    tenant, tmp_path
):
    """9999-12-31 once failed inside the CSV's stream: a 200, a cut body, and nothing
    logged but gunicorn's own traceback. Now every path answers before it streams."""
    account = tenant.account
    CallFactory(account=account)
    key = scored_data_key_issue(account=account)
    manager = in_role("Manager", accounts=[account])
    browser = Client()
    browser.force_login(manager)
    session = browser.cookies["sessionid"].value
    port = free_port()
    server = start_gunicorn(tmp_path, env=service_env(), port=port)
    answers = {}
    try:
        for path in (
            f"/api/scoreddata?apikey={key}&fromDate=2026-01-01&toDate=9999-12-31",
            "/calls/export.csv?date_to=9999-12-31",
            "/calls/?date_to=9999-12-31",
            "/dashboard/?date_to=9999-12-31",
        ):
            connection = http.client.HTTPConnection("127.0.0.1", port, timeout=30)
            connection.request("GET", path, headers={"Cookie": f"sessionid={session}"})
            response = connection.getresponse()
            answers[path.split("?")[0]] = (
                response.status,
                response.getheader("Content-Type"),
                response.read(),
            )
            connection.close()
    finally:
        server.stop()
    log = server.log.read_text()

    assert answers["/api/scoreddata"][:2] == (400, "application/json; charset=utf-8")
    assert json.loads(answers["/api/scoreddata"][2]) == {
        "success": False,
        "message": "The toDate parameter must be a date between 1900-01-01 and 9998-12-31.",
    }
    assert answers["/calls/export.csv"] == (
        400,
        "text/plain; charset=utf-8",
        b"Some filters are not valid: * date_to\n"
        b"  * Enter a date between 1900-01-01 and 9998-12-31.",
    )
    for page in ("/calls/", "/dashboard/"):
        status, _, body = answers[page]
        assert status == 200
        assert b"Enter a date between 1900-01-01 and 9998-12-31." in body
    assert "Traceback" not in log, log
    assert "OverflowError" not in log, log
