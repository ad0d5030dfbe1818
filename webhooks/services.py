"""Outbound webhooks: endpoints, the outbox of events, and their signed delivery.

An event is written in the transaction of the change it reports, with one delivery row per
subscribed endpoint; the delivery task is handed to the broker once that transaction
commits, and the sweep hands over whatever the broker never got. Delivery is at least once
(the receiver de-duplicates on the event id), one subject's events (a call's) in order.
A worker leases a delivery before sending it, so a task delivered twice sends once.
"""

from __future__ import annotations

import json
import logging
import random
import secrets
import time
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from http.client import HTTPException
from typing import Any, overload

from django.conf import settings
from django.core.exceptions import ValidationError
from django.core.serializers.json import DjangoJSONEncoder
from django.db import transaction
from django.db.models import Exists, OuterRef, Q, QuerySet
from django.utils import timezone

from accounts.models import Account, Organization
from config.celery import publish_or_leave_to_sweep
from core.logging import log_event
from core.outbound import (
    Deadline,
    DestinationError,
    destination_vet,
    pinned_https,
)
from webhooks.models import (
    SUBSCRIBABLE,
    DeliveryStatus,
    EventType,
    WebhookDelivery,
    WebhookEndpoint,
    WebhookEvent,
)
from webhooks.signing import (
    secret_decrypt,
    secret_encrypt,
    secret_new,
    secret_prefix,
    signed_headers,
)

log = logging.getLogger(__name__)

NOT_HTTPS = "The webhook URL must be an HTTPS URL."
NOT_ALLOWED = (
    "The webhook URL's address is not allowed (private, loopback or link-local)."
)
UNRESOLVABLE = "The webhook URL's host name does not resolve."
_REFUSALS = {
    "not_https": NOT_HTTPS,
    "not_allowed": NOT_ALLOWED,
    "unresolvable": UNRESOLVABLE,
}
GONE = "The receiver answered 410 Gone."
TIMED_OUT = "Timed out."
# How much of a receiver's answer is kept for support to read.
EXCERPT_BYTES = 1024
# Retries due within this are handed to the broker with a countdown; later ones to the sweep.
HELD_BY_BROKER = timedelta(minutes=2)
# The sweep leaves a delivery this long to the task handed over on commit.
SWEEP_GRACE = timedelta(seconds=5)
USER_AGENT = "leadcall-webhooks/1"


@overload
def iso(at: datetime) -> str: ...
@overload
def iso(at: None) -> None: ...
def iso(at: datetime | None) -> str | None:
    """ISO 8601 in UTC with a Z, to the second, as every moment in an event is written."""
    if at is None:
        return None
    return at.astimezone(UTC).replace(microsecond=0).isoformat()[:-6] + "Z"


# --- endpoints ----------------------------------------------------------------------------------


def webhook_url_check(*, url: str) -> None:
    """Refuse a URL the service may not post to: not HTTPS, or an internal address (plain
    HTTP to loopback only where ``WEBHOOK_ALLOW_LOCAL_HTTP`` is on: make run's settings)."""
    try:
        destination_vet(
            url,
            deadline=Deadline(5.0),
            allowed=settings.WEBHOOK_ALLOWED_ADDRESSES,
            local_http=settings.WEBHOOK_ALLOW_LOCAL_HTTP,
        )
    except DestinationError as error:
        raise ValidationError({"url": [_REFUSALS[error.reason]]}) from None
    except OSError:
        raise ValidationError({"url": [UNRESOLVABLE]}) from None


def _check_accounts(accounts: Iterable[Account], organization_id: int) -> list[Account]:
    chosen = list(accounts)
    if any(account.organization_id != organization_id for account in chosen):
        raise ValidationError({"accounts": ["Choose accounts of the organization."]})
    return chosen


def _check_event_types(event_types: Iterable[str]) -> list[str]:
    chosen = list(dict.fromkeys(event_types))
    unknown = [t for t in chosen if t not in SUBSCRIBABLE]
    if unknown:
        raise ValidationError({"event_types": [f"Unknown event types: {unknown}."]})
    return chosen


