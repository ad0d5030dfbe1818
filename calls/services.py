"""Call setup: queue, offer to agents, connect the lead, retry, and end with a status.

Every step locks the call row and checks its state first, so a task delivered twice or
a provider event that arrives twice or late changes nothing it should not. A final
status (ANSWER, NOANSWER, BUSY, FAILED, CANCEL, NOAGENT) never changes again.
"""

from __future__ import annotations

import logging
from datetime import datetime, timedelta
from typing import Any

from django.conf import settings
from django.db import transaction
from django.utils import timezone

from accounts.models import Account, Team
from calls.events import call_event_emit
from calls.models import (
    AttemptOutcome,
    Call,
    CallAttempt,
    CallOrigin,
    CallStatus,
    DialingSettings,
    Leg,
    NoAgentPolicy,
    RingMode,
)
from calls.recordings import attempt_for_token, recording_link
from calls.routing import agents_available, agents_claim, agents_on_duty, next_opening
from calls.telephony import provider_for, provider_named
from calls.telephony.base import (
    AgentDial,
    Event,
    EventKind,
    Instruction,
    TelephonyUnavailable,
)
from config.logging import log_event, mask_phone
from users.models import User

log = logging.getLogger(__name__)

FINAL = frozenset(
    {
        CallStatus.ANSWER,
        CallStatus.NOANSWER,
        CallStatus.BUSY,
        CallStatus.FAILED,
        CallStatus.CANCEL,
        CallStatus.NOAGENT,
    }
)
LEAD_OUTCOME_STATUS = {
    AttemptOutcome.NOANSWER: CallStatus.NOANSWER,
    AttemptOutcome.BUSY: CallStatus.BUSY,
    AttemptOutcome.FAILED: CallStatus.FAILED,
}
EVENT_OUTCOME = {
    EventKind.NO_ANSWER: AttemptOutcome.NOANSWER,
    EventKind.BUSY: AttemptOutcome.BUSY,
    EventKind.FAILED: AttemptOutcome.FAILED,
}
PROMPT = "Press 1 to be connected."
TAKEN = "Another agent has taken this call. Goodbye."
LONGEST_CALL = timedelta(hours=4)
# Agents on duty but all on calls: look again this soon (a call ends at any moment).
# Like the other waits that exist only because phones are slow, it runs at the provider's
# time scale (``_phone_time``).
BUSY_RECHECK = timedelta(seconds=5)
# Retries due within this are handed to the broker with a countdown; later ones to the sweep.
HELD_BY_BROKER = timedelta(minutes=2)


def call_queue(
    *,
    account: Account,
    phone: str,
    received_at: datetime,
    origin: str = CallOrigin.LEAD,
    team: Team | None = None,
    requested_agent: User | None = None,
    **lead: Any,
) -> Call:
    """Queue a call for the pipeline; it is dispatched once the caller's transaction commits."""
    call = Call.objects.create(
        account=account,
        phone=phone,
        received_at=received_at,
        origin=origin,
        team=team,
        requested_agent=requested_agent,
        is_test=account.is_test,
        **lead,
    )
    transaction.on_commit(lambda: _queued(call), robust=True)
    return call


def dialing_settings(account_id: int) -> DialingSettings:
    """The account's dialing settings, or the defaults."""
    found = DialingSettings.objects.filter(account_id=account_id).first()
    return found or DialingSettings(account_id=account_id)


def call_setup(*, call_id: int) -> None:
    """Start a round for a due queued call: offer it to the available agents. Safe to run twice."""
    now = timezone.now()
    with transaction.atomic():
        call = (
            Call.objects.select_for_update(of=("self",))
            .select_related("account")
            .filter(pk=call_id)
            .first()
        )
        if (
            call is None
            or call.status != CallStatus.QUEUED
            or (call.next_attempt_at and call.next_attempt_at > now)
        ):
            return
        config = dialing_settings(call.account_id)
        agents = agents_available(call=call, at=now)
        if config.ring_mode == RingMode.SEQUENTIAL:
            agents = _first_claimable(agents, now)
        else:
            agents = agents_claim(agents, at=now)
        if not agents:
            _no_agent_now(call, config, now)
            return
        call.status = CallStatus.DIALING
        call.rounds += 1
        call.next_attempt_at = None
        call.save(update_fields=["status", "rounds", "next_attempt_at"])
        attempts = [_agent_attempt(call, agent) for agent in agents]
    for attempt in attempts:
        try:
            attempt_dial(attempt_id=attempt.pk)
        except TelephonyUnavailable:
            _dial_later(attempt.pk)


