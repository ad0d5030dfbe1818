"""Recovery: the periodic sweep re-drives from the database whatever no task is driving,
and settles legs the provider went silent on from the provider's own record.
"""

from __future__ import annotations

import logging
from collections.abc import Callable
from contextlib import nullcontext
from datetime import datetime, timedelta
from typing import Any, TypeVar

from django.conf import settings
from django.db import connection, transaction
from django.db.models import DateTimeField, Exists, OuterRef, Q
from django.db.models.functions import Coalesce, Greatest
from django.utils import timezone

from calls import media
from calls.models import AttemptOutcome, Call, CallAttempt, CallStatus, Leg
from calls.pipeline import broker
from calls.pipeline.events import call_event, locked_call
from calls.pipeline.fair import SetupPriority
from calls.pipeline.legs import lead_not_placed
from calls.pipeline.transitions import call_finish, seconds_between
from calls.pipeline.waiting import calls_hand_over_counted
from calls.workers import losses_take
from core.handover import HELD_BY_BROKER
from core.logging import log_event
from core.sweeps import Tally, each
from providers import KINDS, telephony_named
from providers.telephony import Event, EventKind, LegStatus, TelephonyUnavailable

T = TypeVar("T")
# The pipeline logs as the service layer it is (the name operators filter on).
log = logging.getLogger("calls.services")


# A setup or dial handed to the broker is sent again only when what held it was lost
# (``calls.workers``: a worker died, the broker restarted), never because it waits long in
# a queue; past this, it is sent again all the same (a loss nothing saw).
PENDING_AT_MOST = timedelta(minutes=10)
# An agent leg rung by its setup (not through the broker) and still not dialed after this
# was left by a worker that died on it: the sweep dials it.
UNDIALED_AFTER = timedelta(seconds=10)


def calls_sweep(*, now: datetime | None = None) -> dict[str, int]:
    """Re-drive from the database whatever no task is driving: due queued calls with no
    setup pending, dials never requested, legs the provider went silent on (settled from
    the provider's record), free agents while calls wait, answered calls left without an
    end, and recordings not stored. Each item in its own guard (``core.sweeps.each``: one
    that keeps failing is set aside for a person) and each part too, so nothing one call
    does stops the others. Returns how many of each, and how many items and parts failed."""
    now = now or timezone.now()
    counts = {
        "queued": 0,
        "undialed": 0,
        "silent": 0,
        "handed_over": 0,
        "answered_finished": 0,
        "recordings": 0,
        "failed": 0,
    }
    # Pending setups and dials whose holder may have been lost are all sent again, once.
    lost = bool(_part(counts, "losses", lambda: losses_take(now=now)))
    _part(counts, "queued", lambda: _queued_sweep(now, lost))
    _part(counts, "undialed", lambda: _undialed_sweep(now, lost))
    _part(counts, "silent", lambda: _silent_sweep(now))
    _part(counts, "handed_over", lambda: _done(*calls_hand_over_counted(now=now)))
    _part(counts, "answered_finished", lambda: _done(*_answered_finish_counted()))
    _part(counts, "recordings", lambda: media.recordings_sweep(now=now))
    return counts


def _part(counts: dict[str, int], name: str, run: Callable[[], T]) -> T | None:
    """Run one part of the sweep in its own guard: its error is logged (its type, never
    its data) and counted, and the sweep goes on with the next part. Its count (a number,
    or a ``Tally`` whose failed items are counted too) is added to ``counts[name]``."""
    guard = transaction.atomic() if connection.in_atomic_block else nullcontext()
    try:
        with guard:
            result = run()
    except Exception as error:
        counts["failed"] += 1
        log_event(
            log,
            "calls.sweep_part_failed",
            level=logging.ERROR,
            part=name,
            error=type(error).__name__,
            then="the other parts go on; the next sweep runs it again",
        )
        log.debug("calls sweep part %s failed", name, exc_info=True)
        return None
    if isinstance(result, Tally):
        counts["failed"] += result.failed
        counts[name] = counts.get(name, 0) + result.handled
    elif isinstance(result, int) and not isinstance(result, bool) and name in counts:
        counts[name] += result
    return result


def _done(done: list[int], tally: Tally) -> Tally:
    """A part's tally counting what it did (``done``) rather than the items it handled."""
    return Tally(handled=len(done), failed=tally.failed, set_aside=tally.set_aside)


def _queued_sweep(now: datetime, lost: bool) -> Tally:
    """Dispatch due queued calls with no setup pending (or one whose holder was lost)."""
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
    dispatched = 0

    def dispatch(row: tuple[int, datetime | None, datetime | None, int, int]) -> None:
        nonlocal dispatched
        call_id, due_at, pending, account_id, rounds = row
        at = due_at if due_at and due_at > now else None
        # Marked first, and only if no one else marked it since it was read: a hand-over or
        # a sweep running beside this one leaves it alone while this one is pending.
        if Call.objects.filter(
            pk=call_id, status=CallStatus.QUEUED, setup_dispatched_at=pending
        ).update(setup_dispatched_at=at or now):
            broker.dispatch_setup(
                call_id,
                at=at,
                account_id=account_id,
                priority=SetupPriority.RETRY if rounds else SetupPriority.FRESH,
            )
            dispatched += 1

    tally = each(
        sweep="calls.queued",
        items=due.values_list(
            "pk", "next_attempt_at", "setup_dispatched_at", "account_id", "rounds"
        ).iterator(),
        handle=dispatch,
        key=lambda row: row[0],
    )
    return Tally(handled=dispatched, failed=tally.failed, set_aside=tally.set_aside)


