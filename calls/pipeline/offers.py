"""Agent legs: what a provider reports about an agent's leg (answered, a key pressed,
ended; a ring is ``events``' alone), the agent taking the call (the lead is then dialed),
and what follows when an agent misses it (the next agent, another round, or NOAGENT).
"""

from __future__ import annotations

from datetime import timedelta
from typing import Any

from django.utils import timezone

from calls.models import AttemptOutcome, Call, CallAttempt, CallStatus, Leg, RingMode
from calls.payloads import call_event_emit
from calls.pipeline import broker
from calls.pipeline.transitions import (
    EVENT_OUTCOME,
    agent_attempt,
    agent_taken,
    attempt_end,
    attempt_mark,
    call_finish,
    call_requeue,
    dialing_settings,
    log_on_commit,
    phone_time,
)
from calls.routing import agent_first_available
from core.logging import mask_phone
from providers.telephony import Event, EventKind, Instruction

PROMPT = "Press 1 to be connected."
TAKEN = "Another agent has taken this call. Goodbye."


def agent_event(
    call: Call, attempt: CallAttempt, event: Event, followups: list[Any]
) -> Instruction:
    if attempt.ended_at:
        # A leg we already let go of: if it is still asking what to play, hang it up.
        return (
            Instruction.end()
            if event.kind in (EventKind.ANSWERED, EventKind.DIGITS)
            else Instruction.nothing()
        )
    now = timezone.now()
    if event.kind == EventKind.ANSWERED:
        attempt_mark(attempt, answered_at=attempt.answered_at or now)
        if call.status != CallStatus.DIALING or agent_taken(call):
            attempt_end(attempt, AttemptOutcome.CANCELED, followups)
            return Instruction.end(TAKEN)
        if dialing_settings(call.account).press_one_required:
            return Instruction(say=f"{call.whisper} {PROMPT}".strip(), gather=True)
        return _accept(call, attempt, followups, say=call.whisper)
    if event.kind == EventKind.DIGITS:
        taken = agent_taken(call)
        if (
            event.digits.startswith("1")
            and call.status == CallStatus.DIALING
            and not taken
        ):
            return _accept(call, attempt, followups)
        attempt_end(
            attempt,
            AttemptOutcome.CANCELED if taken else AttemptOutcome.REFUSED,
            followups,
        )
        _after_agent_miss(call, followups)
        return Instruction.end(TAKEN if taken else "")
    if event.kind in EVENT_OUTCOME or event.kind == EventKind.COMPLETED:
        accepted = attempt.outcome == AttemptOutcome.ACCEPTED
        outcome = attempt.outcome or EVENT_OUTCOME.get(
            event.kind,
            AttemptOutcome.REFUSED if attempt.answered_at else AttemptOutcome.NOANSWER,
        )
        attempt_end(attempt, outcome, followups, duration=event.duration)
        if not accepted:
            _after_agent_miss(call, followups)
    return Instruction.nothing()


def _accept(
    call: Call, attempt: CallAttempt, followups: list[Any], say: str = ""
) -> Instruction:
    """The agent takes the call: other agents' legs are hung up and the lead is dialed."""
    attempt.outcome = AttemptOutcome.ACCEPTED
    attempt.key_pressed = "1"
    attempt.save(update_fields=["outcome", "key_pressed"])
    call.agent_id = attempt.agent_id
    call.attempts += 1
    call.save(update_fields=["agent", "attempts"])
    for other in call.attempts_log.filter(leg=Leg.AGENT, ended_at__isnull=True).exclude(
        pk=attempt.pk
    ):
        attempt_end(other, AttemptOutcome.CANCELED, followups, hangup=True)
    lead_attempt = CallAttempt.objects.create(
        call=call,
        leg=Leg.LEAD,
        round=call.rounds,
        number=call.phone,
        provider=attempt.provider,
        dial_requested_at=timezone.now(),
    )
    log_on_commit(
        "call.agent_accepted",
        call_id=call.pk,
        attempt_id=attempt.pk,
        agent_id=attempt.agent_id,
        round=call.rounds,
    )
    log_on_commit(
        "call.lead_dialed",
        call_id=call.pk,
        attempt_id=lead_attempt.pk,
        agent_id=attempt.agent_id,
        lead_attempt=call.attempts,
        number=mask_phone(call.phone),
    )
    call_event_emit(call=call, type="agent_presses_one")
    return Instruction(
        say=say,
        connect=True,
        lead_attempt_id=lead_attempt.pk,
        number=call.phone,
        caller_id=call.account.caller_id,
    )


def _after_agent_miss(call: Call, followups: list[Any]) -> None:
    """An agent did not take the call: offer it to the next agent, or end the round."""
    if call.status != CallStatus.DIALING or agent_taken(call):
        return
    if call.attempts_log.filter(
        leg=Leg.AGENT, round=call.rounds, ended_at__isnull=True
    ).exists():
        return  # simultaneous ringing: others may still press 1
    config = dialing_settings(call.account)
    if config.ring_mode == RingMode.SEQUENTIAL and not call.agent_number:
        offered = set(
            call.attempts_log.filter(leg=Leg.AGENT, round=call.rounds).values_list(
                "agent_id", flat=True
            )
        )
        now = timezone.now()
        following = agent_first_available(
            call=call, at=now, exclude={a for a in offered if a}
        )
        if following:
            attempt = agent_attempt(call, following)
            followups.append(lambda: broker.dispatch_dial(attempt.pk))
            return
    call.unanswered_rounds += 1
    if call.unanswered_rounds >= config.agent_rounds:
        call_finish(call, CallStatus.NOAGENT, save_also=["unanswered_rounds"])
        return
    call_requeue(
        call,
        timezone.now()
        + phone_time(call, timedelta(seconds=config.agent_round_pause_seconds)),
        save_also=["unanswered_rounds"],
    )
