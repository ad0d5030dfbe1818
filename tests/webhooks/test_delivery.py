"""Delivery through the services against a local HTTPS receiver: retries with backoff,
Retry-After, giving up, 410, disabling a failing endpoint, order per call, one send per
delivery however often its task arrives, the sweep, private destinations, secret rotation
and tenant scoping. The broker is recorded (conftest.Broker), never published to."""

import socket
import threading
from datetime import timedelta

import pytest
from django.core.exceptions import ValidationError
from django.db import connection
from django.utils import timezone

from core.handover import HELD_BY_BROKER, breaker
from tests.accounts.factories import AccountFactory
from tests.leads.factories import VendorRegistrationFactory, adf, catch_all_rule
from tests.webhooks.conftest import guide_verifier
from tests.webhooks.receiver import Answer
from webhooks.models import DeliveryStatus, WebhookDelivery, WebhookEndpoint
from webhooks.services import (
    GONE,
    NOT_ALLOWED,
    NOT_HTTPS,
    webhook_deliveries_sweep,
    webhook_delivery_resend,
    webhook_delivery_send,
    webhook_endpoint_create,
    webhook_endpoint_replay,
    webhook_endpoint_update,
    webhook_event_emit,
    webhook_events_prune,
    webhook_secret_rotate,
    webhook_test_send,
)

pytestmark = pytest.mark.django_db


@pytest.fixture
def endpoint_and_secret(tenant, hooks) -> tuple[WebhookEndpoint, str]:
    return webhook_endpoint_create(
        organization=tenant.organization, url=hooks.url("/hook")
    )


@pytest.fixture
def endpoint(endpoint_and_secret) -> WebhookEndpoint:
    return endpoint_and_secret[0]


@pytest.fixture
def secret(endpoint_and_secret) -> str:
    """The endpoint's signing secret, shown only when it was created."""
    return endpoint_and_secret[1]


def emit(tenant, capture, n=1, subject="call:1", type="call_completed"):
    with capture(execute=True):
        return [
            webhook_event_emit(
                type=type,
                organization_id=tenant.organization.pk,
                account=tenant.account,
                objects={"n": n + i},
                subject=subject,
            )
            for i in range(n)
        ]


def only_delivery() -> WebhookDelivery:
    return WebhookDelivery.objects.select_related("endpoint", "event").get()


def test_a_500_and_a_timeout_are_retried_with_backoff_until_the_receiver_takes_it(
    tenant, endpoint, secret, hooks, broker, django_capture_on_commit_callbacks
):
    capture = django_capture_on_commit_callbacks
    hooks.script("/hook", 500, Answer(delay=3))  # then 200; the timeout is 1 s
    emit(tenant, capture)
    [delivery_id] = broker.take()

    with capture(execute=True):
        assert webhook_delivery_send(delivery_id=delivery_id) == "retry"
    first = only_delivery()
    assert first.response_status == 500
    assert first.attempts == 1
    assert first.endpoint.failing_since is not None
    # Handed back to the broker with a countdown within the backoff's first step.
    [(again, countdown)] = broker.sent
    broker.sent.clear()
    assert again == delivery_id
    assert 0 < countdown <= 2
    assert first.last_attempt_at is not None
    assert first.next_attempt_at == first.last_attempt_at + timedelta(seconds=countdown)
    # Not due yet: a task arriving early sends nothing.
    assert webhook_delivery_send(delivery_id=delivery_id) == "not_due"
    assert len(hooks.received) == 1

    with capture(execute=True):
        outcome = webhook_delivery_send(
            delivery_id=delivery_id, now=first.next_attempt_at
        )
    second = only_delivery()
    assert outcome == "retry"
    assert second.error == "Timed out."
    assert second.response_status is None
    assert second.next_attempt_at is not None
    assert second.last_attempt_at is not None
    delay = (second.next_attempt_at - second.last_attempt_at).total_seconds()
    assert 2 <= delay <= 4  # the second step: 4 s, jittered down to half at most
    broker.sent.clear()

    assert (
        webhook_delivery_send(delivery_id=delivery_id, now=second.next_attempt_at)
        == "succeeded"
    )
    done = only_delivery()
    assert done.status == DeliveryStatus.SUCCEEDED
    assert done.attempts == 3
    assert done.response_status == 200
    assert done.delivered_at is not None
    assert done.endpoint.failing_since is None
    ids = {r.headers["webhook-id"] for r in hooks.received}
    assert ids == {done.event.public_id}
    assert len(hooks.received) == 3
    verify = guide_verifier()
    assert all(verify(secret, r.headers, r.body) for r in hooks.received)
    # Done is done: the same task again sends nothing.
    assert webhook_delivery_send(delivery_id=delivery_id) == "done"
    assert len(hooks.received) == 3


