"""Reads of webhook state for support's overview."""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime, timedelta

from django.db.models import Count, Q

from webhooks.models import DeliveryStatus, WebhookDelivery, WebhookEndpoint


@dataclass(frozen=True)
class WebhooksSummary:
    disabled: int  # endpoints not active (a 410, or failing for a day, or support)
    failing: int  # active endpoints whose latest attempts failed
    failed: int  # deliveries given up in the last 24 hours
    waiting: int  # deliveries not yet delivered


def webhooks_summary(*, now: datetime) -> WebhooksSummary:
    """Counts for the overview, in two queries."""
    endpoints = WebhookEndpoint.objects.aggregate(
        disabled=Count("pk", filter=Q(is_active=False)),
        failing=Count("pk", filter=Q(is_active=True, failing_since__isnull=False)),
    )
    deliveries = WebhookDelivery.objects.filter(
        Q(status=DeliveryStatus.PENDING)
        | Q(
            status=DeliveryStatus.FAILED, last_attempt_at__gte=now - timedelta(hours=24)
        )
    ).aggregate(
        failed=Count("pk", filter=Q(status=DeliveryStatus.FAILED)),
        waiting=Count("pk", filter=Q(status=DeliveryStatus.PENDING)),
    )
    return WebhooksSummary(**endpoints, **deliveries)
