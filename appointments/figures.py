"""Appointment figures of a period, each account's days in its own timezone: the set rate
(answered leads that got an appointment set), the show rate (appointments due that were
kept) and the no-show rate, overall or by agent, source or account; and the appointments
whose outcome nobody marked. Read by the morning report and the dashboard."""

from __future__ import annotations

from collections import Counter
from collections.abc import Callable, Hashable
from dataclasses import dataclass
from datetime import date, datetime, time, timedelta
from typing import Any
from zoneinfo import ZoneInfo

from django.db.models import Count, Q, QuerySet
from django.utils import timezone

from accounts.models import Account
from appointments.models import (
    AGREED,
    Appointment,
    AppointmentChange,
    RollupAppointment,
    Status,
)
from appointments.rollup import DUE, starting_in
from calls.models import Call, CallStatus
from core.planning import without_jit
from scoring.models import RollupDay
from scoring.rollup import (
    Split,
    accounts_reached,
    plain_rows,
    split,
    stale_days,
    summed,
)

# What each breakdown groups by: the call's field, and the appointment's path to it.
BY = {
    "agent": ("agent_id", "call__agent_id"),
    "source": ("source", "call__source"),
    "account": ("account_id", "account_id"),
}


def _parts(pairs: list[tuple[int, str]], first: date, last: date) -> Split:
    """Where each account's days ``first``..``last`` are read: the rollup's rows or the
    data (scoring/rollup.py's split, with its stale marks)."""
    reach = accounts_reached(
        Account.objects.filter(pk__in=[pk for pk, _ in pairs]), rollup=True
    )
    return split(reach, stale_days(reach, first, last), first, last)


@dataclass(frozen=True)
class AppointmentFigures:
    answered: int  # answered leads received in the period
    set: int  # of those, the leads an appointment was set for (a proposal alone is not)
    due: int  # appointments agreed that started in the period, by now
    kept: int
    no_show: int
    missing: int  # due, and nobody marked kept or no-show

    @property
    def set_rate(self) -> float | None:
        return self.set / self.answered if self.answered else None

    @property
    def show_rate(self) -> float | None:
        return self.kept / self.due if self.due else None

    @property
    def no_show_rate(self) -> float | None:
        return self.no_show / self.due if self.due else None


Accounts = QuerySet[Account] | list[tuple[int, str]]


def _pairs(accounts: Accounts) -> list[tuple[int, str]]:
    if isinstance(accounts, QuerySet):
        return list(accounts.values_list("pk", "timezone"))
    return accounts


def starting_on(accounts: Accounts, first: date, last: date) -> Q:
    """Appointments starting on the accounts' local days ``first`` to ``last``: one range
    per timezone (``accounts`` a queryset or its (id, timezone) pairs)."""
    reach = Q(pk__in=[])
    zones: dict[str, list[int]] = {}
    for pk, zone in _pairs(accounts):
        zones.setdefault(zone, []).append(pk)
    for zone, ids in sorted(zones.items()):
        tz = ZoneInfo(zone)
        bounds = Q(
            account_id__in=ids, starts_at__gte=datetime.combine(first, time(0), tz)
        )
        if last < date.max:  # the calendar's last day has no day after it
            after = datetime.combine(last + timedelta(days=1), time(0), tz)
            bounds &= Q(starts_at__lt=after)
        reach |= bounds
    return reach


