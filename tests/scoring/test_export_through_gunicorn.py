"""A long scored-data export through the shipped gunicorn configuration is served whole,
however slowly the client reads: a worker streaming an answer is not killed as hung."""

import http.client
import time
from datetime import timedelta

import pytest
from django.utils import timezone

from accounts.services import scored_data_key_issue
from calls.models import Call, CallStatus
from tests.processes import free_port, service_env, start_gunicorn
from tests.scoring.factories import CallFactory

pytestmark = [pytest.mark.slow, pytest.mark.django_db(transaction=True)]

CALLS = 3000
# The worker timeout the server runs with: far shorter than the client takes to read.
TIMEOUT_SECONDS = "1"


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
            if reads <= 4:
                time.sleep(1)  # a slow client: the server waits on a full socket
        connection.close()
    finally:
        server.stop()
    assert reads > 4, "the answer fit in the socket buffers: make it longer"
    assert body.startswith(b"[") and body.endswith(b"]")
    assert body.count(b'"dealerName"') == CALLS
