"""Which agents may be offered a call now, fairest first, and when one next may be."""

from __future__ import annotations

import zoneinfo
from collections import defaultdict
from dataclasses import dataclass
from datetime import UTC, datetime, time, timedelta

from django.db.models import Exists, F, OuterRef, Prefetch, Q, QuerySet, Subquery

from accounts.models import Account, AccountScheduleDay
from accounts.schedules import is_open
from calls.models import Call, CallAttempt, CallStatus
from core.compiled import CompiledQuery
from users.models import User, UserScheduleDay

# How many candidates ``agent_first_available`` reads first (then twice as many each time).
FIRST_BATCH = 8


def agents_available(
    *, call: Call, at: datetime, exclude: set[int] | frozenset[int] = frozenset()
) -> list[User]:
    """Active agents of the call's account (and team) with a phone, in their schedule at
    ``at``, not on another leg now; least recently offered a call first."""
    free = _free(call, exclude)
    return _in_schedule(list(free), call.account, at)


def agent_first_available(
    *, call: Call, at: datetime, exclude: set[int] | frozenset[int] = frozenset()
) -> User | None:
    """The first agent ``agents_available`` would list, claimed by this transaction (see
    ``agents_claim``), or None. Sequential ringing needs no more than that one: candidates
    are read a few at a time, fairest first, so with hundreds of agents a setup builds a
    handful of them, not every one."""
    offset, size = 0, FIRST_BATCH
    while True:
        batch = _free_batch(call, exclude, offset, offset + size)
        for agent in _in_schedule(batch, call.account, at):
            if _claim_one(agent.pk):
                return agent
        if len(batch) < size:
            return None
        offset, size = offset + size, size * 2


def agents_claim(agents: list[User], *, at: datetime) -> list[User]:
    """The agents of ``agents`` this transaction may offer a call to: their rows locked
    (rows another setup holds are skipped) and, seen after the lock, still on no other leg.
    Two calls set up at once never ring the same agent."""
    ids = [agent.pk for agent in agents]
    locked = set(
        User.objects.select_for_update(skip_locked=True)
        .filter(pk__in=ids)
        .values_list("pk", flat=True)
    )
    busy = set(
        CallAttempt.objects.filter(
            agent_id__in=locked, ended_at__isnull=True
        ).values_list("agent_id", flat=True)
    )
    return [agent for agent in agents if agent.pk in locked and agent.pk not in busy]


def _claim_one(agent_id: int) -> bool:
    """``agents_claim`` of one agent, in the same two statements (the lock, then the look
    at their legs, which must see what committed before the lock was taken), each
    compiled once (``_LOCK_AGENT``, ``_AGENT_BUSY``)."""
    return _LOCK_AGENT.exists(agent_id=agent_id) and not _AGENT_BUSY.exists(
        agent_id=agent_id
    )


# Compiled once (core/compiled.py): a setup runs them for every agent it tries.
_LOCK_AGENT = CompiledQuery(
    lambda agent_id: User.objects.select_for_update(skip_locked=True).filter(
        pk=agent_id
    ),
    "agent_id",
)
_AGENT_BUSY = CompiledQuery(
    lambda agent_id: CallAttempt.objects.filter(
        agent_id=agent_id, ended_at__isnull=True
    ),
    "agent_id",
)


def agents_on_duty(*, call: Call, at: datetime) -> bool:
    """Whether any agent who could take the call is in their schedule at ``at``, busy or not."""
    return bool(_in_schedule(list(_candidates(call)), call.account, at))


def next_opening(*, call: Call, after: datetime) -> datetime | None:
    """The earliest start of a schedule day, within a week, of any agent who could take the call."""
    days = list(AccountScheduleDay.objects.filter(account_id=call.account_id))
    openings = []
    for agent in _candidates(call).prefetch_related(
        Prefetch("schedule_days", queryset=UserScheduleDay.objects.order_by("weekday"))
    ):
        own = agent.schedule_active is not None and agent.schedule_active
        tz = zoneinfo.ZoneInfo(agent.timezone if own else call.account.timezone)
        for day in (
            list(agent.schedule_days.all())
            if own
            else days
            if call.account.schedule_active
            else []
        ):
            if not day.active:
                continue
            local = after.astimezone(tz)
            for ahead in range(8):
                date = (local + timedelta(days=ahead)).date()
                if date.weekday() != day.weekday:
                    continue
                start = datetime.combine(date, day.start_time, tzinfo=tz)
                if start > after:
                    openings.append(start)
    return min(openings, default=None)


