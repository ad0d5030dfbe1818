"""Which agents may be offered a call now, fairest first, and when one next may be."""

from __future__ import annotations

import zoneinfo
from datetime import datetime, timedelta

from django.db.models import Exists, F, Max, OuterRef, Prefetch

from accounts.models import AccountScheduleDay
from accounts.schedules import is_open
from calls.models import Call, CallAttempt
from users.models import User, UserScheduleDay

# A leg with no end after this long is taken as lost, not as an agent still on the phone.
BUSY_WINDOW = timedelta(hours=4)


def agents_available(
    *, call: Call, at: datetime, exclude: set[int] | frozenset[int] = frozenset()
) -> list[User]:
    """Active agents of the call's account (and team) with a phone, in their schedule at
    ``at``, not on another leg now; least recently offered a call first."""
    days = list(AccountScheduleDay.objects.filter(account_id=call.account_id))
    return [
        agent
        for agent in _candidates(call)
        .exclude(pk__in=exclude)
        .exclude(Exists(_live_legs(at)))
        if _in_schedule(agent, call, days, at)
    ]


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
            agent_id__in=locked, ended_at__isnull=True, created_at__gte=at - BUSY_WINDOW
        ).values_list("agent_id", flat=True)
    )
    return [agent for agent in agents if agent.pk in locked and agent.pk not in busy]


def agents_on_duty(*, call: Call, at: datetime) -> bool:
    """Whether any agent who could take the call is in their schedule at ``at``, busy or not."""
    days = list(AccountScheduleDay.objects.filter(account_id=call.account_id))
    return any(_in_schedule(agent, call, days, at) for agent in _candidates(call))


def next_opening(*, call: Call, after: datetime) -> datetime | None:
    """The earliest start of a schedule day, within a week, of any agent who could take the call."""
    days = list(AccountScheduleDay.objects.filter(account_id=call.account_id))
    openings = []
    for agent in _candidates(call):
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


def _candidates(call: Call):  # type: ignore[no-untyped-def]
    agents = User.objects.filter(accounts=call.account_id, is_active=True).exclude(
        phone_number=""
    )
    if call.requested_agent_id:
        agents = agents.filter(pk=call.requested_agent_id)
    elif call.team_id:
        agents = agents.filter(teams=call.team_id)
    return (
        agents.annotate(last_offered=Max("agent_attempts__created_at"))
        .order_by(F("last_offered").asc(nulls_first=True), "pk")
        .prefetch_related(
            Prefetch(
                "schedule_days", queryset=UserScheduleDay.objects.order_by("weekday")
            )
        )
    )


def _live_legs(at: datetime):  # type: ignore[no-untyped-def]
    return CallAttempt.objects.filter(
        agent=OuterRef("pk"), ended_at__isnull=True, created_at__gte=at - BUSY_WINDOW
    )


def _in_schedule(
    agent: User, call: Call, account_days: list[AccountScheduleDay], at: datetime
) -> bool:
    """The agent's own schedule in their timezone; the account's when theirs is absent or inactive."""
    if agent.schedule_active:
        return is_open(
            active=True, days=agent.schedule_days.all(), tz=agent.timezone, at=at
        )
    return is_open(
        active=call.account.schedule_active,
        days=account_days,
        tz=call.account.timezone,
        at=at,
    )
