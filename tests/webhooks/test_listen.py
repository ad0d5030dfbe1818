"""Trying webhooks locally: plain HTTP to loopback only where WEBHOOK_ALLOW_LOCAL_HTTP is on
(make run's settings), and ``manage.py webhook_listen``, which registers itself, verifies
each delivery's signature, prints the event and removes its endpoint when stopped."""

import io
import threading
import time
import urllib.error
import urllib.request

import pytest
from django.core.exceptions import ValidationError
from django.core.management import call_command
from django.db import connection

from config.settings import base, local
from tests.processes import BIN
from webhooks.management.commands.webhook_listen import Command
from webhooks.models import WebhookDelivery, WebhookEndpoint
from webhooks.services import (
    NOT_ALLOWED,
    NOT_HTTPS,
    webhook_delivery_send,
    webhook_endpoint_create,
    webhook_test_send,
)
from webhooks.signing import signed_headers


def test_only_make_runs_settings_allow_plain_http_to_loopback():
    assert base.WEBHOOK_ALLOW_LOCAL_HTTP is False
    assert local.WEBHOOK_ALLOW_LOCAL_HTTP is True


@pytest.mark.django_db
def test_plain_http_is_refused_unless_allowed_and_then_only_to_loopback(
    tenant, settings
):
    organization = tenant.organization
    with pytest.raises(ValidationError) as refused:
        webhook_endpoint_create(organization=organization, url="http://127.0.0.1:8765/")
    assert refused.value.message_dict == {"url": [NOT_HTTPS]}
    settings.WEBHOOK_ALLOW_LOCAL_HTTP = True
    endpoint, _ = webhook_endpoint_create(
        organization=organization, url="http://127.0.0.1:8765/"
    )
    assert endpoint.url == "http://127.0.0.1:8765/"
    with pytest.raises(ValidationError) as refused:
        webhook_endpoint_create(organization=organization, url="http://10.1.2.3/")
    assert refused.value.message_dict == {"url": [NOT_HTTPS]}
    # HTTPS keeps its rules: loopback stays refused without WEBHOOK_ALLOWED_ADDRESSES.
    with pytest.raises(ValidationError) as refused:
        webhook_endpoint_create(organization=organization, url="https://127.0.0.1/")
    assert refused.value.message_dict == {"url": [NOT_ALLOWED]}


@pytest.mark.django_db(transaction=True)
def test_webhook_listen_prints_signed_deliveries_refuses_bad_ones_and_removes_itself(
    tenant, settings, broker
):
    settings.WEBHOOK_ALLOW_LOCAL_HTTP = True
    settings.WEBHOOK_TIMEOUT_SECONDS = 2.0
    command, out = Command(), io.StringIO()

    def listen():
        try:
            call_command(
                command,
                "--organization",
                str(tenant.organization.pk),
                "--port",
                "0",
                stdout=out,
            )
        finally:
            connection.close()

    thread = threading.Thread(target=listen, daemon=True)
    thread.start()
    assert command.listening.wait(5), out.getvalue()
    assert command.endpoint is not None
    assert command.server is not None
    endpoint = WebhookEndpoint.objects.get(pk=command.endpoint.pk)
    url = f"http://127.0.0.1:{command.server.server_port}/"
    assert endpoint.url == url
    assert endpoint.organization == tenant.organization
    try:
        # A delivery the service signs, sent the way a worker sends it: printed, 2xx.
        event = webhook_test_send(endpoint=endpoint)
        delivery = WebhookDelivery.objects.get(event=event, endpoint=endpoint)
        assert webhook_delivery_send(delivery_id=delivery.pk) == "succeeded"
        delivery.refresh_from_db()
        assert delivery.response_status == 204
        printed = out.getvalue()
        assert f"test_event {event.public_id} {{" in printed, printed
        assert "A test event sent from the service" in printed

        # Signed with another secret: refused with 401, and said so.
        body = b'{"type": "test_event", "id": "evt_forged"}'
        headers = signed_headers(
            ["whsec_" + "A" * 43 + "="],
            event_id="evt_forged",
            timestamp=int(time.time()),
            body=body,
        )
        request = urllib.request.Request(url, data=body, headers=headers)
        with pytest.raises(urllib.error.HTTPError) as refused:
            urllib.request.urlopen(request, timeout=5)
        assert refused.value.code == 401
        assert "REFUSED evt_forged" in out.getvalue()
    finally:
        command.server.shutdown()
        thread.join(5)
    assert not thread.is_alive()
    assert not WebhookEndpoint.objects.filter(pk=endpoint.pk).exists()
    assert f"endpoint {endpoint.pk} removed" in out.getvalue()


@pytest.mark.django_db
def test_webhook_listen_explains_a_refusal_outside_make_runs_settings(tenant):
    with pytest.raises(Exception, match="WEBHOOK_ALLOW_LOCAL_HTTP"):
        call_command(
            "webhook_listen",
            "--organization",
            str(tenant.organization.pk),
            "--port",
            "0",
            stdout=io.StringIO(),
        )
    assert not WebhookEndpoint.objects.exists()


@pytest.mark.slow
@pytest.mark.django_db(transaction=True)
def test_webhook_listen_stopped_by_sigterm_removes_its_endpoint(tenant, tmp_path):
    import signal

    from tests.processes import Process, service_env, wait_for

    # make run's settings (plain HTTP to loopback) on this test's database.
    env = service_env(DJANGO_SETTINGS_MODULE="config.settings.local")
    listen = Process(
        [
            str(BIN / "python"),
            "manage.py",
            "webhook_listen",
            "--organization",
            str(tenant.organization.pk),
            "--port",
            "0",
        ],
        env,
        tmp_path / "listen.log",
    )
    try:
        wait_for(
            lambda: "Listening on" in listen.log.read_text(),
            timeout=60,
            what="the listener",
            process=listen,
        )
        assert WebhookEndpoint.objects.filter(organization=tenant.organization).exists()

        listen.handle.send_signal(signal.SIGTERM)
        assert listen.handle.wait(timeout=30) == 0, listen.log.read_text()
    finally:
        listen.kill()

    assert "removed." in listen.log.read_text()
    assert not WebhookEndpoint.objects.filter(organization=tenant.organization).exists()