@transaction.atomic
def webhook_endpoint_create(
    *,
    organization: Organization,
    url: str,
    description: str = "",
    accounts: Iterable[Account] = (),
    event_types: Iterable[str] = (),
    is_active: bool = True,
) -> tuple[WebhookEndpoint, str]:
    """Register an endpoint; returns it and its signing secret, which is never shown again."""
    webhook_url_check(url=url)
    accounts = _check_accounts(accounts, organization.pk)
    secret = secret_new()
    endpoint = WebhookEndpoint.objects.create(
        organization=organization,
        url=url,
        description=description,
        is_active=is_active,
        event_types=_check_event_types(event_types),
        secret_encrypted=secret_encrypt(secret),
        secret_prefix=secret_prefix(secret),
    )
    endpoint.accounts.set(accounts)
    return endpoint, secret


@transaction.atomic
def webhook_endpoint_update(
    *,
    endpoint: WebhookEndpoint,
    url: str,
    description: str,
    accounts: Iterable[Account],
    event_types: Iterable[str],
    is_active: bool,
) -> WebhookEndpoint:
    """Change an endpoint's URL, filters or active flag (re-activating clears a disable)."""
    if url != endpoint.url:
        webhook_url_check(url=url)
    accounts = _check_accounts(accounts, endpoint.organization_id)
    endpoint.url, endpoint.description = url, description
    endpoint.event_types = _check_event_types(event_types)
    if is_active and not endpoint.is_active:
        endpoint.disabled_at, endpoint.disabled_reason = None, ""
        endpoint.failing_since = None
        transaction.on_commit(
            # Due now, without the sweep's grace: re-activation sends at once.
            lambda: _enqueue_due(_due(timezone.now() + SWEEP_GRACE), endpoint.pk),
            robust=True,
        )
    endpoint.is_active = is_active
    endpoint.save(
        update_fields=[
            "url",
            "description",
            "event_types",
            "is_active",
            "disabled_at",
            "disabled_reason",
            "failing_since",
        ]
    )
    endpoint.accounts.set(accounts)
    return endpoint


def webhook_endpoint_delete(*, endpoint: WebhookEndpoint) -> None:
    """Remove an endpoint with its deliveries (the events stay for other endpoints)."""
    WebhookEndpoint.objects.filter(pk=endpoint.pk).delete()


def webhook_secret_rotate(*, endpoint: WebhookEndpoint) -> str:
    """A new signing secret, returned once; the old one still signs for the overlap
    (``WEBHOOK_SECRET_OVERLAP``), so receivers can switch without losing deliveries."""
    secret = secret_new()
    with transaction.atomic():
        endpoint = WebhookEndpoint.objects.select_for_update().get(pk=endpoint.pk)
        endpoint.previous_secret_encrypted = endpoint.secret_encrypted
        endpoint.previous_secret_expires_at = (
            timezone.now() + settings.WEBHOOK_SECRET_OVERLAP
        )
        endpoint.secret_encrypted = secret_encrypt(secret)
        endpoint.secret_prefix = secret_prefix(secret)
        endpoint.save(
            update_fields=[
                "previous_secret_encrypted",
                "previous_secret_expires_at",
                "secret_encrypted",
                "secret_prefix",
            ]
        )
    return secret


def endpoint_secrets(endpoint: WebhookEndpoint, *, at: datetime) -> list[str]:
    """The secrets a delivery is signed with now: the current one, and the previous one
    while its overlap lasts."""
    found = [secret_decrypt(endpoint.secret_encrypted)]
    expires = endpoint.previous_secret_expires_at
    if endpoint.previous_secret_encrypted and expires and expires > at:
        found.append(secret_decrypt(endpoint.previous_secret_encrypted))
    return found


def _endpoint_disable(endpoint_id: int, *, reason: str, at: datetime) -> None:
    changed = WebhookEndpoint.objects.filter(pk=endpoint_id, is_active=True).update(
        is_active=False, disabled_at=at, disabled_reason=reason[:200]
    )
    if changed:
        log_event(
            log,
            "webhook.endpoint_disabled",
            level=logging.WARNING,
            endpoint_id=endpoint_id,
            reason=reason,
        )


