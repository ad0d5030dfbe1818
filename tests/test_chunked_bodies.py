"""A lead posted with ``Transfer-Encoding: chunked`` (no Content-Length) is read, through
gunicorn with the shipped configuration (config/gunicorn.py) and config/wsgi.py."""

import http.client
import json
import urllib.parse

import pytest

from leads.models import Lead
from tests.leads.factories import VendorRegistrationFactory, adf, catch_all_rule
from tests.processes import free_port, service_env, start_gunicorn

pytestmark = [pytest.mark.slow, pytest.mark.django_db(transaction=True)]


def post_chunked(port, body: bytes):
    conn = http.client.HTTPConnection("127.0.0.1", port, timeout=30)
    try:
        pieces = (body[i : i + 700] for i in range(0, len(body), 700))
        conn.request(
            "POST",
            "/api/nl",
            body=pieces,
            headers={"Content-Type": "application/x-www-form-urlencoded"},
            encode_chunked=True,
        )
        response = conn.getresponse()
        return response.status, json.loads(response.read())
    finally:
        conn.close()


def test_a_chunked_lead_is_read_and_a_chunked_body_too_large_is_refused(
    tenant, tmp_path, settings
):
    VendorRegistrationFactory(account=tenant.account, vendor_id="V-1000")
    catch_all_rule(tenant.account)
    port = free_port()
    web = start_gunicorn(tmp_path, env=service_env(), port=port)
    try:
        form = urllib.parse.urlencode(
            {"xml": adf(prospect_id="CH-1"), **tenant.headers}
        ).encode()
        status, answer = post_chunked(port, form)
        too_large = post_chunked(port, b"x" * (settings.API_MAX_BODY_BYTES + 10))
    finally:
        web.stop()

    assert status == 200, answer
    assert answer["result"] == "Success"
    assert Lead.objects.filter(pk=answer["leadId"]).exists()
    assert too_large[0] == 413
