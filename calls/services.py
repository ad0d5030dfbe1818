"""Call setup: queue, offer to agents, connect the lead, retry, and end with a status.

Every step locks the call row and checks its state first, so a task delivered twice or
a provider event that arrives twice or late changes nothing it should not. A final
status (ANSWER, NOANSWER, BUSY, FAILED, CANCEL, NOAGENT) never changes again.
"""

from __future__ import annotations

import logging
from collections.abc import Sequence
from datetime import datetime, timedelta
from functools import partial
from typing import Any

from django.conf import settings
from django.db import DatabaseError, transaction
from django.db.models import DateTimeField, Exists, OuterRef, Q, QuerySet
from django.db.models.functions import Coalesce, Greatest
from django.utils import timezone

from accounts.models import Account, Team
from calls import media, signals, transcripts
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
from calls.payloads import call_event_emit
from calls.recordings import attempt_for_token, recording_link
from calls.routing import (
    agent_first_available,
    agent_is_free,
    agents_available,
    agents_claim,
    agents_on_duty,
    call_waiting_for,
    calls_waiting_before,
    free_agents_with_calls_waiting,
    next_opening,
)
from calls.telephony import PROVIDERS, provider_for, provider_named
from calls.telephony.base import (
    AgentDial,
    Event,
    EventKind,
    Instruction,
    LegStatus,
    TelephonyUnavailable,
)
from calls.workers import losses_take
from config.celery import publish_or_leave_to_sweep
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
# Agents on duty but all on calls: the call waits, and is handed to the first agent whose
# leg ends (``_hand_over``). As a fallback it is looked at again after this, then after
# as long again as it has waited, up to BUSY_RECHECK_MAX. The first wait exists only
# because phones are slow, so it runs at the provider's time scale (``_phone_time``).
BUSY_RECHECK = timedelta(seconds=5)
BUSY_RECHECK_MAX = timedelta(seconds=60)
# Retries due within this are handed to the broker with a countdown; later ones to the sweep.
HELD_BY_BROKER = timedelta(minutes=2)
# A setup or dial handed to the broker is sent again only when what held it was lost
# (``calls.workers``: a worker died, the broker restarted), never because it waits long in
# a queue; past this, it is sent again all the same (a loss nothing saw).
PENDING_AT_MOST = timedelta(minutes=10)
# An agent leg rung by its setup (not through the broker) and still not dialed after this
# was left by a worker that died on it: the sweep dials it.
UNDIALED_AFTER = timedelta(seconds=10)


def call_queue(
    *,
    account: Account,
    phone: str,
    received_at: datetime,
    origin: str = CallOrigin.LEAD,
    team: Team | None = None,
    requested_agent: User | None = None,
    vendor_agent_id: str = "",
    agent_number: str = "",
    **lead: Any,
) -> Call:
    """Queue a call for the pipeline; it is dispatched once the caller's transaction commits.
    With ``agent_number`` its agent is not a user: that number is rung for every round."""
    call = Call.objects.create(
        account=account,
        phone=phone,
        received_at=received_at,
        origin=origin,
        team=team,
        requested_agent=requested_agent,
        vendor_agent_id=vendor_agent_id,
        agent_number=agent_number,
        is_test=account.is_test,
        setup_dispatched_at=timezone.now(),
        **lead,
    )
    transaction.on_commit(lambda: _queued(call), robust=True)
    return call


def dialing_settings(account: Account) -> DialingSettings:
    """The account's dialing settings (read with it where it was selected with
    ``dialing_settings``), or the defaults."""
    try:
        return account.dialing_settings
    except DialingSettings.DoesNotExist:
        return DialingSettings(account=account)


