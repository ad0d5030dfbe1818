"""What the apps below tell handoffs, in the transaction of their change: a moment a
person must act opens a timer, a person's act closes it. Texting and appointments are
read through their own rows' saves (``post_save``), so neither knows of handoffs."""

from __future__ import annotations

import uuid
from typing import Any

from appointments.models import Actor, AppointmentChange, Status
from calls.models import Call, CallStatus
from consenting.models import SpokenRevocation
from core.outbox import effect_record
from handoffs.models import REACHED, ClosedBy, HandoffKind
from handoffs.services import handoff_open, handoffs_close
from texting.models import OptOut, Purpose, Text


def on_lead_replied(sender: type, text: Text, **kwargs: Any) -> None:
    """A lead's reply (an ordinary one, or "call me"): someone should answer it; not one
    appointments already answered for the lead (its receiver is connected first): a C
    that confirmed their appointment, or a time agreed that proposed one (a proposal
    waits for a person under its own timer). Returns None, never True: handoffs takes no
    reply as its own, so texting still reads a "call me"."""
    answered = AppointmentChange.objects.filter(
        appointment__account_id=text.account_id,
        appointment__phone=text.lead_phone,
        by=Actor.LEAD,
        at__gte=text.created_at,
    )
    if answered.exists():
        return
    handoff_open(
        account_id=text.account_id,
        phone=text.lead_phone,
        kind=HandoffKind.REPLY,
        opened_by=f"text {text.pk}",
        call=text.call,
        at=text.created_at,
    )


def on_text_saved(
    sender: type,
    instance: Text,
    created: bool,
    update_fields: frozenset[str] | None = None,
    **kwargs: Any,
) -> None:
    text = instance
    if created and text.purpose == Purpose.OPT_IN:
        # The lead texted START: a pause waiting for a person ended with it.
        handoffs_close(
            account_id=text.account_id,
            phone=text.lead_phone,
            kinds=[HandoffKind.OPT_OUT],
            by=ClosedBy.LEAD,
            at=text.created_at,
        )
    elif created and text.purpose == Purpose.REPLY and text.sent_by_id is not None:
        # A person texted the lead from the call page.
        handoffs_close(
            account_id=text.account_id,
            phone=text.lead_phone,
            kinds=REACHED,
            by=ClosedBy.TEXT,
            user_id=text.sent_by_id,
            at=text.created_at,
        )


def on_opt_out_saved(
    sender: type,
    instance: OptOut,
    created: bool,
    update_fields: frozenset[str] | None = None,
    **kwargs: Any,
) -> None:
    opt_out = instance
    if created:
        if not opt_out.confirmed:  # paused until a person reads the reply
            handoff_open(
                account_id=opt_out.account_id,
                phone=opt_out.phone,
                kind=HandoffKind.OPT_OUT,
                opened_by=f"text {opt_out.text_id}" if opt_out.text_id else "opt-out",
                at=opt_out.opted_out_at,
            )
        return
    if update_fields and {"confirmed", "opted_in_at"} & update_fields:
        # Confirmed or dismissed on the page, or confirmed by the lead's own STOP.
        handoffs_close(
            account_id=opt_out.account_id,
            phone=opt_out.phone,
            kinds=[HandoffKind.OPT_OUT],
            by=ClosedBy.DECISION if opt_out.decided_by_id else ClosedBy.LEAD,
            user_id=opt_out.decided_by_id,
        )


def on_lead_answered(sender: type, call: Call, **kwargs: Any) -> None:
    """The lead answered a call an agent had taken: a person reached them."""
    handoffs_close(
        account_id=call.account_id,
        phone=call.phone,
        kinds=REACHED,
        by=ClosedBy.CALL,
        user_id=call.agent_id,
    )


def on_call_finished(sender: type, call: Call, **kwargs: Any) -> None:
    if call.status == CallStatus.NOAGENT:
        handoff_open(
            account_id=call.account_id,
            phone=call.phone,
            kind=HandoffKind.NO_AGENT,
            opened_by=f"call {call.pk}",
            call=call,
        )


def on_transcription_saved(sender: type, call_id: int, **kwargs: Any) -> None:
    """The transcript may ask for a callback: read by its own task (handoffs.effects),
    so a reading that fails never undoes the transcript."""
    effect_record(
        kind="handoffs.callback",
        key=f"handoffs.callback:{call_id}:{uuid.uuid4().hex}",
        about=f"call {call_id}",
        call_id=call_id,
    )


def on_appointment_changed(
    sender: type, instance: AppointmentChange, created: bool, **kwargs: Any
) -> None:
    """A proposal waits for a person to set or dismiss it; the service moving its own
    proposal is no decision (the timer keeps running)."""
    if not created:
        return
    change = instance
    appointment = change.appointment
    if change.status_to == Status.PROPOSED:
        handoff_open(
            account_id=appointment.account_id,
            phone=appointment.phone,
            kind=HandoffKind.APPOINTMENT,
            opened_by=f"appointment {appointment.pk}",
            call=appointment.call,
            at=change.at,
        )
    elif change.status_from == Status.PROPOSED and change.by != Actor.SERVICE:
        handoffs_close(
            account_id=appointment.account_id,
            phone=appointment.phone,
            kinds=[HandoffKind.APPOINTMENT],
            by=ClosedBy.DECISION,
            user_id=change.by_user_id,
        )


def on_spoken_revocation_saved(
    sender: type,
    instance: SpokenRevocation,
    created: bool,
    update_fields: frozenset[str] | None = None,
    **kwargs: Any,
) -> None:
    """A spoken "don't call me again" waits for a person to confirm or dismiss it on the
    call page; their decision closes the timer."""
    suggestion = instance
    if created:
        handoff_open(
            account_id=suggestion.account_id,
            phone=suggestion.phone,
            kind=HandoffKind.SPOKEN_OPT_OUT,
            opened_by=f"call {suggestion.call_id}",
            call=suggestion.call,
            at=suggestion.suggested_at,
        )
    elif update_fields and "decision" in update_fields and suggestion.decision:
        handoffs_close(
            account_id=suggestion.account_id,
            phone=suggestion.phone,
            kinds=[HandoffKind.SPOKEN_OPT_OUT],
            by=ClosedBy.DECISION,
            user_id=suggestion.decided_by_id,
        )
