"""An appointment as the webhook events and the appointments API show it."""

from __future__ import annotations

from typing import Any
from zoneinfo import ZoneInfo

from appointments.models import Appointment
from calls.payloads import agent_object, call_lead_object, call_object
from webhooks.services import iso, webhook_event_emit


def appointment_object(appointment: Appointment) -> dict[str, Any]:
    """Its members: the moment in UTC and, as the dealer says it, the local date and time
    in the account's timezone."""
    local = appointment.starts_at.astimezone(ZoneInfo(appointment.account.timezone))
    return {
        "id": appointment.pk,
        "status": appointment.status,
        "kind": appointment.kind,
        "starts_at": iso(appointment.starts_at),
        "date": local.date().isoformat(),
        "time": local.strftime("%H:%M"),
        "timezone": appointment.account.timezone,
        "vehicle": appointment.vehicle,
        "set_by": appointment.set_by,
        "call_id": appointment.call_id,
        "replaces": appointment.replaces_id,
        "created": iso(appointment.created_at),
    }


def appointment_event_emit(*, appointment: Appointment, type: str) -> None:
    """Report a step of the appointment's life to the account's webhook endpoints, with
    its call, agent and lead (the lead as the appointment knows them without a call)."""
    account, call = appointment.account, appointment.call

    def objects() -> dict[str, Any]:
        return {
            "appointment": appointment_object(appointment),
            "call": call_object(call) if call else None,
            "agent": agent_object(call.agent, account.organization_id)
            if call
            else None,
            "lead": call_lead_object(call)
            if call
            else {
                "first_name": appointment.first_name,
                "last_name": appointment.last_name,
                "phone": appointment.phone,
                "email": "",
                "prospect_id": "",
            },
        }

    webhook_event_emit(
        type=type,
        organization_id=account.organization_id,
        account=account,
        subject=f"appointment:{appointment.pk}",
        objects=objects,
    )