# --- events ----------------------------------------------------------------------------------------


def _subscribed(endpoint: WebhookEndpoint, type: str, account_id: int | None) -> bool:
    if endpoint.event_types and type not in endpoint.event_types:
        return False
    accounts = {account.pk for account in endpoint.accounts.all()}
    return not accounts or account_id in accounts


def webhook_event_emit(
    *,
    type: str,
    organization_id: int,
    account: Account | None,
    objects: dict[str, Any] | Callable[[], dict[str, Any]],
    subject: str = "",
) -> WebhookEvent | None:
    """Write an event and its deliveries in the caller's transaction; each delivery is
    handed to the broker once it commits. Nothing is written (and ``objects``, when a
    callable, is never built) for an organization without endpoints."""
    endpoints = list(
        WebhookEndpoint.objects.filter(organization_id=organization_id)
        .prefetch_related("accounts")
        .order_by("id")
    )
    if not endpoints:
        return None
    account_id = account.pk if account else None
    return _event_write(
        type=type,
        organization_id=organization_id,
        account=account,
        objects=objects() if callable(objects) else objects,
        subject=subject,
        endpoints=[
            e for e in endpoints if e.is_active and _subscribed(e, type, account_id)
        ],
    )


def _event_write(
    *,
    type: str,
    organization_id: int,
    account: Account | None,
    objects: dict[str, Any],
    subject: str,
    endpoints: list[WebhookEndpoint],
) -> WebhookEvent:
    created = timezone.now()
    public_id = f"evt_{secrets.token_hex(12)}"
    body = {
        "type": type,
        "id": public_id,
        "created": iso(created),
        "account": {"id": account.pk, "name": account.name} if account else None,
        **objects,
    }
    event = WebhookEvent.objects.create(
        public_id=public_id,
        type=type,
        organization_id=organization_id,
        account=account,
        subject=subject,
        body=json.dumps(body, cls=DjangoJSONEncoder),
    )
    deliveries = WebhookDelivery.objects.bulk_create(
        WebhookDelivery(
            event=event,
            endpoint=endpoint,
            next_attempt_at=created,
            retry_until=created + settings.WEBHOOK_RETRY_WINDOW,
        )
        for endpoint in endpoints
    )
    for delivery in deliveries:
        _enqueue_on_commit(delivery.pk)
    return event


def webhook_test_send(*, endpoint: WebhookEndpoint) -> WebhookEvent:
    """Send a ``test_event`` to this endpoint alone, as support's "send test event" button."""
    return _event_write(
        type=EventType.TEST_EVENT,
        organization_id=endpoint.organization_id,
        account=None,
        objects={"message": "A test event sent from the service's admin."},
        subject="",
        endpoints=[endpoint],
    )


# --- delivery ------------------------------------------------------------------------------------


@dataclass(frozen=True)
class Response:
    status: int | None
    ms: int
    excerpt: str = ""
    error: str = ""
    retry_after: float | None = None


def _blocked_by_earlier() -> Exists:
    """An earlier event of the same subject still pending for the same endpoint."""
    return Exists(
        WebhookDelivery.objects.filter(
            endpoint_id=OuterRef("endpoint_id"),
            status=DeliveryStatus.PENDING,
            event__subject=OuterRef("event__subject"),
            event_id__lt=OuterRef("event_id"),
        ).exclude(event__subject="")
    )