def attempt_dial(*, attempt_id: int) -> None:
    """Ask the provider to ring an agent leg, once: a leg already requested is left alone.

    The request is marked before the provider is asked, so a redelivered task never rings
    twice; if the provider is unreachable the mark is taken back and the task retries.
    A provider that refuses the number ends the leg as FAILED."""
    with transaction.atomic():
        attempt = (
            CallAttempt.objects.select_for_update(of=("self",))
            .select_related("call__account")
            .filter(
                pk=attempt_id, dial_requested_at__isnull=True, ended_at__isnull=True
            )
            .first()
        )
        if attempt is None:
            return
        attempt.dial_requested_at = timezone.now()
        attempt.save(update_fields=["dial_requested_at"])
    call = attempt.call
    config = dialing_settings(call.account_id)
    dial = AgentDial(
        attempt_id=attempt.pk,
        number=attempt.number,
        caller_id=call.account.caller_id,
        ring_seconds=config.agent_ring_seconds,
    )
    try:
        provider_id = provider_named(attempt.provider).dial_agent(dial)
    except TelephonyUnavailable:
        CallAttempt.objects.filter(pk=attempt.pk).update(dial_requested_at=None)
        raise
    except Exception:
        log.exception("provider refused to dial attempt %s", attempt.pk)
        call_event(Event(attempt.pk, EventKind.FAILED))
        return
    CallAttempt.objects.filter(pk=attempt.pk).update(provider_id=provider_id)
    log_event(
        log,
        "call.agent_offered",
        call_id=call.pk,
        attempt_id=attempt.pk,
        agent_id=attempt.agent_id,
        round=attempt.round,
        provider=attempt.provider,
        number=mask_phone(attempt.number),
    )


def call_event(event: Event) -> Instruction:
    """Apply what a provider reports about a leg; answers what to do on that leg next."""
    followups: list[Any] = []
    with transaction.atomic():
        attempt = (
            CallAttempt.objects.select_related("agent")
            .filter(pk=event.attempt_id)
            .first()
        )
        if attempt is None:
            return Instruction.nothing()
        call = (
            Call.objects.select_for_update(of=("self",))
            .select_related("account")
            .get(pk=attempt.call_id)
        )
        attempt = (
            CallAttempt.objects.select_for_update(of=("self",))
            .select_related("agent")
            .get(pk=event.attempt_id)
        )
        handler = _agent_event if attempt.leg == Leg.AGENT else _lead_event
        instruction = handler(call, attempt, event, followups)
    for followup in followups:
        followup()
    return instruction


def call_cancel(*, call: Call) -> bool:
    """Cancel a call that has not connected yet; live agent legs are hung up."""
    followups: list[Any] = []
    with transaction.atomic():
        call = Call.objects.select_for_update(of=("self",)).get(pk=call.pk)
        if call.status in FINAL or call.agent_id:
            return False
        for attempt in call.attempts_log.filter(ended_at__isnull=True):
            _end_attempt(attempt, AttemptOutcome.CANCELED, followups, hangup=True)
        _finish(call, CallStatus.CANCEL)
    for followup in followups:
        followup()
    return True


def call_recording_reissue(*, call: Call) -> bool:
    """Give a call's recording a new link, which revokes the old one at once; False when
    the recording is not one of the service's own links (nothing to revoke here)."""
    token = call.recording_url.removesuffix(".wav").rsplit("/", 1)[-1]
    attempt_id = (
        attempt_for_token(token) if call.recording_url.endswith(".wav") else None
    )
    if attempt_id is None:
        return False
    call.recording_url = recording_link(attempt_id)
    call.save(update_fields=["recording_url"])
    return True


@transaction.atomic
def call_transcription_save(
    *, call: Call, transcription: str, summary: str = ""
) -> Call:
    """Store a call's transcription (and summary) and report ``transcription_ready``."""
    call = (
        Call.objects.select_for_update(of=("self",))
        .select_related("account")
        .get(pk=call.pk)
    )
    call.transcription, call.summary = transcription, summary or call.summary
    call.save(update_fields=["transcription", "summary"])
    call_event_emit(
        call=call,
        type="transcription_ready",
        transcription={"text": call.transcription, "summary": call.summary},
    )
    return call


