"""Webhooks with real processes: gunicorn taking leads, a Celery worker consuming the
``webhooks`` queue beside the default one, a private Redis broker the test kills and
restarts, and the local HTTPS receiver."""

import http.client
import urllib.parse

import pytest

from calls.models import CallAttempt
from config.celery import app
from leads.models import Lead
from tests.handover import hold_hand_overs
from tests.leads.factories import ParsingRuleFactory, VendorRegistrationFactory, adf
from tests.processes import (
    free_port,
    service_env,
    start_gunicorn,
    start_redis,
    start_worker,
    wait_for,
)
from tests.users.factories import agent
from webhooks.models import WebhookDelivery
from webhooks.services import webhook_endpoint_create, webhook_test_send
from webhooks.tasks import webhook_deliver_task

pytestmark = [pytest.mark.slow, pytest.mark.django_db(transaction=True)]


@pytest.fixture
def dealer(tenant):
    VendorRegistrationFactory(account=tenant.account, vendor_id="V-1000")
    ParsingRuleFactory(account=tenant.account)
    for n in range(2):
        agent(tenant.account, phone=f"+1303555014{n}")
    return tenant


def post(port, form):
    conn = http.client.HTTPConnection("127.0.0.1", port, timeout=30)
    try:
        conn.request(
            "POST",
            "/api/nl",
            urllib.parse.urlencode(form),
            {"Content-Type": "application/x-www-form-urlencoded"},
        )
        response = conn.getresponse()
        return response.status, response.read()
    finally:
        conn.close()


def received(receiver, type, prospect_id=None):
    return [
        e
        for e in receiver.events("/hook")
        if e["type"] == type
        and (prospect_id is None or e["lead"]["prospect_id"] == prospect_id)
    ]


def settled() -> bool:
    return (
        not CallAttempt.objects.filter(ended_at__isnull=True).exists()
        and not WebhookDelivery.objects.filter(status="pending").exists()
    )


def test_events_reach_the_receiver_through_a_real_worker_also_when_the_broker_was_down(
    dealer, hooks, tmp_path, monkeypatch
):
    endpoint, _ = webhook_endpoint_create(
        organization=dealer.organization, url=hooks.url("/hook")
    )
    broker_port = free_port()
    broker_url = f"redis://127.0.0.1:{broker_port}/0"
    broker = start_redis(tmp_path, broker_port)
    env = service_env(
        CELERY_BROKER_URL=broker_url,
        CELERY_VISIBILITY_TIMEOUT="3",
        CALLS_SWEEP_SECONDS="1",
        WEBHOOKS_SWEEP_SECONDS="1",
        WEBHOOK_ALLOWED_ADDRESSES="127.0.0.1",
        WEBHOOK_CA_BUNDLE=str(hooks.cert),
    )
    web_port = free_port()
    web = start_gunicorn(tmp_path, env=env, port=web_port)
    worker = start_worker(
        tmp_path, env=env, beat=True, queues="events,calls,default,webhooks"
    )
    try:
        status, _ = post(web_port, {"xml": adf(prospect_id="B-0"), **dealer.headers})
        assert status == 200
        # The whole chain: intake, the call pipeline, each step reported.
        wait_for(
            lambda: received(hooks, "call_completed"),
            timeout=60,
            what="call_completed of the first lead",
            process=worker,
        )
        # The lead's consent (consent_given) is of another subject: in no fixed order.
        types = [e["type"] for e in hooks.events("/hook") if "consent" not in e]
        assert types[:3] == ["lead_received", "agent_presses_one", "call_completed"]

        # Killed once the worker is done with the first lead (a worker caught acknowledging
        # a task as its broker dies can exit: that is test_faults' subject, not this one's).
        wait_for(
            lambda: settled(),
            timeout=30,
            what="the first lead's legs and deliveries to settle",
            process=worker,
        )
        broker.kill()
        status, _ = post(web_port, {"xml": adf(prospect_id="B-1"), **dealer.headers})
        assert status == 200  # intake does not wait for the broker
        lead = Lead.objects.get(prospect_id="B-1")
        assert WebhookDelivery.objects.filter(
            event__subject=f"lead:{lead.pk}", status="pending"
        ).exists()
        assert "webhook.dispatch_failed" in web.log.read_text()
        assert not received(hooks, "lead_received", "B-1")

        broker = start_redis(tmp_path, broker_port)
        wait_for(
            lambda: received(hooks, "lead_received", "B-1"),
            timeout=60,
            what="the event written while the broker was down",
            process=worker,
        )

        # One delivery handed to the worker twice is sent once.
        hold_hand_overs(monkeypatch, "webhooks.tasks.webhook_deliver_task")
        twice = webhook_test_send(endpoint=endpoint)
        marker = webhook_test_send(endpoint=endpoint)
        with app.connection_for_write(broker_url) as connection:
            for event in (twice, twice, marker):
                webhook_deliver_task.apply_async(
                    kwargs={"delivery_id": event.deliveries.get().pk},
                    connection=connection,
                )
        wait_for(
            lambda: any(e["id"] == marker.public_id for e in hooks.events("/hook")),
            timeout=30,
            what="the marker after both copies",
            process=worker,
        )
    finally:
        worker.stop()
        web.stop()
        broker.kill()

    ids = [e["id"] for e in hooks.events("/hook")]
    assert ids.count(twice.public_id) == 1
    assert len(received(hooks, "lead_received", "B-1")) == 1
