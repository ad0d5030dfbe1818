"""A consent ledger entry as the webhook events (``consent_given``, ``consent_revoked``)
and the consent API show it."""

from __future__ import annotations

from typing import Any

from consent.models import ConsentEvent, Kind
from webhooks.models import EventType
from webhooks.services import iso, webhook_event_emit


def channel_of(event: ConsentEvent) -> str:
    """``calls``, ``texts`` or ``all`` (both)."""
    if event.calls and event.texts:
        return "all"
    return "calls" if event.calls else "texts"


def consent_object(event: ConsentEvent) -> dict[str, Any]:
    return {
        "id": event.pk,
        "kind": event.kind,
        "phone": event.phone,
        "email": event.email,
        "channel": channel_of(event),
        "source": event.source,
        "at": iso(event.at),
        "by": event.who,
        "detail": event.detail,
        "reference": event.reference,
    }


def consent_event_emit(*, event: ConsentEvent) -> None:
    """Report a ledger entry to the organization's endpoints that want its account: a
    revocation as ``consent_revoked``, a consent or re-consent as ``consent_given``."""
    webhook_event_emit(
        type=EventType.CONSENT_REVOKED
        if event.kind == Kind.REVOCATION
        else EventType.CONSENT_GIVEN,
        organization_id=event.organization_id,
        account=event.account,
        subject=f"consent:{event.account_id}:{event.phone or event.email}"[:64],
        objects=lambda: {"consent": consent_object(event)},
    )