def test_a_429_is_retried_when_its_retry_after_says(
    tenant, endpoint, hooks, broker, django_capture_on_commit_callbacks
):
    hooks.script("/hook", Answer(429, (("Retry-After", "90"),)))
    emit(tenant, django_capture_on_commit_callbacks)
    [delivery_id] = broker.take()

    with django_capture_on_commit_callbacks(execute=True):
        assert webhook_delivery_send(delivery_id=delivery_id) == "retry"

    delivery = only_delivery()
    assert delivery.next_attempt_at is not None
    assert delivery.last_attempt_at is not None
    assert delivery.next_attempt_at - delivery.last_attempt_at == timedelta(seconds=90)
    assert broker.sent == [(delivery_id, 90.0)]


def test_a_failing_receiver_is_retried_for_a_day_then_the_delivery_fails_and_the_endpoint_is_disabled(
    tenant, endpoint, hooks, broker, django_capture_on_commit_callbacks
):
    hooks.script("/hook", *[503] * 100)
    emit(tenant, django_capture_on_commit_callbacks)
    [delivery_id] = broker.take()
    delivery = only_delivery()
    written = now = delivery.next_attempt_at
    assert written is not None
    assert now is not None
    outcomes, delays = [], []
    while True:
        outcome = webhook_delivery_send(delivery_id=delivery_id, now=now)
        outcomes.append(outcome)
        delivery.refresh_from_db()
        if outcome != "retry":
            break
        assert delivery.next_attempt_at is not None
        delays.append((delivery.next_attempt_at - now).total_seconds())
        now = delivery.next_attempt_at

    assert outcomes[-1] == "failed"
    assert delivery.status == DeliveryStatus.FAILED
    assert delivery.last_attempt_at is not None
    assert delivery.retry_until is not None
    assert delivery.last_attempt_at <= delivery.retry_until
    assert delivery.retry_until - written == timedelta(hours=24)
    # Exponential: each wait about doubles (jitter takes up to half off) up to an hour.
    for attempt, delay in enumerate(delays, start=1):
        ceiling = min(3600, 2 * 2 ** (attempt - 1))
        assert ceiling / 2 <= delay <= ceiling
    assert max(delays) > 1800
    # Later waits are left to the sweep, not held by the broker.
    assert all(c <= HELD_BY_BROKER.total_seconds() for _, c in broker.sent)
    endpoint.refresh_from_db()
    assert not endpoint.is_active
    assert endpoint.disabled_reason == "Every delivery failed for 24 hours."
    assert len(hooks.received) == len(outcomes)


def test_a_410_disables_the_endpoint_and_it_gets_nothing_more(
    tenant, endpoint, hooks, broker, django_capture_on_commit_callbacks
):
    hooks.script("/hook", 410)
    emit(tenant, django_capture_on_commit_callbacks)
    [delivery_id] = broker.take()

    assert webhook_delivery_send(delivery_id=delivery_id) == "gone"

    endpoint.refresh_from_db()
    assert not endpoint.is_active
    assert endpoint.disabled_reason == GONE
    assert only_delivery().status == DeliveryStatus.FAILED
    emit(tenant, django_capture_on_commit_callbacks)
    assert WebhookDelivery.objects.count() == 1
    assert broker.take() == []
    assert len(hooks.received) == 1


