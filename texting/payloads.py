"""Texts as webhook events carry them (docs/integrators-guide.md, "Webhooks"): written in
the transaction of the change they report."""

from __future__ import annotations

from typing import Any

from calls.payloads import agent_object, call_lead_object, call_object
from texting.models import OptOut, Text
from webhooks.services import iso, webhook_event_emit


def text_object(text: Text) -> dict[str, Any]:
    return {
        "id": text.pk,
        "direction": text.direction,
        "purpose": text.purpose,
        "from": text.from_number,
        "to": text.to_number,
        "body": text.body,
        "status": text.status,
        "created": iso(text.created_at),
    }


def text_event_emit(*, text: Text, type: str, opt_out: OptOut | None = None) -> None:
    """Report a text sent or received, or a lead who opted out, with the lead's latest
    call (``call`` null when the text is not tied to one)."""
    call = text.call
    account = text.account

    def objects() -> dict[str, Any]:
        body: dict[str, Any] = {
            "text": text_object(text),
            "call": call_object(call) if call else None,
            "agent": agent_object(call.agent, account.organization_id)
            if call
            else None,
            "lead": call_lead_object(call) if call else {"phone": text.lead_phone},
        }
        if opt_out is not None:
            body["opt_out"] = {
                "phone": opt_out.phone,
                "at": iso(opt_out.opted_out_at),
                "message": opt_out.message,
            }
        return body

    webhook_event_emit(
        type=type,
        organization_id=account.organization_id,
        account=account,
        subject=f"call:{call.pk}" if call else f"texts:{account.pk}:{text.lead_phone}",
        objects=objects,
    )