def call_setup(*, call_id: int) -> None:
    """Start a round for a due queued call: offer it to the available agents. Safe to run twice."""
    now = timezone.now()
    with transaction.atomic():
        call = (
            Call.objects.select_for_update(of=("self",))
            .select_related("account__dialing_settings")
            .filter(pk=call_id)
            .first()
        )
        if (
            call is None
            or call.status != CallStatus.QUEUED
            or (
                call.next_attempt_at
                and call.next_attempt_at > now
                and not call.waiting_since  # handed over early: an agent just came free
            )
        ):
            return
        call.setup_dispatched_at = None
        config = dialing_settings(call.account)
        agents: Sequence[User | None]
        if call.agent_number:
            # An agent who is not a user: rung at once, no schedule or busy check.
            agents = [None]
        elif not call.waiting_since and calls_waiting_before(call=call):
            agents = []  # older calls wait for the next free agent: this one queues behind
        elif config.ring_mode == RingMode.SEQUENTIAL:
            first = agent_first_available(call=call, at=now)
            agents = [first] if first else []
        else:
            agents = agents_claim(agents_available(call=call, at=now), at=now)
        if not agents:
            _no_agent_now(call, config, now)
            return
        call.status = CallStatus.DIALING
        call.rounds += 1
        call.next_attempt_at = None
        call.waiting_since = None
        call.save(
            update_fields=[
                "status",
                "rounds",
                "next_attempt_at",
                "waiting_since",
                "setup_dispatched_at",
            ]
        )
        attempts = [_agent_attempt(call, agent) for agent in agents]
    for attempt in attempts:
        try:
            _ring_agent(attempt, call, config)
        except TelephonyUnavailable:
            _dial_later(attempt.pk)


def attempt_dial(*, attempt_id: int) -> None:
    """Ask the provider to ring an agent leg, once: a leg already requested is left alone."""
    attempt = (
        CallAttempt.objects.select_related("call__account__dialing_settings")
        .filter(pk=attempt_id, dial_requested_at__isnull=True, ended_at__isnull=True)
        .first()
    )
    if attempt is not None:
        _ring_agent(attempt, attempt.call, dialing_settings(attempt.call.account))


def _ring_agent(attempt: CallAttempt, call: Call, config: DialingSettings) -> None:
    """Ring an agent leg, once. The request is marked before the provider is asked (one
    conditional update: only the first of two deliveries gets to ring), so a redelivered
    task never rings twice; if the provider is unreachable the mark is taken back and
    TelephonyUnavailable raised for a retry. A provider that refuses the number ends the
    leg as FAILED."""
    if not CallAttempt.objects.filter(
        pk=attempt.pk, dial_requested_at__isnull=True, ended_at__isnull=True
    ).update(dial_requested_at=timezone.now()):
        return
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
            .select_related("account__dialing_settings")
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
        if call.status in FINAL or _agent_taken(call):
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
    *,
    call: Call,
    transcription: str = "",
    summary: str = "",
    turns: list[dict[str, Any]] | None = None,
) -> Call:
    """Store a call's transcription (and summary) and report ``transcription_ready``.
    Given ``turns`` (``{"side", "start", "end", "text"}``), the text is written from them
    in the interface's line format (``calls.transcripts``) and the turns kept; the apps
    above hear of it (``calls.signals.transcription_saved``) in this transaction."""
    call = (
        Call.objects.select_for_update(of=("self",))
        .select_related("account", "agent")
        .get(pk=call.pk)
    )
    if turns is not None:
        call.transcript_turns = turns
        transcription = transcripts.render(turns, transcripts.speaker_names(call))
    call.transcription, call.summary = transcription, summary or call.summary
    call.save(update_fields=["transcription", "summary", "transcript_turns"])
    call_event_emit(
        call=call,
        type="transcription_ready",
        transcription={"text": call.transcription, "summary": call.summary},
    )
    signals.transcription_saved.send(sender=Call, call_id=call.pk)
    return call