def calls_sweep(*, now: datetime | None = None) -> dict[str, int]:
    """Re-drive whatever is stuck: due queued calls, dials never requested, legs the provider
    went silent on. Returns how many of each it touched."""
    now = now or timezone.now()
    due = Call.objects.filter(
        status=CallStatus.QUEUED, created_at__lt=now - timedelta(seconds=5)
    ).exclude(next_attempt_at__gt=now)
    counts = {"queued": 0, "undialed": 0, "silent": 0}
    for call_id in due.values_list("pk", flat=True).iterator():
        _dispatch(call_id)
        counts["queued"] += 1
    undialed = CallAttempt.objects.filter(
        leg=Leg.AGENT,
        dial_requested_at__isnull=True,
        ended_at__isnull=True,
        created_at__lt=now - timedelta(seconds=10),
    )
    for attempt_id in undialed.values_list("pk", flat=True):
        _dial_later(attempt_id)
        counts["undialed"] += 1
    lost_after = timedelta(seconds=settings.CALLS_LOST_AFTER_SECONDS)
    silent = CallAttempt.objects.filter(ended_at__isnull=True).filter(
        answered_at__isnull=True, created_at__lt=now - lost_after
    ) | CallAttempt.objects.filter(
        ended_at__isnull=True, answered_at__lt=now - LONGEST_CALL
    )
    for attempt in silent:
        kind = EventKind.COMPLETED if attempt.answered_at else EventKind.NO_ANSWER
        call_event(Event(attempt.pk, kind))
        counts["silent"] += 1
    return counts


# --- agent legs -------------------------------------------------------------------------------


