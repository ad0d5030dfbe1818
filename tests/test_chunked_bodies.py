"""A lead posted with ``Transfer-Encoding: chunked`` (no Content-Length) is read, through
gunicorn with the shipped configuration (config/gunicorn.py) and config/wsgi.py, as a
form or as the ADF document itself."""

import http.client
import json
import urllib.parse

import pytest

from leads.models import Lead
from tests.leads.factories import VendorRegistrationFactory, adf, catch_all_rule
from tests.processes import free_port, service_env, start_gunicorn

pytestmark = [pytest.mark.slow, pytest.mark.django_db(transaction=True)]


def post_chunked(
    port, body: bytes, content_type="application/x-www-form-urlencoded", headers=None
):
    conn = http.client.HTTPConnection("127.0.0.1", port, timeout=30)
    try:
        pieces = (body[i : i + 700] for i in range(0, len(body), 700))
        conn.request(
            "POST",
            "/api/nl",
            body=pieces,
            headers={"Content-Type": content_type, **(headers or {})},
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


def test_a_document_posted_as_the_body_is_read_chunked_or_not_and_one_too_large_refused(
    tenant, tmp_path, settings
):
    VendorRegistrationFactory(account=tenant.account, vendor_id="V-1000")
    catch_all_rule(tenant.account)
    document = adf(prospect_id="RAW-1").replace(
        "Can I test drive Saturday?", "20 000 € budget"
    )
    cp1252 = document.replace('encoding="UTF-8"', 'encoding="windows-1252"')
    port = free_port()
    web = start_gunicorn(tmp_path, env=service_env(), port=port)
    try:
        chunked = post_chunked(
            port, document.encode(), "application/xml", headers=tenant.headers
        )
        conn = http.client.HTTPConnection("127.0.0.1", port, timeout=30)
        try:
            conn.request(
                "POST",
                "/api/nl",
                body=cp1252.replace("RAW-1", "RAW-2").encode("cp1252"),
                headers={"Content-Type": "text/xml; charset=utf-8", **tenant.headers},
            )
            response = conn.getresponse()
            declared = response.status, json.loads(response.read())
        finally:
            conn.close()
        too_large = post_chunked(
            port,
            b"<adf>" + b" " * settings.API_MAX_BODY_BYTES + b"</adf>",
            "text/xml",
            headers=tenant.headers,
        )
    finally:
        web.stop()

    assert chunked[0] == 200, chunked
    assert declared[0] == 200, declared
    first, second = (
        Lead.objects.get(pk=chunked[1]["leadId"]),
        Lead.objects.get(pk=declared[1]["leadId"]),
    )
    assert first.raw_xml == document
    assert second.raw_xml == cp1252.replace("RAW-1", "RAW-2")
    assert second.parsed is not None
    assert second.parsed["customer"]["comments"] == "20 000 € budget"
    assert too_large == (413, {"reason": "The request body is larger than 1 MiB."})
    assert Lead.objects.count() == 2