def calls_sweep(*, now: datetime | None = None) -> dict[str, int]:
    """Re-drive from the database whatever no task is driving: due queued calls with no
    setup pending, dials never requested, legs the provider went silent on (settled from
    the provider's record), free agents while calls wait, and recordings not stored.
    Returns how many of each."""
    now = now or timezone.now()
    # Pending setups and dials whose holder may have been lost are all sent again, once.
    lost = losses_take(now=now)
    counts = {
        "queued": 0,
        "undialed": 0,
        "silent": 0,
        "handed_over": 0,
        "answered_finished": 0,
        "recordings": 0,
    }
    # Due now, or soon enough for the broker to hold it until then (a retry, a schedule
    # opening): it is dialed on time, not at the first sweep after.
    # A call created moments ago with no setup pending is still being handed over by the
    # intake. A pending setup is sent again after a loss however young its call: the loss
    # is answered once, so a setup left out now would wait for PENDING_AT_MOST.
    due = (
        Call.objects.filter(status=CallStatus.QUEUED)
        .filter(
            Q(next_attempt_at__isnull=True)
            | Q(next_attempt_at__lte=now + HELD_BY_BROKER)
        )
        .exclude(
            setup_dispatched_at__isnull=True, created_at__gte=now - timedelta(seconds=5)
        )
    )
    if not lost:
        due = due.filter(
            Q(setup_dispatched_at__isnull=True)
            | Q(setup_dispatched_at__lt=now - PENDING_AT_MOST)
        )
    for call_id, due_at, pending in due.values_list(
        "pk", "next_attempt_at", "setup_dispatched_at"
    ).iterator():
        at = due_at if due_at and due_at > now else None
        # Marked first, and only if no one else marked it since it was read: a hand-over or
        # a sweep running beside this one leaves it alone while this one is pending.
        if Call.objects.filter(
            pk=call_id, status=CallStatus.QUEUED, setup_dispatched_at=pending
        ).update(setup_dispatched_at=at or now):
            _dispatch(call_id, at=at)
            counts["queued"] += 1
    undialed = CallAttempt.objects.filter(
        leg=Leg.AGENT, dial_requested_at__isnull=True, ended_at__isnull=True
    )
    if not lost:
        undialed = undialed.filter(
            Q(dial_dispatched_at__isnull=True, created_at__lt=now - UNDIALED_AFTER)
            | Q(dial_dispatched_at__lt=now - PENDING_AT_MOST)
        )
    for attempt_id in undialed.values_list("pk", flat=True):
        _dial_later(attempt_id)
        counts["undialed"] += 1
    for attempt_id in _silent_legs(now):
        try:
            attempt_settle(attempt_id=attempt_id, now=now)
        except TelephonyUnavailable as error:
            log_event(
                log,
                "call.leg_check_failed",
                level=logging.WARNING,
                attempt_id=attempt_id,
                error=str(error),
                then="the next sweep asks again",
            )
        counts["silent"] += 1
    counts["handed_over"] = len(calls_hand_over(now=now))
    counts["answered_finished"] = len(calls_answered_finish())
    counts["recordings"] = media.recordings_sweep(now=now)
    return counts


def calls_hand_over(*, now: datetime | None = None) -> list[int]:
    """Every free agent of an account with a call waiting is handed the oldest call they may
    take (at each schedule opening, and by every sweep). Returns the calls dispatched."""
    return _hand_over_each(free_agents_with_calls_waiting(at=now or timezone.now()))


def agents_on_duty_hand_over(
    *, agent_ids: list[int], account_ids: list[int]
) -> list[int]:
    """Agents who may have just come on duty (added, activated, given a phone, their accounts
    or hours changed, or an account's hours) are each handed, if free, the oldest waiting
    call they may take, in the caller's transaction, dispatched on commit. A failure here
    never undoes the change that came first: the sweep hands over as well."""
    if not agent_ids and not account_ids:
        return []
    agents = free_agents_with_calls_waiting(at=timezone.now()).filter(
        Q(pk__in=agent_ids) | Q(accounts__in=account_ids)
    )
    try:
        with transaction.atomic():
            return _hand_over_each(agents)
    except DatabaseError as error:
        log_event(
            log,
            "call.hand_over_failed",
            level=logging.WARNING,
            agent_ids=agent_ids,
            account_ids=account_ids,
            error=f"{type(error).__name__}: {error}",
            then="the sweep hands over",
        )
        return []