def _agent_event(
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
    if event.kind == EventKind.RINGING:
        _mark(attempt, ringing_at=attempt.ringing_at or now)
        return Instruction.nothing()
    if event.kind == EventKind.ANSWERED:
        _mark(attempt, answered_at=attempt.answered_at or now)
        if call.status != CallStatus.DIALING or call.agent_id:
            _end_attempt(attempt, AttemptOutcome.CANCELED, followups)
            return Instruction.end(TAKEN)
        if dialing_settings(call.account_id).press_one_required:
            return Instruction(say=f"{call.whisper} {PROMPT}".strip(), gather=True)
        return _accept(call, attempt, followups, say=call.whisper)
    if event.kind == EventKind.DIGITS:
        if (
            event.digits.startswith("1")
            and call.status == CallStatus.DIALING
            and not call.agent_id
        ):
            return _accept(call, attempt, followups)
        _end_attempt(
            attempt,
            AttemptOutcome.CANCELED if call.agent_id else AttemptOutcome.REFUSED,
            followups,
        )
        _after_agent_miss(call, followups)
        return Instruction.end(TAKEN if call.agent_id else "")
    if event.kind in EVENT_OUTCOME or event.kind == EventKind.COMPLETED:
        accepted = attempt.outcome == AttemptOutcome.ACCEPTED
        outcome = attempt.outcome or EVENT_OUTCOME.get(
            event.kind,
            AttemptOutcome.REFUSED if attempt.answered_at else AttemptOutcome.NOANSWER,
        )
        _end_attempt(attempt, outcome, followups, duration=event.duration)
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
    call.agent = attempt.agent
    call.attempts += 1
    call.save(update_fields=["agent", "attempts"])
    for other in call.attempts_log.filter(leg=Leg.AGENT, ended_at__isnull=True).exclude(
        pk=attempt.pk
    ):
        _end_attempt(other, AttemptOutcome.CANCELED, followups, hangup=True)
    lead_attempt = CallAttempt.objects.create(
        call=call,
        leg=Leg.LEAD,
        round=call.rounds,
        number=call.phone,
        provider=attempt.provider,
        dial_requested_at=timezone.now(),
    )
    _log_on_commit(
        "call.agent_accepted",
        call_id=call.pk,
        attempt_id=attempt.pk,
        agent_id=attempt.agent_id,
        round=call.rounds,
    )
    _log_on_commit(
        "call.lead_dialed",
        call_id=call.pk,
        attempt_id=lead_attempt.pk,
        agent_id=attempt.agent_id,
        lead_attempt=call.attempts,
        number=mask_phone(call.phone),
    )
    call_event_emit(call=call, type="agent_presses_one")
    instruction = Instruction(
        say=say,
        connect=True,
        lead_attempt_id=lead_attempt.pk,
        number=call.phone,
        caller_id=call.account.caller_id,
    )
    return instruction


def _after_agent_miss(call: Call, followups: list[Any]) -> None:
    """An agent did not take the call: offer it to the next agent, or end the round."""
    if call.status != CallStatus.DIALING or call.agent_id:
        return
    if call.attempts_log.filter(
        leg=Leg.AGENT, round=call.rounds, ended_at__isnull=True
    ).exists():
        return  # simultaneous ringing: others may still press 1
    config = dialing_settings(call.account_id)
    if config.ring_mode == RingMode.SEQUENTIAL:
        offered = set(
            call.attempts_log.filter(leg=Leg.AGENT, round=call.rounds).values_list(
                "agent_id", flat=True
            )
        )
        now = timezone.now()
        following = _first_claimable(
            agents_available(call=call, at=now, exclude={a for a in offered if a}), now
        )
        if following:
            attempt = _agent_attempt(call, following[0])
            followups.append(lambda: _dial_later(attempt.pk))
            return
    call.unanswered_rounds += 1
    if call.unanswered_rounds >= config.agent_rounds:
        _finish(call, CallStatus.NOAGENT, save_also=["unanswered_rounds"])
        return
    _requeue(
        call,
        timezone.now()
        + _phone_time(call, timedelta(seconds=config.agent_round_pause_seconds)),
        save_also=["unanswered_rounds"],
    )


def _no_agent_now(call: Call, config: DialingSettings, now: datetime) -> None:
    """Nobody can take the call now: wait (briefly if agents are on duty but busy, else until
    the next schedule opening), or end it as NOAGENT, as the account says."""
    if config.no_agent_policy == NoAgentPolicy.END:
        _finish(call, CallStatus.NOAGENT)
    elif agents_on_duty(call=call, at=now):
        _requeue(call, now + _phone_time(call, BUSY_RECHECK))
    elif (opening := next_opening(call=call, after=now)) is not None:
        _requeue(call, opening)
    else:
        _finish(call, CallStatus.NOAGENT)


# --- lead legs ------------------------------------------------------------------------------------


def _lead_event(
    call: Call, attempt: CallAttempt, event: Event, followups: list[Any]
) -> Instruction:
    now = timezone.now()
    if event.kind == EventKind.RECORDING:
        if event.recording_url and not call.recording_url:
            call.recording_url = event.recording_url
            call.save(update_fields=["recording_url"])
        return Instruction.nothing()
    if attempt.ended_at:
        return Instruction.nothing()
    if event.kind == EventKind.RINGING:
        _mark(attempt, ringing_at=attempt.ringing_at or now)
    elif event.kind == EventKind.ANSWERED:
        _answered(call, attempt, now)
    elif event.kind == EventKind.COMPLETED:
        if event.duration and not attempt.answered_at:
            _answered(
                call, attempt, now - timedelta(seconds=event.duration)
            )  # the answer event was lost
        if attempt.answered_at:
            duration = (
                event.duration
                if event.duration is not None
                else int((now - attempt.answered_at).total_seconds())
            )
            _end_attempt(attempt, AttemptOutcome.ANSWERED, followups, duration=duration)
            call.duration = duration
            _finish(call, CallStatus.ANSWER, save_also=["duration"])
        else:
            _lead_missed(call, attempt, AttemptOutcome.NOANSWER, followups)
    elif event.kind in EVENT_OUTCOME:
        _lead_missed(call, attempt, EVENT_OUTCOME[event.kind], followups)
    return Instruction.nothing()


def _answered(call: Call, attempt: CallAttempt, at: datetime) -> None:
    """The lead picked up: the call is answered (bridged and recording) from here on."""
    _mark(attempt, answered_at=at)
    call.status = CallStatus.ANSWER
    call.next_attempt_at = None
    if call.response_time is None:
        call.response_time = max(0, int((at - call.received_at).total_seconds()))
    call.save(update_fields=["status", "next_attempt_at", "response_time"])
    _log_on_commit(
        "call.lead_answered",
        call_id=call.pk,
        attempt_id=attempt.pk,
        agent_id=call.agent_id,
        response_time=call.response_time,
    )


def _lead_missed(
    call: Call, attempt: CallAttempt, outcome: str, followups: list[Any]
) -> None:
    """The lead did not answer: retry on the account's cadence, or end with the outcome."""
    _end_attempt(attempt, outcome, followups)
    for agent_leg in call.attempts_log.filter(leg=Leg.AGENT, ended_at__isnull=True):
        _end_attempt(agent_leg, AttemptOutcome.ACCEPTED, followups, hangup=True)
    config = dialing_settings(call.account_id)
    if call.status in FINAL:
        return
    if call.attempts >= config.lead_attempt_limit:
        _finish(call, LEAD_OUTCOME_STATUS[AttemptOutcome(outcome)])
        return
    cadence = list(config.retry_cadence or [0])
    delay = cadence[min(call.attempts, len(cadence) - 1)]
    call.agent = None
    _requeue(
        call,
        timezone.now() + _phone_time(call, timedelta(seconds=delay)),
        save_also=["agent"],
    )


# --- shared steps ---------------------------------------------------------------------------------


def _first_claimable(agents: list[User], now: datetime) -> list[User]:
    """The first agent, in routing order, this transaction can claim (a list of one, or none)."""
    for agent in agents:
        if agents_claim([agent], at=now):
            return [agent]
    return []


def _agent_attempt(call: Call, agent: User) -> CallAttempt:
    return CallAttempt.objects.create(
        call=call,
        leg=Leg.AGENT,
        round=call.rounds,
        agent=agent,
        number=agent.phone_number,
        provider=provider_for(is_test=call.is_test).name,
    )


def _phone_time(call: Call, wait: timedelta) -> timedelta:
    """``wait`` at the call's provider's time scale: the simulator's sped-up calls wait
    sped-up too; a real network waits the full time."""
    return wait * provider_for(is_test=call.is_test).time_scale


def _mark(attempt: CallAttempt, **moments: datetime) -> None:
    for name, value in moments.items():
        setattr(attempt, name, value)
    attempt.save(update_fields=list(moments))


def _end_attempt(
    attempt: CallAttempt,
    outcome: str,
    followups: list[Any],
    *,
    duration: int | None = None,
    hangup: bool = False,
) -> None:
    attempt.ended_at = timezone.now()
    attempt.outcome = attempt.outcome or outcome
    attempt.duration = duration if duration is not None else attempt.duration
    attempt.save(update_fields=["ended_at", "outcome", "duration"])
    _log_on_commit(
        "call.leg_ended",
        call_id=attempt.call_id,
        attempt_id=attempt.pk,
        leg=attempt.leg,
        agent_id=attempt.agent_id,
        outcome=attempt.outcome,
        duration=attempt.duration,
    )
    if hangup and attempt.dial_requested_at:
        provider = provider_named(attempt.provider)
        provider_id, attempt_id = attempt.provider_id, attempt.pk
        followups.append(
            lambda: provider.hangup(provider_id=provider_id, attempt_id=attempt_id)
        )


def _requeue(call: Call, when: datetime, *, save_also: list[str] | None = None) -> None:
    """Back to the queue until ``when``. A soon retry is handed to the broker with a countdown;
    a later one is left to the sweep, so no worker holds a task for minutes or days."""
    call.status = CallStatus.QUEUED
    call.next_attempt_at = when
    call.save(update_fields=["status", "next_attempt_at", *(save_also or [])])
    _log_on_commit("call.requeued", call_id=call.pk, due_at=when.isoformat())
    if when - timezone.now() <= HELD_BY_BROKER:
        transaction.on_commit(lambda: _dispatch(call.pk, at=when), robust=True)


def _finish(call: Call, status: str, *, save_also: list[str] | None = None) -> None:
    call.status = status
    call.ended_at = timezone.now()
    call.next_attempt_at = None
    call.save(
        update_fields=["status", "ended_at", "next_attempt_at", *(save_also or [])]
    )
    call_event_emit(call=call, type="call_completed")
    _log_on_commit(
        "call.ended",
        call_id=call.pk,
        status=status,
        duration=call.duration,
        response_time=call.response_time,
        agent_id=call.agent_id,
        lead_attempts=call.attempts,
        rounds=call.rounds,
    )


def _log_on_commit(event: str, **fields: Any) -> None:
    """Log a step of a call's life once it is committed: a rolled-back step never happened."""
    transaction.on_commit(lambda: log_event(log, event, **fields), robust=True)


def _queued(call: Call) -> None:
    log_event(
        log,
        "call.queued",
        call_id=call.pk,
        account_id=call.account_id,
        origin=call.origin,
        team_id=call.team_id,
        requested_agent_id=call.requested_agent_id,
        number=mask_phone(call.phone),
    )
    _dispatch(call.pk)


def _dispatch(call_id: int, at: datetime | None = None) -> None:
    """Hand a call to a worker. A broker that is down is logged, not raised: the call is
    stored, and the sweep dispatches it once the broker is back."""
    from calls.tasks import call_setup_task

    try:
        call_setup_task.apply_async(kwargs={"call_id": call_id}, eta=at, retry=False)
    except Exception as error:
        log_event(
            log,
            "call.dispatch_failed",
            level=logging.WARNING,
            call_id=call_id,
            error=f"{type(error).__name__}: {error}",
            then="the sweep dispatches it once the broker is back",
        )


def _dial_later(attempt_id: int) -> None:
    from calls.tasks import attempt_dial_task

    try:
        attempt_dial_task.apply_async(kwargs={"attempt_id": attempt_id}, retry=False)
    except Exception as error:
        log_event(
            log,
            "call.dial_dispatch_failed",
            level=logging.WARNING,
            attempt_id=attempt_id,
            error=f"{type(error).__name__}: {error}",
            then="the sweep dispatches it once the broker is back",
        )
