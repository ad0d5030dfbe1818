"""The objects of a call as webhook events carry them (docs/integrators-guide.md,
"Webhooks"), and the call's events, written in the transaction of the change they report."""

from __future__ import annotations

import uuid
from typing import Any

from calls.models import Call, CallAttempt, CallOrigin
from core.outbox import effect
from users.models import Membership, User
from webhooks.services import iso, webhook_event_emit


def agent_object(agent: User | None, organization_id: int) -> dict[str, Any] | None:
    """The agent with their user code in the call's organization."""
    if agent is None:
        return None
    code = (
        Membership.objects.filter(user=agent, organization_id=organization_id)
        .values_list("code", flat=True)
        .first()
    )
    return {
        "first_name": agent.first_name,
        "last_name": agent.last_name,
        "email": agent.email,
        "code": code or "",
    }


def call_lead_object(call: Call) -> dict[str, Any]:
    """The lead the call is for, as it was queued."""
    return {
        "first_name": call.first_name,
        "last_name": call.last_name,
        "phone": call.phone,
        "email": call.email,
        "prospect_id": call.altid,
    }


def call_object(call: Call) -> dict[str, Any]:
    first_dial = (
        CallAttempt.objects.filter(call=call, dial_requested_at__isnull=False)
        .order_by("dial_requested_at")
        .values_list("dial_requested_at", flat=True)
        .first()
    )
    return {
        "id": call.pk,
        "status": call.status,
        "inbound": call.inbound_tracking_number,
        "outbound": call.phone,
        "click_to_call": 1 if call.origin == CallOrigin.CLICK_TO_CALL else 0,
        "date_received": iso(call.received_at),
        "origination_time": iso(first_dial),
        "response_time": call.response_time,
        "duration": call.duration,
        "attempts": call.attempts,
        # As the scored record's agent: a user's full name, or an agent who is not a user.
        "agent": call.agent_shown or None,
        "department": call.department,
        "recording": call.recording_url or None,
    }


def call_event_emit(*, call: Call, type: str, **objects: Any) -> None:
    """Report a step of the call's life to the account's webhook endpoints, in order. An
    event that cannot be built fails alone (the effect ``calls.webhook_event``, which
    support can send again), never the step it reports."""
    webhook_event_emit(
        type=type,
        organization_id=call.account.organization_id,
        account=call.account,
        subject=f"call:{call.pk}",
        failed_as={
            "kind": "calls.webhook_event",
            "key": f"calls.webhook_event:{call.pk}:{type}:{uuid.uuid4().hex}",
            "about": f"call {call.pk}",
            "call_id": call.pk,
            "type": type,
        },
        # Built only when the organization has endpoints: the pipeline pays nothing otherwise.
        objects=lambda: {
            "call": call_object(call),
            "agent": agent_object(call.agent, call.account.organization_id),
            "lead": call_lead_object(call),
            **objects,
        },
    )


@effect("calls.webhook_event")
def webhook_event_again(*, call_id: int, type: str) -> None:
    """Support's "send again" of an event that could not be built: built anew from the
    call as it is now (a transcription event with the call's transcript and summary)."""
    call = Call.objects.select_related("account", "agent").get(pk=call_id)
    objects: dict[str, Any] = {}
    if type == "transcription_ready":
        objects["transcription"] = {"text": call.transcription, "summary": call.summary}
    call_event_emit(call=call, type=type, **objects)
