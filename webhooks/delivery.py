"""Sending a delivery: lease it, post it signed, record the answer, and decide what follows
(done, retry with backoff, give up, disable the endpoint).

Delivery is at least once (the receiver de-duplicates on the event id), one subject's
events (a call's) in order. A worker leases a delivery before sending it, so a task
delivered twice sends once.
"""

from __future__ import annotations

import logging
import random
import time
from dataclasses import dataclass
from datetime import datetime, timedelta
from http.client import HTTPException

from django.conf import settings
from django.db import transaction
from django.utils import timezone

from core.handover import HELD_BY_BROKER
from core.logging import log_event
from core.outbound import Deadline, DestinationError, destination_vet, pinned_https
from webhooks.endpoints import REFUSALS, endpoint_disable, endpoint_secrets
from webhooks.models import DeliveryStatus, WebhookDelivery, WebhookEndpoint
from webhooks.outbox import (
    blocked_by_earlier,
    delivery_hand_over,
    enqueue_next_of_subject,
)
from webhooks.signing import signed_headers

log = logging.getLogger(__name__)

GONE = "The receiver answered 410 Gone."
TIMED_OUT = "Timed out."
# How much of a receiver's answer is kept for support to read.
EXCERPT_BYTES = 1024
USER_AGENT = "leadcall-webhooks/1"


@dataclass(frozen=True)
class Response:
    status: int | None
    ms: int
    excerpt: str = ""
    error: str = ""
    retry_after: float | None = None


def webhook_delivery_send(*, delivery_id: int, now: datetime | None = None) -> str:
    """Send one due delivery, once: a delivery already sent, leased by another worker, not
    due, or waiting for an earlier event of its subject is left alone. Returns what happened."""
    now = now or timezone.now()
    with transaction.atomic():
        delivery = (
            WebhookDelivery.objects.select_for_update(of=("self",))
            .select_related("event", "endpoint")
            .filter(pk=delivery_id)
            .annotate(blocked=blocked_by_earlier())
            .first()
        )
        if delivery is None or delivery.status != DeliveryStatus.PENDING:
            return "done"
        if delivery.leased_until and delivery.leased_until > now:
            return "leased"
        # Not sent now: no task holds it any more, so its hand-over mark goes (the sweep,
        # an endpoint enabled again or the event before it hands it over when it may go).
        not_now = (
            "endpoint_inactive"
            if not delivery.endpoint.is_active
            else "not_due"
            if delivery.next_attempt_at and delivery.next_attempt_at > now
            else "waiting"
            if delivery.blocked  # type: ignore[attr-defined]
            else ""
        )
        if not_now:
            WebhookDelivery.objects.filter(pk=delivery.pk).update(dispatched_at=None)
            return not_now
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
        return Response(None, elapsed(), error=REFUSALS[error.reason])
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
            endpoint_disable(endpoint.pk, reason=GONE, at=now)
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
                "dispatched_at",
            ]
        )
        if delivery.status != DeliveryStatus.PENDING:
            transaction.on_commit(
                lambda: enqueue_next_of_subject(delivery), robust=True
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
        endpoint_disable(
            endpoint.pk, reason=f"Every delivery failed for {hours:g} hours.", at=now
        )
    if given_up:
        delivery.status = DeliveryStatus.FAILED
        delivery.next_attempt_at = None
        return "failed"
    delivery.next_attempt_at = now + delay
    # A later retry is left to the sweep: no task holds it (its mark goes on saving).
    delivery.dispatched_at = None
    if delay <= HELD_BY_BROKER:
        delivery_hand_over.on_commit(delivery.pk, countdown=delay.total_seconds())
    return "retry"
