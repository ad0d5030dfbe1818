"""Webhook events: written in the transaction of the change they report, with one
delivery row per subscribed endpoint, each handed to the broker once that commits."""

from __future__ import annotations

import json
import secrets
from collections.abc import Callable
from datetime import UTC, datetime
from typing import Any, overload

from django.conf import settings
from django.core.serializers.json import DjangoJSONEncoder
from django.utils import timezone

from accounts.models import Account
from core.outbox import effect_guarded
from webhooks.endpoints import organization_subscriptions
from webhooks.models import EventType, WebhookDelivery, WebhookEndpoint, WebhookEvent
from webhooks.outbox import delivery_hand_over


@overload
def iso(at: datetime) -> str: ...
@overload
def iso(at: None) -> None: ...
def iso(at: datetime | None) -> str | None:
    """ISO 8601 in UTC with a Z, to the second, as every moment in an event is written."""
    if at is None:
        return None
    return at.astimezone(UTC).replace(microsecond=0).isoformat()[:-6] + "Z"


def webhook_event_emit(
    *,
    type: str,
    organization_id: int,
    account: Account | None,
    objects: dict[str, Any] | Callable[[], dict[str, Any]],
    subject: str = "",
    failed_as: dict[str, Any] | None = None,
) -> WebhookEvent | None:
    """Write an event and its deliveries in the caller's transaction; each delivery is
    handed to the broker once it commits. Nothing is written (and ``objects``, when a
    callable, is never built) for an organization without endpoints. With ``failed_as``
    (``kind``, ``key``, ``about`` and the params its handler takes) an event that cannot
    be built or written fails alone, as that effect (``core.outbox.effect_guarded``),
    and never the change it reports."""
    endpoints = organization_subscriptions(organization_id=organization_id)
    if not endpoints:
        return None
    account_id = account.pk if account else None

    def write() -> WebhookEvent:
        return _event_write(
            type=type,
            organization_id=organization_id,
            account=account,
            objects=objects() if callable(objects) else objects,
            subject=subject,
            endpoint_ids=[
                e.endpoint_id for e in endpoints if e.wants(type, account_id)
            ],
        )

    if failed_as is None:
        return write()
    return effect_guarded(build=write, **failed_as)


def _event_write(
    *,
    type: str,
    organization_id: int,
    account: Account | None,
    objects: dict[str, Any],
    subject: str,
    endpoint_ids: list[int],
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
            endpoint_id=endpoint_id,
            next_attempt_at=created,
            retry_until=created + settings.WEBHOOK_RETRY_WINDOW,
        )
        for endpoint_id in endpoint_ids
    )
    for delivery in deliveries:
        delivery_hand_over.on_commit(delivery.pk)
    return event


def webhook_test_send(*, endpoint: WebhookEndpoint) -> WebhookEvent:
    """Send a ``test_event`` to this endpoint alone, as support's "send test event" button."""
    return _event_write(
        type=EventType.TEST_EVENT,
        organization_id=endpoint.organization_id,
        account=None,
        objects={"message": "A test event sent from the service's admin."},
        subject="",
        endpoint_ids=[endpoint.pk],
    )
