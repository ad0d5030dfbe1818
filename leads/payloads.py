"""A lead's outcome as a webhook event: ``lead_received`` when it was accepted,
``lead_refused`` (with the reason) when it was not; duplicates report nothing new."""

from __future__ import annotations

from typing import Any

from calls.payloads import call_lead_object
from leads.models import Lead, Outcome
from webhooks.services import webhook_event_emit

ACCEPTED = {Outcome.ACCEPTED, Outcome.NO_PHONE}
REFUSED = {
    Outcome.MALFORMED,
    Outcome.NO_VENDOR,
    Outcome.NO_RULE,
    Outcome.DO_NOT_PROCESS,
    Outcome.NO_PROSPECT_ID,
    Outcome.NOT_ADF,
}


def lead_object(lead: Lead) -> dict[str, Any]:
    """The lead as it was read from its document ("" for what it did not say)."""
    if lead.call is not None:
        return {**call_lead_object(lead.call), "prospect_id": lead.prospect_id}
    customer = (lead.parsed or {}).get("customer", {})
    phones = [p.get("number", "") for p in customer.get("phones", [])]
    first, last = customer.get("first_name", ""), customer.get("last_name", "")
    phone, email = (phones[0] if phones else ""), customer.get("email", "")
    return {
        "first_name": first,
        "last_name": last,
        "phone": phone,
        "email": email,
        "prospect_id": lead.prospect_id,
    }


def lead_outcome_emit(lead: Lead) -> None:
    """Report the outcome just recorded on ``lead``, in the transaction that recorded it."""
    outcome = Outcome(lead.outcome)
    answer = lead.response_body or {}
    message = answer.get("reason") or answer.get("message") or ""
    if outcome in ACCEPTED:
        type, extra = "lead_received", {"message": message}
    elif outcome in REFUSED:
        reason = "too_large" if lead.response_status == 413 else outcome.value
        type, extra = "lead_refused", {"reason": reason, "message": message}
    else:
        return
    webhook_event_emit(
        type=type,
        organization_id=lead.organization_id,
        account=lead.account,
        subject=f"lead:{lead.pk}",
        objects=lambda: {
            "lead_id": lead.pk,
            "call_id": lead.call_id,
            "lead": lead_object(lead),
            **extra,
        },
    )
