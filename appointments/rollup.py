"""The appointment counts rolled up per account and local day, beside the dashboard's
rollup (scoring/rollup.py): ``RollupAppointment`` rows, computed when scoring computes
an account's days (its ``rollup_written`` signal, in the same transaction under the same
lock) and read by appointments/figures.py for the days the rollup holds.

- ``leads_set`` is keyed on the day the call was received (the set rate's day), and
  marked stale with the call (scoring's ``RollupStale``) when an appointment is set;
- ``due_*`` on the day the appointment starts (the show rate's), marked stale as a day
  (``RollupStaleDay``) whenever an appointment starting that day is saved.

Counts only, exact: the rollup's figures equal the raw ones (tests/pages/
test_figures_rollup.py)."""

from __future__ import annotations

from datetime import date, timedelta
from typing import Any
from zoneinfo import ZoneInfo

from django.db.models import Count, Q
from django.utils import timezone

from appointments.models import (
    AGREED,
    Appointment,
    AppointmentChange,
    RollupAppointment,
    Status,
)
from calls.models import Call, CallStatus
from scoring.models import RollupStale, RollupStaleDay
from scoring.rollup import ONE_DAY, Split
from scoring.rollup_build import TODAY_MARGIN, day_of
from scoring.selectors import day_start

DUE = {status: f"due_{status}" for status in AGREED}


def write_days(
    *,
    account_id: int,
    zone: ZoneInfo | None,
    first: date | None,
    last: date | None,
    **_: Any,
) -> None:
    """Replace the account's rows of days ``first``..``last`` (None: drop them all)."""
    rows = RollupAppointment.objects.filter(account_id=account_id)
    if first is None or last is None or zone is None:
        rows.delete()
        return
    rows.filter(day__gte=first, day__lte=last).delete()
    days = [first + timedelta(days=n) for n in range((last - first).days + 1)]
    start, end = day_start(first, zone), day_start(last + ONE_DAY, zone)
    counts: dict[tuple[date, int | None, str | None], dict[str, int]] = {}

    def add(key: tuple[Any, ...], column: str, n: int) -> None:
        counts.setdefault(key, {})[column] = counts.get(key, {}).get(column, 0) + n

    answered = Call.objects.filter(
        account_id=account_id,
        received_at__gte=start,
        received_at__lt=end,
        status=CallStatus.ANSWER,
    )
    for day, agent, source, n in (
        AppointmentChange.objects.filter(
            status_to=Status.SET, appointment__call__in=answered
        )
        .annotate(day=day_of(days, zone, "appointment__call__received_at"))
        .order_by()
        .values_list("day", "appointment__call__agent_id", "appointment__call__source")
        .annotate(n=Count("appointment__call_id", distinct=True))
    ):
        add((day, agent, source), "leads_set", n)
    for day, status, agent, source, n in (
        Appointment.objects.filter(
            account_id=account_id,
            starts_at__gte=start,
            starts_at__lt=end,
            status__in=AGREED,
        )
        .annotate(day=day_of(days, zone, "starts_at"))
        .order_by()
        .values_list("day", "status", "call__agent_id", "call__source")
        .annotate(n=Count("pk"))
    ):
        add((day, agent, source), DUE[status], n)
    RollupAppointment.objects.bulk_create(
        (
            RollupAppointment(
                account_id=account_id, day=day, agent_id=agent, source=source, **columns
            )
            for (day, agent, source), columns in counts.items()
        ),
        batch_size=1000,
    )


def starting_in(parts: Split) -> Q | None:
    """The condition on appointments starting on the days ``parts`` reads from the data
    (its ``raw`` spans, each account's days in its timezone), or None: no day."""
    conditions = []
    for (zone, spans), ids in parts.raw.items():
        tz = ZoneInfo(zone)
        either = Q(pk__in=[])
        for first, last in spans:
            bounds = Q(starts_at__gte=day_start(first, tz))
            if last < date.max:
                bounds &= Q(starts_at__lt=day_start(last + ONE_DAY, tz))
            either |= bounds
        conditions.append(Q(account_id__in=ids) & either)
    if not conditions:
        return None
    reach = conditions[0]
    for condition in conditions[1:]:
        reach |= condition
    return reach


def on_appointment_saved(instance: Appointment, **_: Any) -> None:
    """An appointment was made or changed: the day it starts is read from the data until
    the sweep has computed it again (in the transaction of the change). One starting
    later than now (most: set for a coming day) needs none: its day is the account's
    today at the earliest, which the rollup never holds (``TODAY_MARGIN`` as for calls)."""
    if instance.starts_at < timezone.now() + TODAY_MARGIN:
        RollupStaleDay.objects.create(
            account_id=instance.account_id, at=instance.starts_at
        )


def on_change_saved(instance: AppointmentChange, created: bool, **_: Any) -> None:
    """An appointment was set: its call's day counts one more lead set."""
    if not created or instance.status_to != Status.SET:
        return
    if AppointmentChange.appointment.is_cached(instance):
        call_id = instance.appointment.call_id
    else:
        call_id = (
            Appointment.objects.filter(pk=instance.appointment_id)
            .values_list("call_id", flat=True)
            .first()
        )
    if call_id is not None:
        RollupStale.objects.create(call_id=call_id)