def test_a_calls_events_arrive_in_order_a_later_one_waits_for_an_earlier_retry(
    tenant, endpoint, hooks, broker, django_capture_on_commit_callbacks
):
    capture = django_capture_on_commit_callbacks
    hooks.script("/hook", 500)
    first, second = emit(tenant, capture, n=2, subject="call:7")
    [other] = emit(tenant, capture, subject="call:8")
    first_id, second_id, other_id = broker.take()

    assert webhook_delivery_send(delivery_id=first_id) == "retry"
    assert webhook_delivery_send(delivery_id=second_id) == "waiting"
    assert webhook_delivery_send(delivery_id=other_id) == "succeeded"  # another call
    broker.sent.clear()
    due = WebhookDelivery.objects.get(pk=first_id).next_attempt_at
    with capture(execute=True):
        assert webhook_delivery_send(delivery_id=first_id, now=due) == "succeeded"
    assert broker.take() == [second_id]  # handed over once the earlier one was done
    assert webhook_delivery_send(delivery_id=second_id, now=due) == "succeeded"

    sent = [r.event["id"] for r in hooks.received]
    assert sent == [first.public_id, other.public_id, first.public_id, second.public_id]


def test_a_delivery_handed_over_twice_is_sent_once(
    tenant, endpoint, hooks, broker, django_capture_on_commit_callbacks
):
    emit(tenant, django_capture_on_commit_callbacks)
    [delivery_id] = broker.take()

    outcomes = [webhook_delivery_send(delivery_id=delivery_id) for _ in range(2)]

    assert outcomes == ["succeeded", "done"]
    assert len(hooks.received) == 1