def _hand_over_each(agents: QuerySet[User]) -> list[int]:
    """``_hand_over`` to each of ``agents``, each in a transaction of its own (its locks held
    no longer than its own hand-over). Returns the calls dispatched."""
    handed = []
    for agent_id in agents.values_list("pk", flat=True):
        with transaction.atomic():
            call_id = _hand_over(agent_id)
        if call_id is not None:
            handed.append(call_id)
    return handed


def _silent_legs(now: datetime) -> list[int]:
    """Open legs, dialed, that nothing was heard of (no event, no check with the provider)
    for ``CALLS_LOST_AFTER_SECONDS`` at their provider's time scale."""
    last_heard = Greatest(
        *(
            Coalesce(name, "created_at", output_field=DateTimeField())
            for name in ("dial_requested_at", "ringing_at", "answered_at", "checked_at")
        )
    )
    lost_after = timedelta(seconds=settings.CALLS_LOST_AFTER_SECONDS)
    silent: list[int] = []
    for name in PROVIDERS:
        cutoff = now - lost_after * provider_named(name).time_scale
        silent += (
            CallAttempt.objects.filter(
                provider=name, ended_at__isnull=True, dial_requested_at__isnull=False
            )
            .annotate(last_heard=last_heard)
            .filter(last_heard__lt=cutoff)
            .values_list("pk", flat=True)
        )
    return silent


def attempt_settle(*, attempt_id: int, now: datetime | None = None) -> str:
    """Settle a leg we heard nothing of from the provider's own record: a leg still up is
    left up (and counted busy); one that ended is ended as it did; one the provider has no
    record of is hung up first, then ended. A lead's leg is never given up while it may
    still ring, so a retry never rings a lead who is already on the phone."""
    now = now or timezone.now()
    attempt = (
        CallAttempt.objects.filter(pk=attempt_id, ended_at__isnull=True)
        .select_related("call")
        .first()
    )
    if attempt is None:
        return "ended"
    provider = provider_named(attempt.provider)
    parent = (
        attempt.call.attempts_log.filter(
            leg=Leg.AGENT, outcome=AttemptOutcome.ACCEPTED, round=attempt.round
        )
        .values_list("provider_id", flat=True)
        .first()
        if attempt.leg == Leg.LEAD
        else None
    )
    status = provider.leg_status(
        provider_id=attempt.provider_id,
        attempt_id=attempt.pk,
        parent_provider_id=parent or "",
    )
    if (
        status is not None
        and status.answered
        and attempt.leg == Leg.LEAD
        and not attempt.answered_at
    ):
        call_event(Event(attempt.pk, EventKind.ANSWERED))  # its answer event was lost
    if status is not None and status.live:
        CallAttempt.objects.filter(pk=attempt.pk).update(checked_at=now)
        return "live"
    from_record = status is not None
    if status is None:
        # No record: never placed, or the provider cannot tell. Hang it up (and, for a
        # lead, the agent's leg it is dialed from) before giving up on it.
        provider.hangup(provider_id=attempt.provider_id, attempt_id=attempt.pk)
        if parent:
            provider.hangup(provider_id=parent, attempt_id=attempt.pk)
        if attempt.leg == Leg.LEAD and attempt.answered_at:
            # An answered lead is never settled as not answered: the call ended at the
            # last moment we know it was up.
            return _estimated_end(attempt)
        status = LegStatus(live=False, ended_by=EventKind.NO_ANSWER)
    assert status.ended_by is not None
    log_event(
        log,
        "call.leg_settled",
        call_id=attempt.call_id,
        attempt_id=attempt.pk,
        leg=attempt.leg,
        ended_by=status.ended_by.value,
        provider_record=from_record,
    )
    call_event(Event(attempt.pk, status.ended_by, duration=status.duration))
    return "ended"