def _counts(
    accounts: Accounts, first: date, last: date, now: datetime, by: tuple[str, ...]
) -> dict[str, dict[Hashable, Counter[str]]]:
    """The counts in one group ("all") and per group of each of ``by`` (``BY``), in three
    queries whatever the groupings: each counted in the database by agent, source and
    account at once (a few rows however many calls), then added up per grouping."""
    pairs = _pairs(accounts)
    groups: dict[str, dict[Hashable, Counter[str]]] = {"all": {}, **{b: {} for b in by}}

    def add(keys: tuple[Any, ...], counter: str, count: int) -> None:
        if not count:  # a rollup row's zero: no group the data would not have
            return
        named = dict(zip(BY, keys, strict=True))
        groups["all"].setdefault(None, Counter())[counter] += count
        for name in by:
            groups[name].setdefault(named[name], Counter())[counter] += count

    # Each account's days the dashboard's rollup holds are read from its rows (the
    # calls answered from RollupDay, the appointments from RollupAppointment), the
    # others (today, a day not built yet or changed since) from the data.
    parts = _parts(pairs, first, last)
    call_keys = [BY[b][0] for b in BY]
    calls = parts.calls()
    if calls is not None:
        answered = Call.objects.filter(calls, status=CallStatus.ANSWER)
        for *keys, count in (
            answered.order_by().values_list(*call_keys).annotate(n=Count("pk"))
        ):
            add(tuple(keys), "answered", count)
        # A lead counts once however often its appointment was set again (moved); a
        # call is in one group of each grouping, so the distinct counts add up.
        made_keys = [f"appointment__{BY[b][1]}" for b in BY]
        made_set = (
            AppointmentChange.objects.filter(
                status_to=Status.SET, appointment__call__in=answered
            )
            .order_by()
            .values_list(*made_keys)
            .annotate(n=Count("appointment__call_id", distinct=True))
        )
        for *keys, count in made_set:
            add(tuple(keys), "leads_set", count)
    starting = starting_in(parts)
    if starting is not None:
        due = (
            Appointment.objects.filter(starting, status__in=AGREED, starts_at__lt=now)
            .order_by()
            .values_list("status", *(BY[b][1] for b in BY))
            .annotate(n=Count("pk"))
        )
        for status, *keys, count in due:
            add(tuple(keys), "due", count)
            add(tuple(keys), f"due_{status}", count)
    rolled = parts.rolled_rows()
    if rolled is not None:
        _rolled_counts(rolled, call_keys, add)
    return groups


def _rolled_counts(
    rolled: Q, call_keys: list[str], add: Callable[[tuple[Any, ...], str, int], None]
) -> None:
    """The counts of the rollup's days: answered calls from RollupDay, the rest from
    RollupAppointment, each grouped by agent, source and account."""
    for *keys, count in plain_rows(
        RollupDay.objects.filter(rolled)
        .values_list(*call_keys)
        .annotate(**summed(["answered"]))
        .order_by()
    ):
        add(tuple(keys), "answered", count)
    columns = ["leads_set", *DUE.values()]
    for row in plain_rows(
        RollupAppointment.objects.filter(rolled)
        .values_list(*call_keys)
        .annotate(**summed(columns))
        .order_by()
    ):
        group, counted = tuple(row[: len(call_keys)]), row[len(call_keys) :]
        add(group, "leads_set", counted[0])
        for status, count in zip(DUE, counted[1:], strict=True):
            add(group, "due", count)
            add(group, f"due_{status}", count)


def _figures(counts: Counter[str]) -> AppointmentFigures:
    return AppointmentFigures(
        answered=counts["answered"],
        set=counts["leads_set"],
        due=counts["due"],
        kept=counts[f"due_{Status.KEPT}"],
        no_show=counts[f"due_{Status.NO_SHOW}"],
        missing=counts[f"due_{Status.SET}"] + counts[f"due_{Status.CONFIRMED}"],
    )


def appointment_figures(
    *,
    accounts: Accounts,
    first: date,
    last: date,
    now: datetime | None = None,
) -> AppointmentFigures:
    """The period's figures over ``accounts`` (already scoped to the reader)."""
    with without_jit():
        groups = _counts(accounts, first, last, now or timezone.now(), ())
    return _figures(groups["all"].get(None, Counter()))


def appointment_figures_by(
    *,
    accounts: Accounts,
    first: date,
    last: date,
    by: str,
    now: datetime | None = None,
) -> dict[Any, AppointmentFigures]:
    """The period's figures per agent (user id, None for none), source or account id."""
    return appointment_figures_grouped(
        accounts=accounts, first=first, last=last, by=(by,), now=now
    )[by]


def appointment_figures_grouped(
    *,
    accounts: Accounts,
    first: date,
    last: date,
    by: tuple[str, ...],
    now: datetime | None = None,
) -> dict[str, dict[Any, AppointmentFigures]]:
    """The period's figures overall (``"all"``, keyed None) and per group of each of
    ``by``, from the same three queries."""
    with without_jit():  # 100,000 calls a period: dear enough to be compiled first
        groups = _counts(accounts, first, last, now or timezone.now(), by)
    return {
        name: {key: _figures(counts) for key, counts in grouped.items()}
        for name, grouped in groups.items()
    }


def outcome_missing(
    *, accounts: QuerySet[Account], first: date, last: date, now: datetime | None = None
) -> list[Appointment]:
    """Appointments due in the period (started by ``now``) that nobody marked kept or
    no-show: the morning report lists them."""
    return list(
        Appointment.objects.filter(
            starting_on(accounts, first, last),
            status__in=[Status.SET, Status.CONFIRMED],
            starts_at__lt=now or timezone.now(),
        )
        .select_related("account", "call__agent")
        .order_by("starts_at", "pk")
    )