def webhook_delivery_send(*, delivery_id: int, now: datetime | None = None) -> str:
    """Send one due delivery, once: a delivery already sent, leased by another worker, not
    due, or waiting for an earlier event of its subject is left alone. Returns what happened."""
    now = now or timezone.now()
    with transaction.atomic():
        delivery = (
            WebhookDelivery.objects.select_for_update(of=("self",))
            .select_related("event", "endpoint")
            .filter(pk=delivery_id)
            .annotate(blocked=_blocked_by_earlier())
            .first()
        )
        if delivery is None or delivery.status != DeliveryStatus.PENDING:
            return "done"
        if not delivery.endpoint.is_active:
            return "endpoint_inactive"
        if delivery.leased_until and delivery.leased_until > now:
            return "leased"
        if delivery.next_attempt_at and delivery.next_attempt_at > now:
            return "not_due"
        if delivery.blocked:  # type: ignore[attr-defined]
            return "waiting"
        delivery.leased_until = now + timedelta(
            seconds=settings.WEBHOOK_TIMEOUT_SECONDS + 30
        )
        delivery.save(update_fields=["leased_until"])
    response = _post(delivery, at=now)
    return _record(delivery, response, now=now)


def _post(delivery: WebhookDelivery, *, at: datetime) -> Response:
    """POST the event's body, signed, to the vetted address; never follows a redirect."""
    endpoint, event = delivery.endpoint, delivery.event
    body = event.body.encode()
    headers = {
        "Content-Type": "application/json",
        "User-Agent": USER_AGENT,
        **signed_headers(
            endpoint_secrets(endpoint, at=at),
            event_id=event.public_id,
            timestamp=int(time.time()),
            body=body,
        ),
    }
    started = time.perf_counter()

    def elapsed() -> int:
        return int((time.perf_counter() - started) * 1000)

    deadline = Deadline(settings.WEBHOOK_TIMEOUT_SECONDS)
    try:
        target = destination_vet(
            endpoint.url,
            deadline=deadline,
            allowed=settings.WEBHOOK_ALLOWED_ADDRESSES,
            local_http=settings.WEBHOOK_ALLOW_LOCAL_HTTP,
        )
        with pinned_https(
            target, deadline=deadline, cafile=settings.WEBHOOK_CA_BUNDLE
        ) as connection:
            connection.request(
                "POST",
                target.path,
                body=body,
                headers={"Host": target.host_header, **headers},
            )
            with connection.getresponse() as answer:
                excerpt = answer.read(EXCERPT_BYTES).decode("utf-8", "replace")
                status, retry_after = answer.status, answer.getheader("Retry-After")
    except DestinationError as error:
        return Response(None, elapsed(), error=_REFUSALS[error.reason])
    except (HTTPException, OSError, ValueError) as error:
        if isinstance(error, TimeoutError) or deadline.expired:
            return Response(None, elapsed(), error=TIMED_OUT)
        return Response(None, elapsed(), error=f"{type(error).__name__}: {error}"[:200])
    return Response(status, elapsed(), excerpt, retry_after=_seconds(retry_after))


def _seconds(retry_after: str | None) -> float | None:
    """Retry-After in seconds (delta-seconds; an HTTP date is read too)."""
    if not retry_after:
        return None
    if retry_after.strip().isdecimal():
        return float(retry_after)
    from email.utils import parsedate_to_datetime

    try:
        when = parsedate_to_datetime(retry_after)
    except (TypeError, ValueError):
        return None
    return max(0.0, (when - timezone.now()).total_seconds())


def backoff(attempts: int) -> timedelta:
    """Exponential backoff with jitter: about base x 2^(attempts-1), capped, times 0.5..1."""
    ceiling = min(
        settings.WEBHOOK_BACKOFF_MAX_SECONDS,
        settings.WEBHOOK_BACKOFF_BASE_SECONDS * 2 ** min(attempts - 1, 30),
    )
    return timedelta(seconds=ceiling * random.uniform(0.5, 1.0))