def _estimated_end(attempt: CallAttempt) -> str:
    """End an answered lead leg the provider has no record of at the last moment we knew it
    was up; its call is marked ``end_estimated``."""
    answered_at = attempt.answered_at
    assert answered_at is not None
    duration = _seconds(answered_at, attempt.checked_at or answered_at)
    Call.objects.filter(pk=attempt.call_id).update(end_estimated=True)
    log_event(
        log,
        "call.end_estimated",
        level=logging.WARNING,
        call_id=attempt.call_id,
        attempt_id=attempt.pk,
        duration=duration,
        then="ended at the last moment known, the provider having no record",
    )
    call_event(Event(attempt.pk, EventKind.COMPLETED, duration=duration))
    return "ended"


def calls_answered_finish() -> list[int]:
    """Answered calls with no lead leg left up but no end (a leg ended behind the call's
    back): each is finished from its answered leg, so every answered call gets its end,
    duration and ``call_completed``. Returns the calls finished."""
    lead_leg_up = CallAttempt.objects.filter(
        call=OuterRef("pk"), leg=Leg.LEAD, ended_at__isnull=True
    )
    stuck = (
        Call.objects.filter(status=CallStatus.ANSWER, ended_at__isnull=True)
        .exclude(Exists(lead_leg_up))
        .values_list("pk", flat=True)
    )
    finished = []
    for call_id in stuck:
        with transaction.atomic():
            call = (
                Call.objects.select_for_update(of=("self",))
                .select_related("account")
                .filter(pk=call_id, status=CallStatus.ANSWER, ended_at__isnull=True)
                .first()
            )
            if call is None:
                continue
            leg = (
                call.attempts_log.filter(leg=Leg.LEAD, answered_at__isnull=False)
                .order_by("-answered_at")
                .first()
            )
            if leg is None or leg.answered_at is None or leg.ended_at is None:
                # Cannot be (ANSWER comes with a lead's answer): ended now, length unknown.
                call.duration, call.end_estimated = call.duration or 0, True
                _finish(
                    call, CallStatus.ANSWER, save_also=["duration", "end_estimated"]
                )
            else:
                measured = leg.duration is not None
                call.duration = (
                    leg.duration
                    if measured
                    else _seconds(leg.answered_at, leg.ended_at)
                )
                call.end_estimated = call.end_estimated or not measured
                _finish(
                    call,
                    CallStatus.ANSWER,
                    save_also=["duration", "end_estimated"],
                    at=leg.ended_at,
                )
        finished.append(call_id)
    return finished


