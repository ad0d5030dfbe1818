"""The simulator: places no real calls, plays a provider's callbacks through the same
handler a real provider's callbacks reach (``calls.services.call_event``).

Outcomes follow the last four digits of the number dialed (CONTRACT.md, Simulator):
``0000`` never answers, ``0001`` busy, ``0002`` fails, ``0003`` answers but (agent) never
presses 1 or (lead) hangs up at once; anything else answers after about 2 s, the agent
presses 1, the lead talks for as long as the call's conversation takes to say
(``calls.telephony.conversation``), so its duration and its recording agree. ``SIMULATOR_TIME_SCALE`` (``providers.clock``) scales every delay,
and the pipeline's own waits on a simulated call (``Provider.time_scale``).

Like a real switch it keeps its own record of every leg (``calls.models.SimulatedLeg``, in
the database, so it outlives a cache flush and a broker lost with its tasks): when it was
answered and when and how it ended. The sweep reads it (``leg_status``) when callbacks
went missing, as it would read Twilio's call records. ``SIMULATOR_CALLBACK_DELAY``
delivers the status callbacks that many (real) seconds late, as a slow provider would.
"""

from __future__ import annotations

import logging
import math
import threading
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from datetime import datetime, timedelta
from functools import partial
from typing import Any

from django.conf import settings
from django.db import DatabaseError, connections, router, transaction
from django.db.models import OuterRef, Q, QuerySet, Subquery
from django.utils import timezone

from calls.recordings import recording_link
from core.compiled import CompiledQuery
from core.handover import publish_or_leave_to_sweep
from providers.clock import real_seconds, time_scale
from providers.telephony import (
    AgentDial,
    Event,
    EventKind,
    Instruction,
    LegStatus,
    Provider,
)

log = logging.getLogger(__name__)

ANSWER_AFTER = 2.0
FAIL_AFTER = 0.5
GATHER_TIMEOUT = 5.0
LEAD_RING_SECONDS = 30.0
SECONDS_PER_WHISPER_CHARACTER = 1 / 15
# How long the switch waits for the answer to a webhook (an agent picking up, a key
# pressed) before it hangs up the leg. A network timeout: real seconds, never scaled.
WEBHOOK_TIMEOUT = 15.0
ENDINGS = frozenset(
    {EventKind.NO_ANSWER, EventKind.BUSY, EventKind.FAILED, EventKind.COMPLETED}
)


def talk_seconds(attempt_id: int) -> int:
    """A lead's talk time: as long as the conversation its call's recording carries takes
    to say (about 30 to 50 s), fixed per call so a run can be replayed, and the same
    whether or not the recording is spoken (``SIMULATOR_SPEECH``). Within CONTRACT.md's
    30 to 300 s."""
    from calls.models import CallAttempt
    from calls.telephony.conversation import call_script
    from calls.telephony.speech import seconds_to_say

    attempt = CallAttempt.objects.select_related("call__account", "call__agent").get(
        pk=attempt_id
    )
    return min(max(30, math.ceil(seconds_to_say(call_script(attempt.call)))), 300)