def _record(delivery: WebhookDelivery, response: Response, *, now: datetime) -> str:
    """Store an attempt's result and decide what follows: done, retry later, or give up."""
    delivery.attempts += 1
    delivery.last_attempt_at = now
    delivery.response_status = response.status
    delivery.response_ms = response.ms
    delivery.response_excerpt = response.excerpt
    delivery.error = response.error
    delivery.leased_until = None
    endpoint = delivery.endpoint
    succeeded = response.status is not None and 200 <= response.status < 300
    with transaction.atomic():
        if succeeded:
            outcome = "succeeded"
            delivery.status = DeliveryStatus.SUCCEEDED
            delivery.delivered_at = now
            delivery.next_attempt_at = None
            WebhookEndpoint.objects.filter(
                pk=endpoint.pk, failing_since__isnull=False
            ).update(failing_since=None)  # no write (nor row lock) while all is well
        elif response.status == 410:
            outcome = "gone"
            delivery.status = DeliveryStatus.FAILED
            delivery.next_attempt_at = None
            _endpoint_disable(endpoint.pk, reason=GONE, at=now)
        else:
            outcome = _failed(delivery, response, now=now)
        delivery.save(
            update_fields=[
                "attempts",
                "last_attempt_at",
                "response_status",
                "response_ms",
                "response_excerpt",
                "error",
                "leased_until",
                "status",
                "delivered_at",
                "next_attempt_at",
            ]
        )
        if delivery.status != DeliveryStatus.PENDING:
            transaction.on_commit(
                lambda: _enqueue_next_of_subject(delivery), robust=True
            )
    log_event(
        log,
        "webhook.attempt",
        level=logging.INFO if succeeded else logging.WARNING,
        delivery_id=delivery.pk,
        event_id=delivery.event.public_id,
        endpoint_id=endpoint.pk,
        attempt=delivery.attempts,
        status=response.status,
        ms=response.ms,
        error=response.error,
        outcome=outcome,
    )
    return outcome


def _failed(delivery: WebhookDelivery, response: Response, *, now: datetime) -> str:
    """A failed attempt: retry with backoff (or when a 429 says), give up after the window.
    An endpoint failing for ``WEBHOOK_DISABLE_AFTER``, or through a whole delivery's retry
    window, is disabled."""
    endpoint = WebhookEndpoint.objects.select_for_update().get(pk=delivery.endpoint_id)
    if endpoint.failing_since is None:
        endpoint.failing_since = now
        endpoint.save(update_fields=["failing_since"])
    delay = backoff(delivery.attempts)
    if response.status == 429 and response.retry_after is not None:
        delay = timedelta(
            seconds=min(response.retry_after, settings.WEBHOOK_BACKOFF_MAX_SECONDS)
        )
    given_up = now + delay > delivery.retry_until
    window_start = delivery.retry_until - settings.WEBHOOK_RETRY_WINDOW
    if endpoint.failing_since <= now - settings.WEBHOOK_DISABLE_AFTER or (
        given_up and endpoint.failing_since <= window_start
    ):
        hours = settings.WEBHOOK_DISABLE_AFTER.total_seconds() / 3600
        _endpoint_disable(
            endpoint.pk, reason=f"Every delivery failed for {hours:g} hours.", at=now
        )
    if given_up:
        delivery.status = DeliveryStatus.FAILED
        delivery.next_attempt_at = None
        return "failed"
    delivery.next_attempt_at = now + delay
    if delay <= HELD_BY_BROKER:
        _enqueue_on_commit(delivery.pk, countdown=delay.total_seconds())
    return "retry"


# --- handing deliveries to the broker --------------------------------------------------------------


def _enqueue_on_commit(delivery_id: int, countdown: float | None = None) -> None:
    transaction.on_commit(lambda: _enqueue(delivery_id, countdown), robust=True)


def _enqueue(delivery_id: int, countdown: float | None = None) -> None:
    """Hand a delivery to a worker; with the broker down the sweep hands it over later."""
    from webhooks.tasks import webhook_deliver_task

    publish_or_leave_to_sweep(
        webhook_deliver_task,
        kwargs={"delivery_id": delivery_id},
        event="webhook.dispatch_failed",
        log=log,
        countdown=countdown,
    )


def _enqueue_next_of_subject(delivery: WebhookDelivery) -> None:
    """The delivery of the subject's next event, which waited for this one."""
    if not delivery.event.subject:
        return
    following = (
        WebhookDelivery.objects.filter(
            endpoint_id=delivery.endpoint_id,
            status=DeliveryStatus.PENDING,
            event__subject=delivery.event.subject,
            event_id__gt=delivery.event_id,
        )
        .order_by("event_id")
        .values_list("pk", flat=True)
        .first()
    )
    if following is not None:
        _enqueue(following)