def _hand_over(agent_id: int) -> int | None:
    """The agent is free: dispatch the oldest waiting call they may take, at once, on
    commit. The call is locked and marked dispatched in this transaction, so two agents
    freed at once never take the same call. Returns the call's id, if any."""
    agent = (
        User.objects.filter(pk=agent_id, is_active=True)
        .exclude(phone_number="")
        .first()
    )
    if agent is None or not agent_is_free(agent_id=agent_id):
        return None
    call = call_waiting_for(agent=agent, at=timezone.now())
    if call is None:
        return None
    call.setup_dispatched_at = timezone.now()
    call.save(update_fields=["setup_dispatched_at"])
    transaction.on_commit(partial(_dispatch, call.pk), robust=True)
    _log_on_commit("call.handed_over", call_id=call.pk, agent_id=agent_id)
    return call.pk


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
        if call.status != CallStatus.DIALING or _agent_taken(call):
            _end_attempt(attempt, AttemptOutcome.CANCELED, followups)
            return Instruction.end(TAKEN)
        if dialing_settings(call.account).press_one_required:
            return Instruction(say=f"{call.whisper} {PROMPT}".strip(), gather=True)
        return _accept(call, attempt, followups, say=call.whisper)
    if event.kind == EventKind.DIGITS:
        taken = _agent_taken(call)
        if (
            event.digits.startswith("1")
            and call.status == CallStatus.DIALING
            and not taken
        ):
            return _accept(call, attempt, followups)
        _end_attempt(
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
    if call.status != CallStatus.DIALING or _agent_taken(call):
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
            attempt = _agent_attempt(call, following)
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
    """Nobody can take the call now: wait for an agent (handed over the moment one is free or
    comes on duty; looked at again briefly if agents are on duty but busy, else at the next
    schedule opening), or end it as NOAGENT, as the account says."""
    if config.no_agent_policy == NoAgentPolicy.END:
        _finish(call, CallStatus.NOAGENT)
    elif agents_on_duty(call=call, at=now):
        # Wait for the hand-over; look again as a fallback, less often the longer it waits.
        call.waiting_since = call.waiting_since or now
        recheck = min(
            max(now - call.waiting_since, _phone_time(call, BUSY_RECHECK)),
            BUSY_RECHECK_MAX,
        )
        _requeue(call, now + recheck, save_also=["waiting_since"], dispatch=False)
    elif (opening := next_opening(call=call, after=now)) is not None:
        # Waiting for an agent too: one who comes on duty sooner is handed it at once.
        call.waiting_since = call.waiting_since or now
        _requeue(call, opening, save_also=["waiting_since"])
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
        answered = event.kind == EventKind.ANSWERED or (
            event.kind == EventKind.COMPLETED and event.duration
        )
        if answered and attempt.outcome != AttemptOutcome.ANSWERED:
            _late_answer(call, attempt, event, followups)
        return Instruction.nothing()
    if event.kind == EventKind.RINGING:
        _mark(attempt, ringing_at=attempt.ringing_at or now)
    elif event.kind == EventKind.ANSWERED:
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
                else _seconds(attempt.answered_at, now)
            )
            _end_attempt(attempt, AttemptOutcome.ANSWERED, followups, duration=duration)
            call.duration = duration
            _finish(call, CallStatus.ANSWER, save_also=["duration"])
            media.recording_make(attempt_id=attempt.pk)  # the simulator's, when spoken
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
        call.response_time = _seconds(call.received_at, at)
    call.save(update_fields=["status", "next_attempt_at", "response_time"])
    _log_on_commit(
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
    _log_on_commit(
        "call.late_event_reconciled",
        call_id=call.pk,
        attempt_id=attempt.pk,
        kind=event.kind.value,
        status_before=call.status,
    )
    if call.status in FINAL:
        return  # a final status never changes; the leg's record is corrected above
    for open_leg in call.attempts_log.filter(ended_at__isnull=True):
        _end_attempt(open_leg, AttemptOutcome.CANCELED, followups, hangup=True)
    accepted = call.attempts_log.filter(
        leg=Leg.AGENT, outcome=AttemptOutcome.ACCEPTED, round=attempt.round
    ).first()
    call.agent_id = accepted.agent_id if accepted else call.agent_id
    if call.response_time is None:
        call.response_time = _seconds(call.received_at, attempt.answered_at)
    call.duration = attempt.duration
    _finish(call, CallStatus.ANSWER, save_also=["agent", "response_time", "duration"])


def _lead_missed(
    call: Call, attempt: CallAttempt, outcome: str, followups: list[Any]
) -> None:
    """The lead did not answer: retry on the account's cadence, or end with the outcome."""
    _end_attempt(attempt, outcome, followups)
    for agent_leg in call.attempts_log.filter(leg=Leg.AGENT, ended_at__isnull=True):
        _end_attempt(agent_leg, AttemptOutcome.ACCEPTED, followups, hangup=True)
    config = dialing_settings(call.account)
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


def _agent_attempt(call: Call, agent: User | None) -> CallAttempt:
    """An agent leg: ``agent``'s phone, or with None the call's agent who is not a user."""
    return CallAttempt.objects.create(
        call=call,
        leg=Leg.AGENT,
        round=call.rounds,
        agent=agent,
        number=agent.phone_number if agent else call.agent_number,
        provider=provider_for(is_test=call.is_test).name,
    )


def _agent_taken(call: Call) -> bool:
    """Whether an agent took the call (pressed 1) and its lead is being dialed. A user who
    did is the call's agent; an agent who is not a user (``agent_number``) leaves no agent
    on the call, only their leg accepted in this round while the call is dialing."""
    if call.agent_id:
        return True
    return (
        bool(call.agent_number)
        and call.status == CallStatus.DIALING
        and call.attempts_log.filter(
            leg=Leg.AGENT, round=call.rounds, outcome=AttemptOutcome.ACCEPTED
        ).exists()
    )


def _seconds(since: datetime, until: datetime) -> int:
    """Whole seconds from ``since`` to ``until``, never negative (clocks disagree)."""
    return max(0, int((until - since).total_seconds()))


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
    if attempt.leg == Leg.AGENT and attempt.agent_id:
        _hand_over(attempt.agent_id)
    if hangup and attempt.dial_requested_at:
        provider = provider_named(attempt.provider)
        provider_id, attempt_id = attempt.provider_id, attempt.pk
        followups.append(
            lambda: provider.hangup(provider_id=provider_id, attempt_id=attempt_id)
        )


def _requeue(
    call: Call,
    when: datetime,
    *,
    save_also: list[str] | None = None,
    dispatch: bool = True,
) -> None:
    """Back to the queue until ``when``. A soon retry is handed to the broker with a countdown;
    a later one is left to the sweep, so no worker holds a task for minutes or days."""
    call.status = CallStatus.QUEUED
    call.next_attempt_at = when
    dispatch = dispatch and when - timezone.now() <= HELD_BY_BROKER
    call.setup_dispatched_at = when if dispatch else None
    call.save(
        update_fields=[
            "status",
            "next_attempt_at",
            "setup_dispatched_at",
            *(save_also or []),
        ]
    )
    _log_on_commit("call.requeued", call_id=call.pk, due_at=when.isoformat())
    if dispatch:
        transaction.on_commit(lambda: _dispatch(call.pk, at=when), robust=True)


def _finish(
    call: Call,
    status: str,
    *,
    save_also: list[str] | None = None,
    at: datetime | None = None,
) -> None:
    call.status = status
    call.ended_at = at or timezone.now()
    call.next_attempt_at = None
    call.setup_dispatched_at = None
    call.waiting_since = None
    call.save(
        update_fields=[
            "status",
            "ended_at",
            "next_attempt_at",
            "setup_dispatched_at",
            "waiting_since",
            *(save_also or []),
        ]
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
    """Hand a call to a worker; with the broker down the sweep dispatches it later."""
    from calls.tasks import call_setup_task

    if not publish_or_leave_to_sweep(
        call_setup_task,
        kwargs={"call_id": call_id},
        event="call.dispatch_failed",
        log=log,
        eta=at,
    ):
        # No setup is pending after all: the sweep's next run dispatches it.
        Call.objects.filter(pk=call_id, status=CallStatus.QUEUED).update(
            setup_dispatched_at=None
        )


def _dial_later(attempt_id: int) -> None:
    """Hand an agent leg's dial to a worker, marked pending once sent; with the broker down
    (or the mark not made) the sweep dials it later."""
    from calls.tasks import attempt_dial_task

    if publish_or_leave_to_sweep(
        attempt_dial_task,
        kwargs={"attempt_id": attempt_id},
        event="call.dial_dispatch_failed",
        log=log,
    ):
        CallAttempt.objects.filter(pk=attempt_id).update(
            dial_dispatched_at=timezone.now()
        )