def call_waiting_for(*, agent: User, at: datetime) -> Call | None:
    """The oldest queued call, first received first, that ``agent`` may take at ``at`` (of an
    account whose hours, or the agent's own, are open) with no setup pending, its row
    locked (rows another transaction holds are skipped, so two agents freed at once never
    take the same call). A call waiting for an agent (busy, or none on duty until an
    opening) is taken early; one waiting out a retry or a pause between rounds is not."""
    accounts = list(agent.accounts.all())
    if not accounts:
        return None
    if agent.schedule_active:  # the agent's own hours, whichever account calls
        on_duty = accounts if _in_schedule([agent], accounts[0], at) else []
    else:
        on_duty = [
            account for account in accounts if _in_schedule([agent], account, at)
        ]
    if not on_duty:
        return None
    return (
        Call.objects.select_for_update(skip_locked=True, of=("self",))
        .select_related("account")
        .filter(status=CallStatus.QUEUED, account__in=on_duty)
        .filter(_waiting_or_due(at), _no_setup_pending(at))
        .filter(Q(requested_agent__isnull=True) | Q(requested_agent=agent))
        .filter(agent_number="")  # its agent is not a user: rung by its own setup
        .filter(Q(team__isnull=True) | Q(team__in=agent.teams.all()))
        .order_by("received_at", "pk")
        .first()
    )


def agent_free_with_calls_waiting(*, agent_id: int, at: datetime) -> User | None:
    """The agent, if active, with a phone and on no leg now, when a queued call of one of
    their accounts may be handed over now; else None. Which of those calls the agent may
    take (their hours, the call's team or requested agent) is ``call_waiting_for``'s to say.
    A freed agent with no call waiting (most of the time, and every time in a burst with
    agents to spare) costs one indexed query, the first here."""
    accounts = User.accounts.through.objects.filter(user_id=agent_id)
    if not Call.objects.filter(
        _waiting_or_due(at),
        _no_setup_pending(at),
        status=CallStatus.QUEUED,
        account__in=accounts.values("account_id"),
        agent_number="",
    ).exists():
        return None
    return (
        User.objects.filter(pk=agent_id, is_active=True)
        .exclude(phone_number="")
        .exclude(Exists(_live_legs()))
        .first()
    )


def calls_waiting_before(*, call: Call) -> bool:
    """Whether an older call of the same account and team already waits for an agent: the
    call queues behind it (first received, first dialed) rather than taking an agent now."""
    if call.requested_agent_id:
        return False
    if call.team_id:
        return _WAITING_BEFORE_IN_TEAM.exists(
            account_id=call.account_id,
            team_id=call.team_id,
            received_at=call.received_at,
        )
    return _WAITING_BEFORE.exists(
        account_id=call.account_id, received_at=call.received_at
    )


def _waiting_before(account_id: int, received_at: datetime, team: Q) -> QuerySet[Call]:
    return Call.objects.filter(
        team,
        account_id=account_id,
        requested_agent__isnull=True,
        status=CallStatus.QUEUED,
        waiting_since__isnull=False,
        received_at__lt=received_at,
    )


# Compiled once (core/compiled.py): every setup asks, and building it was most of its CPU.
_WAITING_BEFORE = CompiledQuery(
    lambda account_id, received_at: _waiting_before(
        account_id, received_at, Q(team__isnull=True)
    ),
    "account_id",
    moments=("received_at",),
)
_WAITING_BEFORE_IN_TEAM = CompiledQuery(
    lambda account_id, team_id, received_at: _waiting_before(
        account_id, received_at, Q(team_id=team_id)
    ),
    "account_id",
    "team_id",
    moments=("received_at",),
)


def free_agents_with_calls_waiting(*, at: datetime) -> QuerySet[User]:
    """Active agents with a phone, on no leg now, of an account with a queued call due."""
    waiting = Call.objects.filter(status=CallStatus.QUEUED).filter(_waiting_or_due(at))
    return (
        User.objects.filter(is_active=True, accounts__in=waiting.values("account_id"))
        .exclude(phone_number="")
        .exclude(Exists(_live_legs()))
        .distinct()
    )


def _waiting_or_due(at: datetime) -> Q:
    """Queued calls an agent may be handed now: waiting for an agent, or due."""
    return (
        Q(waiting_since__isnull=False)
        | Q(next_attempt_at__isnull=True)
        | Q(next_attempt_at__lte=at)
    )


def _no_setup_pending(at: datetime) -> Q:
    """Queued calls with no setup pending, or only the one held by the broker until the
    call is due (a schedule opening ahead: marked with that very time). A hand-over's mark
    is the moment it was made, never the due time, so a call handed over is never taken
    twice."""
    return Q(setup_dispatched_at__isnull=True) | Q(
        waiting_since__isnull=False,
        setup_dispatched_at=F("next_attempt_at"),
        setup_dispatched_at__gt=at,
    )


def _free(call: Call, exclude: set[int] | frozenset[int]):  # type: ignore[no-untyped-def]
    """``_candidates`` on no leg now, but for ``exclude``."""
    return _candidates(call).exclude(pk__in=exclude).exclude(Exists(_live_legs()))


