"""How a due step reaches the lead: one runner per channel (``Channel``), each through the
service every other path uses: a call through the call pipeline (``calls.services.
call_again``), a text through texting's automatic texts (consent, quiet hours and the
account's limit per lead apply). A new channel (e-mail) is a choice in ``Channel`` and a
runner here; nothing else changes."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

from cadence.models import Channel, PlannedStep, StepStatus, Template
from calls.models import CallOrigin
from calls.services import SetupPriority, call_again
from texting import compose
from texting.models import Purpose, Text
from texting.selectors import opted_out, texting_settings_of
from texting.services import text_automatic, texts_to_lead


@dataclass(frozen=True)
class Outcome:
    status: str  # done or skipped
    reason: str = ""


def _call(step: PlannedStep) -> Outcome:
    made = call_again(
        call=step.call,
        origin=CallOrigin.CADENCE,
        why=f"Follow-up call, step {step.position + 1} of the cadence.",
        priority=SetupPriority.LATER,  # never ahead of a new lead (issue 40)
    )
    if made is None:
        return Outcome(StepStatus.SKIPPED, "A call to the lead was under way already.")
    step.made_call = made
    return Outcome(StepStatus.DONE)


def _why_no_text(step: PlannedStep) -> str:
    config = texting_settings_of(step.account)
    if config is None or not config.enabled:
        return "Texting is off for the account."
    if opted_out(account_id=step.account_id, phone=step.phone):
        return "The lead opted out of texts."
    if step.template == Template.NOT_REACHED and not config.not_reached_template:
        return "The account's 'lead not reached' text is empty."
    if step.template == Template.NOT_REACHED and _call_texted(step):
        return "The call's own text was sent already."
    return "The account's limit of automatic texts per lead was reached."


# The texts texting sends itself when a lead's call ends without reaching them.
CALLS_OWN = (Purpose.NOT_REACHED, Purpose.NO_AGENT)


def _call_texted(step: PlannedStep) -> bool:
    return Text.objects.filter(call=step.call, purpose__in=CALLS_OWN).exists()


def _text(step: PlannedStep) -> Outcome:
    call = step.call
    if step.template == Template.NOT_REACHED:
        # The call's own not-reached text, once per call: texting sends it (or its
        # "no agent" text) itself when the call ends, so this step only makes sure one went.
        text = (
            None
            if _call_texted(step)
            else text_automatic(call=call, purpose=Purpose.NOT_REACHED)
        )
    else:
        body = compose.render(
            step.body,
            first_name=call.first_name or "there",
            vehicle=compose.vehicle_of(call),
            dealer=step.account.name,
            agent=call.agent.get_full_name() if call.agent else "our team",
        )
        (text,) = texts_to_lead(
            call=call, purpose=Purpose.NOT_REACHED, timed=[(body, None)]
        )
    if text is None:
        return Outcome(StepStatus.SKIPPED, _why_no_text(step))
    step.made_text = text
    return Outcome(StepStatus.DONE)


RUNNERS: dict[str, Callable[[PlannedStep], Outcome]] = {
    Channel.CALL: _call,
    Channel.TEXT: _text,
}