class SimulatorProvider(Provider):
    name = "simulator"

    @property
    def time_scale(self) -> float:
        return time_scale()

    def dial_agent(self, dial: AgentDial) -> str:
        # The switch's record of the leg is one statement (``_dialing``): whole or not at
        # all without a transaction of its own.
        with _dialing(dial.attempt_id):
            self._ring(
                dial.attempt_id,
                dial.number,
                no_answer_after=float(dial.ring_seconds),
                agent=True,
            )
        return f"SIM-{dial.attempt_id}"

    def hangup(self, *, provider_id: str, attempt_id: int) -> None:
        _at(0, Event(attempt_id, EventKind.COMPLETED))

    def leg_status(
        self, *, provider_id: str, attempt_id: int, parent_provider_id: str = ""
    ) -> LegStatus | None:
        record = _LEG_RECORD.first(attempt_id=attempt_id)
        if record is None:
            return None  # never placed
        now = timezone.now()
        answered = record.answered_at is not None and record.answered_at <= now
        if record.ends_at is not None and record.ends_at <= now:
            return LegStatus(
                live=False,
                answered=answered,
                ended_by=EventKind(record.ended_by),
                duration=record.duration,
            )
        return LegStatus(live=True, answered=answered)

    def follow(self, *, attempt_id: int, instruction: Instruction) -> None:
        if not (instruction.connect or instruction.gather or instruction.hangup):
            return  # nothing to do on the leg (most callbacks): no need to look it up
        if instruction.gather:
            # The leg's number and the switch's record of it, in one read.
            leg = _LEG_WITH_RECORD.get(attempt_id=attempt_id)
            if _over(leg.switch_ends_at):
                return  # the switch hung up this leg already (our answer came too late)
            number = leg.number
        elif _ended(attempt_id):
            return  # the switch hung up this leg already (our answer came too late)
        if instruction.connect and instruction.lead_attempt_id is not None:
            self._connect(attempt_id, instruction)
        elif instruction.gather:
            listen = (
                ANSWER_AFTER / 2 + len(instruction.say) * SECONDS_PER_WHISPER_CHARACTER
            )
            if number.endswith("0003"):
                _at(
                    listen + GATHER_TIMEOUT,
                    Event(
                        attempt_id,
                        EventKind.COMPLETED,
                        duration=int(listen + GATHER_TIMEOUT),
                    ),
                )
            else:
                _at(
                    listen,
                    Event(attempt_id, EventKind.DIGITS, digits="1"),
                    webhook=True,
                )
        elif instruction.hangup:
            _at(0, Event(attempt_id, EventKind.COMPLETED))

    def _ring(
        self, attempt_id: int, number: str, *, no_answer_after: float, agent: bool
    ) -> None:
        _at(0, Event(attempt_id, EventKind.RINGING))
        match number[-4:]:
            case "0000":
                _at(no_answer_after, Event(attempt_id, EventKind.NO_ANSWER))
            case "0001":
                _at(FAIL_AFTER, Event(attempt_id, EventKind.BUSY))
            case "0002":
                _at(FAIL_AFTER, Event(attempt_id, EventKind.FAILED))
            case _:
                # An agent answering is a webhook (the switch asks what to play); a
                # lead answering is a status callback.
                _at(ANSWER_AFTER, Event(attempt_id, EventKind.ANSWERED), webhook=agent)

    @transaction.atomic  # the switch's record whole or not at all (``_at``)
    def _connect(self, agent_attempt_id: int, instruction: Instruction) -> None:
        """Dial the lead into the agent's leg; the agent's leg ends when the lead's does."""
        lead_id = instruction.lead_attempt_id
        assert lead_id is not None
        with _dialing(lead_id):
            self._connect_lead(agent_attempt_id, lead_id, instruction.number)

    def _connect_lead(self, agent_attempt_id: int, lead_id: int, number: str) -> None:
        self._ring(lead_id, number, no_answer_after=LEAD_RING_SECONDS, agent=False)
        match number[-4:]:
            case "0000":
                ends = LEAD_RING_SECONDS
            case "0001" | "0002":
                ends = FAIL_AFTER
            case "0003":
                ends = ANSWER_AFTER + 1
                _at(
                    ends,
                    Event(lead_id, EventKind.COMPLETED, duration=1),
                    Event(agent_attempt_id, EventKind.COMPLETED),
                )
                return
            case _:
                talk = talk_seconds(lead_id)
                ends = ANSWER_AFTER + talk
                # The lead's leg, its recording and the agent's leg end at one moment:
                # one callback task for the three (``_at``).
                _at(
                    ends,
                    Event(lead_id, EventKind.COMPLETED, duration=talk),
                    Event(
                        lead_id,
                        EventKind.RECORDING,
                        recording_url=recording_link(lead_id),
                    ),
                    Event(agent_attempt_id, EventKind.COMPLETED),
                )
                return
        _at(ends, Event(agent_attempt_id, EventKind.COMPLETED))


def _leg_record(attempt_id: int) -> QuerySet[Any]:
    from calls.models import SimulatedLeg

    return SimulatedLeg.objects.filter(attempt_id=attempt_id)