def _free_batch(
    call: Call, exclude: set[int] | frozenset[int], start: int, stop: int
) -> list[User]:
    """``_free(call, exclude)[start:stop]``; with nobody excluded (every setup), its SQL
    compiled once per shape (``_FREE``): building it was a third of a setup's CPU."""
    if exclude:
        return list(_free(call, exclude)[start:stop])
    if call.requested_agent_id:
        return _FREE["agent"].slice(
            start, stop, account_id=call.account_id, of=call.requested_agent_id
        )
    if call.team_id:
        return _FREE["team"].slice(
            start, stop, account_id=call.account_id, of=call.team_id
        )
    return _FREE["account"].slice(start, stop, account_id=call.account_id)


def _candidates(call: Call):  # type: ignore[no-untyped-def]
    return _candidates_of(call.account_id, call.requested_agent_id, call.team_id)


def _candidates_of(
    account_id: int, requested_agent_id: int | None, team_id: int | None
) -> QuerySet[User]:
    agents = User.objects.filter(accounts=account_id, is_active=True).exclude(
        phone_number=""
    )
    if requested_agent_id:
        agents = agents.filter(pk=requested_agent_id)
    elif team_id:
        agents = agents.filter(teams=team_id)
    # The latest offer of each agent, read from the (agent, created_at) index: no scan of
    # every leg ever dialed, however many agents and calls there are.
    last_offered = (
        CallAttempt.objects.filter(agent=OuterRef("pk"))
        .order_by("-created_at")
        .values("created_at")[:1]
    )
    return (
        agents.only("pk", "phone_number", "timezone", "schedule_active")
        .annotate(last_offered=Subquery(last_offered))
        .order_by(F("last_offered").asc(nulls_first=True), "pk")
    )


def _free_of(
    account_id: int, agent_id: int | None, team_id: int | None
) -> QuerySet[User]:
    return _candidates_of(account_id, agent_id, team_id).exclude(Exists(_live_legs()))


_FREE = {
    "account": CompiledQuery(
        lambda account_id: _free_of(account_id, None, None), "account_id"
    ),
    "agent": CompiledQuery(
        lambda account_id, of: _free_of(account_id, of, None), "account_id", "of"
    ),
    "team": CompiledQuery(
        lambda account_id, of: _free_of(account_id, None, of), "account_id", "of"
    ),
}


def _live_legs():  # type: ignore[no-untyped-def]
    """An agent's open legs. A leg is open until its end is known: the sweep asks the
    provider about a leg gone silent and ends it once the provider says it ended, so an
    open leg is a live one and its agent is busy for exactly as long."""
    return CallAttempt.objects.filter(agent=OuterRef("pk"), ended_at__isnull=True)


@dataclass
class _Day:
    weekday: int
    active: bool
    start_time: time
    end_time: time


def _in_schedule(agents: list[User], account: Account, at: datetime) -> list[User]:
    """Those of ``agents`` inside their own schedule at ``at`` in their own timezone (the
    account's when theirs is absent or inactive). Their schedule days are read in one query,
    as plain rows and only for the weekdays ``at`` falls on somewhere: with hundreds of
    agents, building a model for every day of every agent was most of a call setup. A
    query no agent needs is not made."""
    own: dict[int, list[_Day]] = defaultdict(list)
    with_own = [agent.pk for agent in agents if agent.schedule_active]
    rows = UserScheduleDay.objects.filter(
        user_id__in=with_own,
        weekday__in=_weekdays_somewhere(at),
        active=True,
    ).values_list("user_id", "weekday", "active", "start_time", "end_time")
    for user_id, weekday, active, start_time, end_time in rows if with_own else ():
        own[user_id].append(_Day(weekday, active, start_time, end_time))
    account_days = (
        list(AccountScheduleDay.objects.filter(account_id=account.pk))
        if len(with_own) < len(agents)
        else []
    )
    chosen = []
    for agent in agents:
        if agent.schedule_active:
            open_now = is_open(
                active=True, days=own[agent.pk], tz=agent.timezone, at=at
            )
        else:
            open_now = is_open(
                active=account.schedule_active,
                days=account_days,
                tz=account.timezone,
                at=at,
            )
        if open_now:
            chosen.append(agent)
    return chosen


def _weekdays_somewhere(at: datetime) -> set[int]:
    """The weekdays the instant ``at`` falls on in some timezone (UTC-12 to UTC+14)."""
    utc = at.astimezone(UTC)
    first, last = (utc - timedelta(hours=12)).date(), (utc + timedelta(hours=14)).date()
    return {
        (first + timedelta(days=n)).weekday() for n in range((last - first).days + 1)
    }