@pytest.mark.django_db(transaction=True)
def test_two_workers_taking_the_same_delivery_at_once_send_it_once(
    tenant, hooks, broker
):
    endpoint, _ = webhook_endpoint_create(
        organization=tenant.organization, url=hooks.url("/hook")
    )
    hooks.script("/hook", Answer(delay=0.5))
    webhook_test_send(endpoint=endpoint)  # commits: the task is handed over
    [delivery_id] = broker.take()
    outcomes = []

    def worker():
        try:
            outcomes.append(webhook_delivery_send(delivery_id=delivery_id))
        finally:
            connection.close()

    threads = [threading.Thread(target=worker) for _ in range(2)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()

    assert sorted(outcomes) == ["leased", "succeeded"] or sorted(outcomes) == [
        "done",
        "succeeded",
    ]
    assert len(hooks.received) == 1


def test_an_event_written_while_the_broker_is_down_is_handed_over_by_the_sweep(
    tenant, endpoint, hooks, broker, django_capture_on_commit_callbacks, caplog
):
    broker.down = True
    [event] = emit(tenant, django_capture_on_commit_callbacks)  # no error: logged
    assert broker.sent == []
    assert "webhook.dispatch_failed" in caplog.text
    broker.down = False
    breaker.succeeded()  # its pause is over: the next publish tries the broker again
    delivery = only_delivery()

    assert webhook_deliveries_sweep(now=delivery.created_at) == 0  # the task's grace
    assert webhook_deliveries_sweep(now=delivery.created_at + timedelta(seconds=6)) == 1

    [delivery_id] = broker.take()
    assert webhook_delivery_send(delivery_id=delivery_id) == "succeeded"
    assert [r.event["id"] for r in hooks.received] == [event.public_id]
    assert webhook_deliveries_sweep(now=timezone.now() + timedelta(hours=1)) == 0


def test_a_delivery_leased_by_a_worker_that_died_is_handed_over_again(
    tenant, endpoint, broker, django_capture_on_commit_callbacks
):
    emit(tenant, django_capture_on_commit_callbacks)
    broker.take()
    now = timezone.now() + timedelta(seconds=10)
    WebhookDelivery.objects.update(leased_until=now + timedelta(seconds=30))

    assert webhook_deliveries_sweep(now=now) == 0
    assert webhook_deliveries_sweep(now=now + timedelta(seconds=31)) == 1


# --- destinations ----------------------------------------------------------------------------------


@pytest.fixture
def dns(monkeypatch):
    table: dict[str, list[str]] = {}
    real = socket.getaddrinfo

    def getaddrinfo(host, port, *args, **kwargs):
        if host not in table:
            return real(host, port, *args, **kwargs)
        return [
            (socket.AF_INET, socket.SOCK_STREAM, 6, "", (address, port))
            for address in table[host]
        ]

    monkeypatch.setattr(socket, "getaddrinfo", getaddrinfo)
    return table


@pytest.mark.parametrize(
    ("url", "message"),
    [
        ("http://hooks.example/in", NOT_HTTPS),
        ("https://10.1.2.3/in", NOT_ALLOWED),
        ("https://127.0.0.1/in", NOT_ALLOWED),
        ("https://169.254.169.254/latest/meta-data", NOT_ALLOWED),
        ("https://[::1]/in", NOT_ALLOWED),
        ("https://[::ffff:192.168.0.1]/in", NOT_ALLOWED),
        (
            "https://intranet.example/in",
            NOT_ALLOWED,
        ),  # a public name, a private address
        ("https://user:pw@hooks.example/in", NOT_ALLOWED),
    ],
)
def test_private_destinations_are_refused(tenant, dns, url, message):
    dns["intranet.example"] = ["10.0.0.8"]
    dns["hooks.example"] = ["93.184.216.34"]
    with pytest.raises(ValidationError) as refused:
        webhook_endpoint_create(organization=tenant.organization, url=url)
    assert refused.value.message_dict == {"url": [message]}
    assert not WebhookEndpoint.objects.exists()


def test_a_name_that_turns_private_after_registration_is_not_posted_to(
    tenant, hooks, broker, dns, settings, django_capture_on_commit_callbacks
):
    dns["hooks.example"] = ["127.0.0.1"]
    webhook_endpoint_create(
        organization=tenant.organization,
        url=hooks.url("/hook", host="hooks.example"),
    )
    settings.WEBHOOK_ALLOWED_ADDRESSES = []  # from now on 127.0.0.1 is what it is
    emit(tenant, django_capture_on_commit_callbacks)
    [delivery_id] = broker.take()

    assert webhook_delivery_send(delivery_id=delivery_id) == "retry"

    assert only_delivery().error == NOT_ALLOWED
    assert hooks.received == []


# --- secrets ---------------------------------------------------------------------------------------


def test_a_rotated_secret_signs_beside_the_new_one_until_the_overlap_ends(
    tenant,
    endpoint,
    secret,
    hooks,
    broker,
    settings,
    django_capture_on_commit_callbacks,
):
    verify = guide_verifier()
    new = webhook_secret_rotate(endpoint=endpoint)
    assert new != secret
    endpoint.refresh_from_db()
    assert new not in endpoint.secret_encrypted
    assert endpoint.secret_prefix == new[:12]
    emit(tenant, django_capture_on_commit_callbacks)
    [delivery_id] = broker.take()
    webhook_delivery_send(delivery_id=delivery_id)
    [during] = hooks.received

    assert len(during.headers["webhook-signature"].split()) == 2
    assert verify(new, during.headers, during.body)
    assert verify(secret, during.headers, during.body)

    webhook_delivery_resend(delivery=only_delivery())
    later = timezone.now() + settings.WEBHOOK_SECRET_OVERLAP + timedelta(seconds=1)
    webhook_delivery_send(delivery_id=delivery_id, now=later)
    after = hooks.received[1]
    assert verify(new, after.headers, after.body)
    assert not verify(secret, after.headers, after.body)


# --- scoping ---------------------------------------------------------------------------------------


def test_an_organizations_endpoint_never_receives_another_organizations_events(
    tenant, other_tenant, hooks, broker, django_capture_on_commit_callbacks
):
    webhook_endpoint_create(organization=tenant.organization, url=hooks.url("/mine"))
    webhook_endpoint_create(
        organization=other_tenant.organization, url=hooks.url("/theirs")
    )
    webhook_endpoint_create(
        organization=tenant.organization,
        url=hooks.url("/narrowed"),
        accounts=[tenant.other_account],
        event_types=["lead_refused"],
    )
    for dealer, vendor in ((tenant, "V-1"), (other_tenant, "V-2")):
        VendorRegistrationFactory(account=dealer.account, vendor_id=vendor)
        catch_all_rule(dealer.account)
    VendorRegistrationFactory(account=tenant.other_account, vendor_id="V-3")

    with django_capture_on_commit_callbacks(execute=True):
        for dealer, vendor, prospect in [
            (tenant, "V-1", "A"),  # accepted, tenant.account
            (tenant, "V-3", "B"),  # no rule, tenant.other_account
            (tenant, "V-9", "C"),  # no vendor: no account
            (other_tenant, "V-2", "D"),
            (other_tenant, "V-1", "E"),  # another organization's vendor: not found
        ]:
            dealer.client().post(
                "/api/nl", {"xml": adf(prospect_id=prospect, vendor_id=vendor)}
            )
    broker.deliver(django_capture_on_commit_callbacks)

    def got(path):
        return sorted(
            (e["type"], e["lead"]["prospect_id"], (e["account"] or {}).get("id"))
            for e in hooks.events(path)
            if "lead" in e
        )

    def consents(path):
        return sorted(
            (e["type"], e["consent"]["reference"][:4], e["account"]["id"])
            for e in hooks.events(path)
            if "consent" in e
        )

    assert got("/mine") == [
        ("lead_received", "A", tenant.account.pk),
        ("lead_refused", "B", tenant.other_account.pk),
        ("lead_refused", "C", None),
    ]
    assert got("/theirs") == [
        ("lead_received", "D", other_tenant.account.pk),
        ("lead_refused", "E", None),
    ]
    assert got("/narrowed") == [("lead_refused", "B", tenant.other_account.pk)]
    # The accepted leads' consent to calls, each to its own organization only.
    assert consents("/mine") == [("consent_given", "lead", tenant.account.pk)]
    assert consents("/theirs") == [("consent_given", "lead", other_tenant.account.pk)]
    assert consents("/narrowed") == []


def test_accounts_of_another_organization_cannot_narrow_an_endpoint(tenant, hooks):
    with pytest.raises(ValidationError):
        webhook_endpoint_create(
            organization=tenant.organization,
            url=hooks.url("/hook"),
            accounts=[AccountFactory()],
        )


# --- support's tools -------------------------------------------------------------------------------


def test_replay_since_sends_again_what_a_disabled_endpoint_missed_in_order(
    tenant, endpoint, hooks, broker, django_capture_on_commit_callbacks
):
    capture = django_capture_on_commit_callbacks
    [before] = emit(tenant, capture, subject="call:1")
    broker.deliver(capture)
    webhook_endpoint_update(
        endpoint=endpoint,
        url=endpoint.url,
        description="",
        accounts=[],
        event_types=[],
        is_active=False,
    )
    missed = emit(tenant, capture, n=2, subject="call:2")
    assert broker.take() == []

    with capture(execute=True):
        webhook_endpoint_update(
            endpoint=endpoint,
            url=endpoint.url,
            description="",
            accounts=[],
            event_types=[],
            is_active=True,
        )
        count = webhook_endpoint_replay(endpoint=endpoint, since=before.created_at)
    broker.deliver(capture)

    assert count == 3
    assert [r.event["id"] for r in hooks.received] == [
        before.public_id,
        before.public_id,
        *(e.public_id for e in missed),
    ]


def test_events_past_their_retention_are_pruned_unless_a_delivery_still_waits(
    tenant, endpoint, hooks, broker, settings, django_capture_on_commit_callbacks
):
    capture = django_capture_on_commit_callbacks
    sent, waiting = emit(tenant, capture, n=2, subject="")
    first = WebhookDelivery.objects.get(event=sent)
    assert webhook_delivery_send(delivery_id=first.pk) == "succeeded"
    later = timezone.now() + settings.WEBHOOK_EVENT_RETENTION + timedelta(seconds=1)

    assert webhook_events_prune(now=timezone.now()) == 0
    assert webhook_events_prune(now=later) == 1

    assert list(WebhookDelivery.objects.values_list("event_id", flat=True)) == [
        waiting.pk
    ]