# Compiled once (core/compiled.py): read at every callback that asks what to do next.
_LEG_RECORD = CompiledQuery(_leg_record, "attempt_id")


# What the switch's record of a leg keeps besides its dials (``_record``'s changes).
RECORD_FIELDS = ("answered_at", "ends_at", "ended_by", "duration")


def _log_dial(attempt_id: int, changes: dict[str, Any] | None = None) -> None:
    """The switch's record of a leg exists from the moment it is dialed, and counts its
    dials (the fault tests' witness: a leg is never dialed twice), with what the switch
    will do on the leg (``changes``, as ``_record`` makes them: on a leg dialed again,
    only while its record is live). One statement, an upsert (PostgreSQL and SQLite
    alike), where ``get_or_create`` and the record's updates took six and more."""
    from calls.models import SimulatedLeg

    changes = changes or {}
    connection = connections[router.db_for_write(SimulatedLeg)]
    table = connection.ops.quote_name(SimulatedLeg._meta.db_table)
    fields = {field.name: field for field in SimulatedLeg._meta.concrete_fields}
    values = [
        fields[name].get_db_prep_save(changes.get(name), connection)
        if name in changes
        else (None if name != "ended_by" else "")
        for name in RECORD_FIELDS
    ]
    # On a leg dialed again, its record takes the changes only while it is live (as
    # ``_record``'s conditional update does), judged on the record as it was.
    live = f'({table}."ends_at" IS NULL OR {table}."ends_at" > %s)'
    updates = "".join(
        f', "{name}" = CASE WHEN {live} THEN excluded."{name}" ELSE {table}."{name}" END'
        for name in RECORD_FIELDS
        if name in changes
    )
    now = fields["ends_at"].get_db_prep_save(timezone.now(), connection)
    with connection.cursor() as cursor:
        cursor.execute(
            f"INSERT INTO {table} "  # noqa: S608  (no value is spliced in)
            '("attempt_id", "dials", "answered_at", "ends_at", "ended_by", "duration") '
            "VALUES (%s, 1, %s, %s, %s, %s) "
            f'ON CONFLICT ("attempt_id") DO UPDATE SET "dials" = {table}."dials" + 1'
            f"{updates}",
            [attempt_id, *values, *([now] * updates.count("%s"))],
        )


class _Dial:
    """A leg being dialed: what ``_at`` would write to its record, and the callbacks it
    would send, gathered until the record is written (``_dialing``)."""

    def __init__(self, attempt_id: int) -> None:
        self.attempt_id = attempt_id
        self.changes: dict[str, Any] = {}
        self.sends: list[Callable[[], object]] = []


_dials = threading.local()


@contextmanager
def _dialing(attempt_id: int) -> Iterator[None]:
    """Dial the leg ``attempt_id``: the record changes ``_at`` makes for it inside are
    gathered and written with its dial in one upsert (``_log_dial``), and the callbacks
    ``_at`` sends inside (on commit) are sent after it: none is handled before the
    switch's record says what it is for."""
    dial = _dials.current = _Dial(attempt_id)
    try:
        yield
    finally:
        _dials.current = None
    _log_dial(attempt_id, dial.changes)
    for send in dial.sends:
        transaction.on_commit(send, robust=True)


def _ended(attempt_id: int) -> bool:
    status = SimulatorProvider().leg_status(provider_id="", attempt_id=attempt_id)
    return status is not None and not status.live


def _over(ends_at: datetime | None) -> bool:
    """Whether a leg whose record ends at ``ends_at`` has ended (as ``leg_status`` says)."""
    return ends_at is not None and ends_at <= timezone.now()


def _leg_with_record(attempt_id: int) -> QuerySet[Any]:
    from calls.models import CallAttempt, SimulatedLeg

    record = SimulatedLeg.objects.filter(attempt_id=OuterRef("pk"))
    return (
        CallAttempt.objects.filter(pk=attempt_id)
        .annotate(switch_ends_at=Subquery(record.values("ends_at")[:1]))
        .only("pk", "number")
    )


# Compiled once (core/compiled.py): read when the switch gathers an agent's key.
_LEG_WITH_RECORD = CompiledQuery(_leg_with_record, "attempt_id")


