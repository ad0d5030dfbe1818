"""Lead legs: what a provider reports about the lead's leg once an agent took the call
(answered, ended, not answered), answers that come late, legs that never reached the
provider, and retries on the account's cadence.
"""

from __future__ import annotations

from datetime import datetime, timedelta
from typing import Any

from django.utils import timezone

from calls import media, signals
from calls.models import AttemptOutcome, Call, CallAttempt, CallStatus, Leg
from calls.pipeline.transitions import (
    EVENT_OUTCOME,
    FINAL,
    attempt_end,
    attempt_mark,
    call_finish,
    call_requeue,
    dialing_settings,
    log_on_commit,
    phone_time,
    seconds_between,
)
from providers.telephony import Event, EventKind, Instruction

LEAD_OUTCOME_STATUS = {
    AttemptOutcome.NOANSWER: CallStatus.NOANSWER,
    AttemptOutcome.BUSY: CallStatus.BUSY,
    AttemptOutcome.FAILED: CallStatus.FAILED,
}


def lead_event(
    call: Call, attempt: CallAttempt, event: Event, followups: list[Any]
) -> Instruction:
    now = timezone.now()
    if attempt.ended_at:
        answered = event.kind == EventKind.ANSWERED or (
            event.kind == EventKind.COMPLETED and event.duration
        )
        if answered and attempt.outcome != AttemptOutcome.ANSWERED:
            _late_answer(call, attempt, event, followups)
        return Instruction.nothing()
    if event.kind == EventKind.ANSWERED:
        _answered(call, attempt, now)
    elif event.kind == EventKind.COMPLETED or (
        event.kind in EVENT_OUTCOME and attempt.answered_at
    ):  # an answered leg that ends, however it is reported, ends the answered call
        if event.duration and not attempt.answered_at:
            _answered(
                call, attempt, now - timedelta(seconds=event.duration)
            )  # the answer event was lost
        if attempt.answered_at:
            duration = (
                event.duration
                if event.duration is not None
                else seconds_between(attempt.answered_at, now)
            )
            attempt_end(attempt, AttemptOutcome.ANSWERED, followups, duration=duration)
            call.duration = duration
            call_finish(call, CallStatus.ANSWER, save_also=["duration"])
            media.recording_make_ended(attempt=attempt)  # the simulator's, when spoken
        else:
            _lead_missed(call, attempt, AttemptOutcome.NOANSWER, followups)
    elif event.kind in EVENT_OUTCOME:
        _lead_missed(call, attempt, EVENT_OUTCOME[event.kind], followups)
    return Instruction.nothing()


def _answered(call: Call, attempt: CallAttempt, at: datetime) -> None:
    """The lead picked up: the call is answered (bridged and recording) from here on."""
    attempt_mark(attempt, answered_at=at)
    call.status = CallStatus.ANSWER
    call.next_attempt_at = None
    if call.response_time is None:
        call.response_time = seconds_between(call.received_at, at)
    call.save(update_fields=["status", "next_attempt_at", "response_time"])
    signals.lead_answered.send(sender=Call, call=call)
    log_on_commit(
        "call.lead_answered",
        call_id=call.pk,
        attempt_id=attempt.pk,
        agent_id=call.agent_id,
        response_time=call.response_time,
    )


def _late_answer(
    call: Call, attempt: CallAttempt, event: Event, followups: list[Any]
) -> None:
    """A lead's leg we had ended turns out to have been answered (its events came late):
    the call is answered after all, and a retry waiting for it is called off, not dialed."""
    now = timezone.now()
    attempt.outcome = AttemptOutcome.ANSWERED
    attempt.answered_at = attempt.answered_at or now
    attempt.duration = event.duration if event.duration else attempt.duration
    attempt.save(update_fields=["outcome", "answered_at", "duration"])
    log_on_commit(
        "call.late_event_reconciled",
        call_id=call.pk,
        attempt_id=attempt.pk,
        kind=event.kind.value,
        status_before=call.status,
    )
    if call.status in FINAL:
        return  # a final status never changes; the leg's record is corrected above
    for open_leg in call.attempts_log.filter(ended_at__isnull=True):
        attempt_end(open_leg, AttemptOutcome.CANCELED, followups, hangup=True)
    accepted = call.attempts_log.filter(
        leg=Leg.AGENT, outcome=AttemptOutcome.ACCEPTED, round=attempt.round
    ).first()
    call.agent_id = accepted.agent_id if accepted else call.agent_id
    if call.response_time is None:
        call.response_time = seconds_between(call.received_at, attempt.answered_at)
    call.duration = attempt.duration
    call_finish(
        call, CallStatus.ANSWER, save_also=["agent", "response_time", "duration"]
    )
    signals.lead_answered.send(sender=Call, call=call)


def lead_not_placed(call: Call, attempt: CallAttempt, followups: list[Any]) -> None:
    """The lead's leg never reached the provider (the switch had hung up the agent's leg it
    was to be dialed from): no dial of the lead, so neither "no answer" nor one of the
    call's attempts (CONTRACT.md: ``callAttempts`` counts dials). The leg ends as hung up
    by us and the call goes back to the queue at once, to be dialed within its limit; the
    wait its cadence asks before this dial was already waited."""
    attempt_end(attempt, AttemptOutcome.CANCELED, followups)
    for agent_leg in call.attempts_log.filter(leg=Leg.AGENT, ended_at__isnull=True):
        attempt_end(agent_leg, AttemptOutcome.ACCEPTED, followups, hangup=True)
    call.attempts = max(0, call.attempts - 1)  # counted when the agent took the call
    log_on_commit(
        "call.lead_leg_not_placed",
        call_id=call.pk,
        attempt_id=attempt.pk,
        lead_attempts=call.attempts,
    )
    if call.status in FINAL:
        call.save(update_fields=["attempts"])
        return
    config = dialing_settings(call.account)
    if call.attempts and call.attempts >= config.lead_attempt_limit:
        # The limit was lowered since the last dial: the call ends as that dial did.
        last = (
            call.attempts_log.filter(
                leg=Leg.LEAD, outcome__in=list(LEAD_OUTCOME_STATUS)
            )
            .exclude(pk=attempt.pk)
            .order_by("-pk")
            .values_list("outcome", flat=True)
            .first()
        )
        outcome = AttemptOutcome(last or AttemptOutcome.NOANSWER)
        call_finish(call, LEAD_OUTCOME_STATUS[outcome], save_also=["attempts"])
        return
    call.agent = None
    call_requeue(call, timezone.now(), save_also=["agent", "attempts"])


def _lead_missed(
    call: Call, attempt: CallAttempt, outcome: str, followups: list[Any]
) -> None:
    """The lead did not answer: retry on the account's cadence, or end with the outcome."""
    attempt_end(attempt, outcome, followups)
    for agent_leg in call.attempts_log.filter(leg=Leg.AGENT, ended_at__isnull=True):
        attempt_end(agent_leg, AttemptOutcome.ACCEPTED, followups, hangup=True)
    config = dialing_settings(call.account)
    if call.status in FINAL:
        return
    if call.attempts >= config.lead_attempt_limit:
        call_finish(call, LEAD_OUTCOME_STATUS[AttemptOutcome(outcome)])
        return
    cadence = list(config.retry_cadence or [0])
    delay = cadence[min(call.attempts, len(cadence) - 1)]
    call.agent = None
    call_requeue(
        call,
        timezone.now() + phone_time(call, timedelta(seconds=delay)),
        save_also=["agent"],
    )