def _undialed_sweep(now: datetime, lost: bool) -> Tally:
    """Dial agent legs whose dial was never requested (or whose dial task was lost)."""
    undialed = CallAttempt.objects.filter(
        leg=Leg.AGENT, dial_requested_at__isnull=True, ended_at__isnull=True
    )
    if not lost:
        undialed = undialed.filter(
            Q(dial_dispatched_at__isnull=True, created_at__lt=now - UNDIALED_AFTER)
            | Q(dial_dispatched_at__lt=now - PENDING_AT_MOST)
        )
    return each(
        sweep="calls.undialed",
        items=list(undialed.values_list("pk", flat=True)),
        handle=broker.dispatch_dial,
    )


def _silent_sweep(now: datetime) -> Tally:
    """Settle the legs the provider went silent on from its own record."""

    def settle(attempt_id: int) -> None:
        try:
            attempt_settle(attempt_id=attempt_id, now=now)
        except TelephonyUnavailable as error:
            # The provider, not this leg: no failure of the leg, asked again next time.
            log_event(
                log,
                "call.leg_check_failed",
                level=logging.WARNING,
                attempt_id=attempt_id,
                error=str(error),
                then="the next sweep asks again",
            )

    return each(sweep="calls.silent", items=_silent_legs(now), handle=settle)


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
    for name in KINDS["telephony"].choices:
        cutoff = now - lost_after * telephony_named(name).time_scale
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
    provider = telephony_named(attempt.provider)
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
        if attempt.leg == Leg.LEAD and not (attempt.ringing_at or attempt.checked_at):
            # Never heard of and no record: the provider never dialed it.
            return _lead_leg_not_placed(attempt.pk)
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


def _lead_leg_not_placed(attempt_id: int) -> str:
    """End a lead leg the provider never placed: no dial, no attempt (``legs``)."""
    followups: list[Any] = []
    with transaction.atomic():
        call = locked_call(attempt_id)
        attempt = (
            CallAttempt.objects.select_for_update()
            .filter(
                pk=attempt_id,
                ended_at__isnull=True,
                ringing_at__isnull=True,
                answered_at__isnull=True,
            )
            .first()
        )
        if call is None or attempt is None:
            return "ended"  # an event came meanwhile: it is no longer ours to settle
        attempt.call = call
        lead_not_placed(call, attempt, followups)
    for followup in followups:
        followup()
    return "ended"


def _estimated_end(attempt: CallAttempt) -> str:
    """End an answered lead leg the provider has no record of at the last moment we knew it
    was up; its call is marked ``end_estimated``."""
    answered_at = attempt.answered_at
    assert answered_at is not None
    duration = seconds_between(answered_at, attempt.checked_at or answered_at)
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
    return _answered_finish_counted()[0]


def _answered_finish_counted() -> tuple[list[int], Tally]:
    """``calls_answered_finish``, each call in its own guard; with the sweep's tally."""
    lead_leg_up = CallAttempt.objects.filter(
        call=OuterRef("pk"), leg=Leg.LEAD, ended_at__isnull=True
    )
    stuck = (
        Call.objects.filter(status=CallStatus.ANSWER, ended_at__isnull=True)
        .exclude(Exists(lead_leg_up))
        .values_list("pk", flat=True)
    )
    finished: list[int] = []

    def finish(call_id: int) -> None:
        if _answered_finish(call_id):
            finished.append(call_id)

    tally = each(sweep="calls.answered_finished", items=list(stuck), handle=finish)
    return finished, tally


def _answered_finish(call_id: int) -> bool:
    """Finish one answered call left without an end, from its answered lead leg."""
    with transaction.atomic():
        call = (
            Call.objects.select_for_update(of=("self",))
            .select_related("account")
            .filter(pk=call_id, status=CallStatus.ANSWER, ended_at__isnull=True)
            .first()
        )
        if call is None:
            return False
        leg = (
            call.attempts_log.filter(leg=Leg.LEAD, answered_at__isnull=False)
            .order_by("-answered_at")
            .first()
        )
        if leg is None or leg.answered_at is None or leg.ended_at is None:
            # Cannot be (ANSWER comes with a lead's answer): ended now, length unknown.
            call.duration, call.end_estimated = call.duration or 0, True
            call_finish(
                call, CallStatus.ANSWER, save_also=["duration", "end_estimated"]
            )
        else:
            measured = leg.duration is not None
            call.duration = (
                leg.duration
                if measured
                else seconds_between(leg.answered_at, leg.ended_at)
            )
            call.end_estimated = call.end_estimated or not measured
            call_finish(
                call,
                CallStatus.ANSWER,
                save_also=["duration", "end_estimated"],
                at=leg.ended_at,
            )
    return True
