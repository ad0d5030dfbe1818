"""Handing deliveries to the broker: on commit, the next of a subject, the sweep of what
the broker never got, resending, replay, and pruning old events.

The delivery task is handed to the broker once the transaction that wrote the delivery
commits; the sweep hands over whatever the broker never got.
"""

from __future__ import annotations

import logging
from datetime import datetime, timedelta

from django.conf import settings
from django.db import transaction
from django.db.models import Exists, OuterRef, Q, QuerySet
from django.utils import timezone

from core.handover import HandOver, to_hand_over
from webhooks.models import (
    DeliveryStatus,
    EventType,
    WebhookDelivery,
    WebhookEndpoint,
    WebhookEvent,
)

log = logging.getLogger(__name__)
# A delivery to a worker, now or on commit; with the broker down the sweep hands it over
# later. Retries due within core.handover.HELD_BY_BROKER are handed over with a countdown;
# later ones are left to the sweep.
delivery_hand_over = HandOver(
    task="webhooks.tasks.webhook_deliver_task",
    key="delivery_id",
    event="webhook.dispatch_failed",
    log=log,
    waiting=lambda delivery_id: WebhookDelivery.objects.filter(
        pk=delivery_id, status=DeliveryStatus.PENDING
    ),
)

# The sweep takes a delivery due this long ago (the hand-over on commit has it before);
# support's tools take deliveries due this soon.
DUE_GRACE = timedelta(seconds=5)


def blocked_by_earlier() -> Exists:
    """An earlier event of the same subject still pending for the same endpoint."""
    return Exists(
        WebhookDelivery.objects.filter(
            endpoint_id=OuterRef("endpoint_id"),
            status=DeliveryStatus.PENDING,
            event__subject=OuterRef("event__subject"),
            event_id__lt=OuterRef("event_id"),
        ).exclude(event__subject="")
    )


def enqueue_next_of_subject(delivery: WebhookDelivery) -> None:
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
        delivery_hand_over(following)


def due_deliveries(now: datetime) -> QuerySet[WebhookDelivery]:
    return (
        WebhookDelivery.objects.filter(
            status=DeliveryStatus.PENDING,
            endpoint__is_active=True,
            next_attempt_at__lte=now - DUE_GRACE,
        )
        .filter(Q(leased_until__isnull=True) | Q(leased_until__lt=now))
        .exclude(blocked_by_earlier())
    )


def enqueue_due(
    deliveries: QuerySet[WebhookDelivery], endpoint_id: int | None = None
) -> int:
    """Hand the broker ``deliveries`` (of ``endpoint_id``, if given), oldest event first."""
    if endpoint_id is not None:
        deliveries = deliveries.filter(endpoint_id=endpoint_id)
    count = 0
    for delivery_id in (
        deliveries.order_by("event_id").values_list("pk", flat=True).iterator()
    ):
        delivery_hand_over(delivery_id)
        count += 1
    return count


def webhook_deliveries_sweep(*, now: datetime | None = None) -> int:
    """Hand the broker every due delivery it does not hold: those written while it was
    down, retries left to the sweep, and leases of workers that died; never one whose
    hand-over is merely waiting in the queue (core.handover). Returns the count."""
    now = now or timezone.now()
    # A lease that ran out is a worker that died mid-delivery: its hand-over was lost.
    lost = to_hand_over(now, since="next_attempt_at") | Q(leased_until__lt=now)
    return enqueue_due(due_deliveries(now).filter(lost))


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
        delivery_hand_over.on_commit(delivery.pk)


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
            delivery_hand_over.on_commit(delivery.pk)
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
