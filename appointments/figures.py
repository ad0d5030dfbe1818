"""Appointment figures of a period, each account's days in its own timezone: the set rate
(answered leads that got an appointment set), the show rate (appointments due that were
kept) and the no-show rate, overall or by agent, source or account; and the appointments
whose outcome nobody marked. Read by the morning report and the dashboard."""

from __future__ import annotations

from collections import Counter
from collections.abc import Hashable
from dataclasses import dataclass
from datetime import date, datetime, time, timedelta
from typing import Any
from zoneinfo import ZoneInfo

from django.db.models import Q, QuerySet
from django.utils import timezone

from accounts.models import Account
from appointments.models import AGREED, Appointment, AppointmentChange, Status
from calls.models import Call, CallStatus
from scoring.selectors import local_days

# What each breakdown groups by: the call's field, and the appointment's path to it.
BY = {
    "agent": ("agent_id", "call__agent_id"),
    "source": ("source", "call__source"),
    "account": ("account_id", "account_id"),
}


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


def starting_on(accounts: QuerySet[Account], first: date, last: date) -> Q:
    """Appointments starting on the accounts' local days ``first`` to ``last``: one range
    per timezone."""
    reach = Q(pk__in=[])
    zones: dict[str, list[int]] = {}
    for pk, zone in accounts.values_list("pk", "timezone"):
        zones.setdefault(zone, []).append(pk)
    for zone, ids in sorted(zones.items()):
        start = datetime.combine(first, time(0), ZoneInfo(zone))
        end = datetime.combine(last + timedelta(days=1), time(0), ZoneInfo(zone))
        reach |= Q(account_id__in=ids, starts_at__gte=start, starts_at__lt=end)
    return reach


def _counts(
    accounts: QuerySet[Account],
    first: date,
    last: date,
    now: datetime,
    by: str | None,
) -> dict[Hashable, Counter[str]]:
    """The counts per group of ``by`` (``BY``), or in one group (None) without it."""
    call_path, appointment_path = BY[by] if by else ("pk", "pk")
    groups: dict[Hashable, Counter[str]] = {}

    def at(group: Hashable) -> Counter[str]:
        return groups.setdefault(group if by else None, Counter())

    answered = Call.objects.filter(
        local_days(accounts=accounts, first=first, last=last), status=CallStatus.ANSWER
    )
    for group in answered.values_list(call_path, flat=True):
        at(group)["answered"] += 1
    # A lead counts once however often its appointment was set again (moved).
    made_set = AppointmentChange.objects.filter(
        status_to=Status.SET, appointment__call__in=answered
    )
    leads = {
        (call_id, group if by else None)
        for call_id, group in made_set.values_list(
            "appointment__call_id", f"appointment__{appointment_path}"
        )
    }
    for _, group in leads:
        at(group)["leads_set"] += 1
    due = Appointment.objects.filter(
        starting_on(accounts, first, last), status__in=AGREED, starts_at__lt=now
    )
    for group, status in due.values_list(appointment_path, "status"):
        counts = at(group)
        counts["due"] += 1
        counts[f"due_{status}"] += 1
    return groups


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
    accounts: QuerySet[Account],
    first: date,
    last: date,
    now: datetime | None = None,
) -> AppointmentFigures:
    """The period's figures over ``accounts`` (already scoped to the reader)."""
    groups = _counts(accounts, first, last, now or timezone.now(), None)
    return _figures(groups.get(None, Counter()))


def appointment_figures_by(
    *,
    accounts: QuerySet[Account],
    first: date,
    last: date,
    by: str,
    now: datetime | None = None,
) -> dict[Any, AppointmentFigures]:
    """The period's figures per agent (user id, None for none), source or account id."""
    groups = _counts(accounts, first, last, now or timezone.now(), by)
    return {group: _figures(counts) for group, counts in groups.items()}


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