def _due(now: datetime) -> QuerySet[WebhookDelivery]:
    return (
        WebhookDelivery.objects.filter(
            status=DeliveryStatus.PENDING,
            endpoint__is_active=True,
            next_attempt_at__lte=now - SWEEP_GRACE,
        )
        .filter(Q(leased_until__isnull=True) | Q(leased_until__lt=now))
        .exclude(_blocked_by_earlier())
    )


def _enqueue_due(
    deliveries: QuerySet[WebhookDelivery], endpoint_id: int | None = None
) -> int:
    """Hand the broker ``deliveries`` (of ``endpoint_id``, if given), oldest event first."""
    if endpoint_id is not None:
        deliveries = deliveries.filter(endpoint_id=endpoint_id)
    count = 0
    for delivery_id in (
        deliveries.order_by("event_id").values_list("pk", flat=True).iterator()
    ):
        _enqueue(delivery_id)
        count += 1
    return count


def webhook_deliveries_sweep(*, now: datetime | None = None) -> int:
    """Hand the broker every due delivery it does not hold: those written while it was
    down, retries left to the sweep, and leases of workers that died. Returns the count."""
    return _enqueue_due(_due(now or timezone.now()))


def webhook_delivery_resend(*, delivery: WebhookDelivery) -> None:
    """Send a delivery again (support's "send again"), whatever became of it."""
    now = timezone.now()
    with transaction.atomic():
        WebhookDelivery.objects.filter(pk=delivery.pk).update(
            status=DeliveryStatus.PENDING,
            next_attempt_at=now,
            retry_until=now + settings.WEBHOOK_RETRY_WINDOW,
            leased_until=None,
        )
        _enqueue_on_commit(delivery.pk)


def webhook_endpoint_replay(*, endpoint: WebhookEndpoint, since: datetime) -> int:
    """Send the endpoint every event it subscribes to since ``since`` again, in order (the
    ones it was never sent too, e.g. while it was disabled). Returns how many."""
    now = timezone.now()
    count = 0
    endpoint = WebhookEndpoint.objects.get(pk=endpoint.pk)  # its filters as stored now
    # The endpoint's filters (``_subscribed``) in SQL: only its events are read, as ids.
    events = WebhookEvent.objects.filter(
        organization_id=endpoint.organization_id, created_at__gte=since
    ).exclude(type=EventType.TEST_EVENT)
    if endpoint.event_types:
        events = events.filter(type__in=endpoint.event_types)
    if accounts := list(endpoint.accounts.values_list("pk", flat=True)):
        events = events.filter(account_id__in=accounts)
    for event_id in events.order_by("id").values_list("pk", flat=True).iterator():
        with transaction.atomic():
            delivery, _ = WebhookDelivery.objects.update_or_create(
                event_id=event_id,
                endpoint=endpoint,
                defaults={
                    "status": DeliveryStatus.PENDING,
                    "next_attempt_at": now,
                    "retry_until": now + settings.WEBHOOK_RETRY_WINDOW,
                    "leased_until": None,
                },
            )
            _enqueue_on_commit(delivery.pk)
        count += 1
    return count


def webhook_events_prune(*, now: datetime | None = None) -> int:
    """Delete events (and their deliveries) older than ``WEBHOOK_EVENT_RETENTION`` that
    nothing waits to deliver; returns how many. Replay reaches back as far as this."""
    now = now or timezone.now()
    old = WebhookEvent.objects.filter(
        created_at__lt=now - settings.WEBHOOK_EVENT_RETENTION
    ).exclude(deliveries__status=DeliveryStatus.PENDING)
    count = 0
    while ids := list(old.values_list("pk", flat=True)[:1000]):
        WebhookEvent.objects.filter(pk__in=ids).delete()
        count += len(ids)
    return count