def _record(event: Event, due: datetime, *, webhook: bool) -> None:
    """Write what the switch will do on the leg to its record, in one conditional update
    (callbacks of one leg run concurrently: the update locks the row and checks its
    condition against the latest version). A leg that ended stays ended; a webhook not
    answered within ``WEBHOOK_TIMEOUT`` ends the leg, unless our answer (which schedules
    what follows) moves its end later."""
    from calls.models import SimulatedLeg

    if not (event.kind == EventKind.ANSWERED or event.kind in ENDINGS or webhook):
        return  # ringing, a recording: nothing the record keeps
    changes: dict[str, object] = {}
    if event.kind == EventKind.ANSWERED:
        changes["answered_at"] = due
    if event.kind in ENDINGS:
        changes.update(ends_at=due, ended_by=event.kind.value, duration=event.duration)
    elif webhook:
        changes.update(
            ends_at=due + timedelta(seconds=WEBHOOK_TIMEOUT),
            ended_by=EventKind.COMPLETED.value,
            duration=None,
        )
    dial = getattr(_dials, "current", None)
    if dial is not None and dial.attempt_id == event.attempt_id:
        dial.changes.update(changes)  # written with the dial (``_dialing``)
        return
    live = Q(ends_at__isnull=True) | Q(ends_at__gt=timezone.now())
    if SimulatedLeg.objects.filter(live, attempt_id=event.attempt_id).update(**changes):
        return
    # No live record: one that ended stays as it is; a leg never placed gets its record.
    SimulatedLeg.objects.get_or_create(attempt_id=event.attempt_id, defaults=changes)


def _at(seconds: float, *events: Event, webhook: bool = False) -> None:
    """Deliver ``events`` after ``seconds`` of simulated time, in order, through a worker; a
    status callback (not a ``webhook``) ``SIMULATOR_CALLBACK_DELAY`` real seconds later
    still. Events sent at one moment travel in one task (a task's fixed cost in the worker
    was more than most events' handling). The switch's record is written at once and the
    callbacks sent once the caller's transaction commits: a dial or connect (one
    transaction) interrupted half-way (its worker killed, or its task cancelled when the
    worker lost the broker) leaves no record of a leg that rings for ever, only a leg never
    placed."""
    from calls.tasks import simulator_event_task, simulator_events_task

    countdown = real_seconds(seconds)
    due = timezone.now() + timedelta(seconds=countdown)
    for event in events:
        _record(event, due, webhook=webhook)
    if not webhook:
        countdown += float(settings.SIMULATOR_CALLBACK_DELAY)
    sent = [
        {
            "attempt_id": event.attempt_id,
            "kind": event.kind.value,
            "digits": event.digits,
            "duration": event.duration,
            "recording_url": event.recording_url,
        }
        for event in events
    ]
    task, kwargs = (
        (simulator_event_task, {**sent[0], "due": due.timestamp()})
        if len(sent) == 1
        else (simulator_events_task, {"events": sent, "due": due.timestamp()})
    )
    # A callback that cannot be sent (the broker is down) is lost, as a real provider's
    # failed webhook is: the switch's record says what happened, and the sweep reads it.
    send: Callable[[], object] = partial(
        publish_or_leave_to_sweep,
        task,
        kwargs=kwargs,
        event="simulator.callback_lost",
        log=log,
        then="the sweep settles the leg from the switch's record",
        countdown=countdown or None,
    )
    if not countdown and all(event.kind == EventKind.RINGING for event in events):
        send = partial(_ring_now, events, send)
    dial = getattr(_dials, "current", None)
    if dial is not None:
        dial.sends.append(send)  # once the dial's record is written (``_dialing``)
        return
    transaction.on_commit(send, robust=True)


def _ring_now(events: tuple[Event, ...], send: Callable[[], object]) -> None:
    """A leg rings the moment it is dialed: its callback, due now, is delivered here, once
    the dial commits, instead of through a task (a ring is one conditional update of its
    leg, a task's fixed cost some ten times that). If the database fails it, it is sent
    as a task after all, which retries."""
    from calls.services import call_event

    try:
        for event in events:
            call_event(event)
    except DatabaseError:
        send()
