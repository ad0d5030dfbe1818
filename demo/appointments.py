"""The demo's appointments: the scorers' appointments of past calls (made when the scoring
step saved them) marked by the account's manager, most kept, some no-shows and one left
unmarked for the morning report's "outcome missing"; and the day's own: two set on the
newest answered calls for this afternoon (one confirmed by the lead) and one proposed from
a transcript for tomorrow, waiting for a person. Run again, it adds nothing."""

from __future__ import annotations

import datetime as dt
from typing import TYPE_CHECKING
from zoneinfo import ZoneInfo

from django.utils import timezone

from accounts.models import Account
from appointments.models import Actor, Appointment, AppointmentChange, Kind, Status
from appointments.services import (
    appointment_change,
    appointment_make,
    appointment_set_for_call,
)
from calls.models import Call, CallStatus
from users.models import User

if TYPE_CHECKING:
    from demo.management.commands.seed_demo import DemoData


def seed_demo(demo: DemoData) -> None:
    for demo_org in demo.organizations:
        for demo_account in demo_org.accounts:
            if not demo_account.managers:
                continue
            marked = _mark_past(demo_account.account, demo_account.managers[0])
            made = _today(demo_account.account)
            if marked or made:
                demo.log(
                    f"{demo_account.account.name}: {marked} past appointments "
                    f"marked, {made} made for today and tomorrow"
                )


def _mark_past(account: Account, manager: User) -> int:
    """Mark the past appointments, all but the newest: kept, no-show or, now and then,
    left for the morning report; once (an account a manager marked is left alone)."""
    if AppointmentChange.objects.filter(
        appointment__account=account, by=Actor.MANAGER
    ).exists():
        return 0  # marked on an earlier run: the rest is the morning report's
    now = timezone.now()
    past = list(
        Appointment.objects.filter(
            account=account,
            status__in=[Status.SET, Status.CONFIRMED],
            starts_at__lt=now,
            call__is_demo=True,
        ).order_by("starts_at", "pk")
    )[:-1]
    marked = 0
    for index, appointment in enumerate(past):
        # Most kept, every fifth a no-show, every fifth (from the fourth) left unmarked.
        if index % 5 == 3:
            continue  # nobody marked it: outcome missing
        to = Status.NO_SHOW if index % 5 == 1 else Status.KEPT
        appointment_change(
            appointment=appointment,
            to=to,
            by=Actor.MANAGER,
            by_user=manager,
        )
        marked += 1
    return marked


def _today(account: Account) -> int:
    """This afternoon's two and tomorrow's proposal, once a day."""
    zone = ZoneInfo(account.timezone)
    today = timezone.now().astimezone(zone).date()
    start = dt.datetime.combine(today, dt.time(0), zone)
    if Appointment.objects.filter(
        account=account, starts_at__gte=start, created_at__gte=start
    ).exists():
        return 0
    calls = list(
        Call.objects.filter(account=account, status=CallStatus.ANSWER, is_demo=True)
        .exclude(
            appointments__status__in=[Status.SET, Status.CONFIRMED, Status.PROPOSED]
        )
        .select_related("account", "agent")
        .order_by("-received_at", "-pk")[:3]
    )
    if len(calls) < 3:
        return 0
    afternoon = [dt.datetime.combine(today, dt.time(hour), zone) for hour in (15, 17)]
    first = appointment_set_for_call(
        call=calls[0], starts_at=afternoon[0], by=Actor.AGENT, by_user=calls[0].agent
    )
    appointment_change(
        appointment=first,
        to=Status.CONFIRMED,
        by=Actor.LEAD,
        note="Replied 'C' by text.",
    )
    appointment_set_for_call(
        call=calls[1],
        starts_at=afternoon[1],
        by=Actor.AGENT,
        by_user=calls[1].agent,
        kind=Kind.TEST_DRIVE,
    )
    appointment_make(
        call=calls[2],
        starts_at=afternoon[0] + dt.timedelta(days=1),
        by=Actor.SERVICE,
        status=Status.PROPOSED,
        evidence="Lead: Tomorrow at three works for me.",
    )
    return 3
