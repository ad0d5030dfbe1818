"""What the apps below tell the cadence, in the transaction of their change: a lead's call
that did not reach them records a plan (made by its own task, ``cadence.effects``, so a
plan that cannot be made never holds back the call); the first reply, appointment,
opt-out or person taking over stops every step ahead. Texting, appointments and handoffs
are read through their own signals or their rows' saves, so none knows of the cadence; the
consent ledger is read when a step falls due (``cadence.services.step_run``)."""

from __future__ import annotations

from typing import Any

from appointments.models import Appointment
from cadence.models import Cadence
from cadence.services import NOT_REACHED, steps_stop
from calls.models import Call, CallOrigin
from core.outbox import effect_record
from handoffs.models import ClosedBy, Handoff
from texting.models import OptOut, Purpose, Text


def on_call_finished(sender: type, call: Call, **kwargs: Any) -> None:
    """A lead's own call ended without reaching them: plan the account's cadence."""
    if call.origin != CallOrigin.LEAD or call.status not in NOT_REACHED:
        return
    if not Cadence.objects.filter(account_id=call.account_id, enabled=True).exists():
        return
    effect_record(
        kind="cadence.plan",
        key=f"cadence.plan:{call.pk}",
        about=f"call {call.pk}",
        call_id=call.pk,
    )


def on_lead_replied(sender: type, text: Text, **kwargs: Any) -> None:
    """The lead texted back (never taken as the cadence's own: returns None)."""
    steps_stop(
        account_id=text.account_id,
        phone=text.lead_phone,
        reason="The lead replied by text.",
    )


def on_lead_answered(sender: type, call: Call, **kwargs: Any) -> None:
    steps_stop(
        account_id=call.account_id,
        phone=call.phone,
        reason="An agent reached the lead on a call.",
    )


def on_text_saved(sender: type, instance: Text, created: bool, **kwargs: Any) -> None:
    text = instance
    if created and text.purpose == Purpose.REPLY and text.sent_by_id is not None:
        steps_stop(
            account_id=text.account_id,
            phone=text.lead_phone,
            reason="A person texted the lead.",
        )


def on_opt_out_saved(
    sender: type, instance: OptOut, created: bool, **kwargs: Any
) -> None:
    """An opt-out, or a reply that reads like one (texting pauses; so does the cadence)."""
    if created:
        steps_stop(
            account_id=instance.account_id,
            phone=instance.phone,
            reason="The lead opted out of texts."
            if instance.confirmed
            else "The lead's reply may be an opt-out.",
        )


def on_appointment_saved(
    sender: type, instance: Appointment, created: bool, **kwargs: Any
) -> None:
    if created and instance.phone:
        steps_stop(
            account_id=instance.account_id,
            phone=instance.phone,
            reason="An appointment was made.",
        )


def on_handoff_saved(
    sender: type, instance: Handoff, created: bool, **kwargs: Any
) -> None:
    """A person decided on the lead's handoff on the page (a call or a person's text
    closing one is stopped above already)."""
    if instance.closed_at is not None and instance.closed_by == ClosedBy.DECISION:
        steps_stop(
            account_id=instance.account_id,
            phone=instance.phone,
            reason="A person took over the lead.",
        )
