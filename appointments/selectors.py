"""Reads of appointments, scoped to who asks: a foreign appointment is not found."""

from __future__ import annotations

import datetime as dt
from zoneinfo import ZoneInfo

from django.db.models import Q, QuerySet

from accounts.models import Account
from appointments.models import Actor, Appointment, AppointmentChange, Status
from calls.models import Call
from scoring.selectors import accounts_coachable_by
from users.models import User


def appointments_of_call(*, call: Call) -> QuerySet[Appointment]:
    """Every appointment made on a call (a moved one and its successor included), oldest
    first, for a page that already found the call visible."""
    return Appointment.objects.filter(call=call).order_by("created_at", "pk")


def appointment_changes_of_call(*, call: Call) -> QuerySet[AppointmentChange]:
    """The life of the call's appointments, step by step, with who made each change."""
    return (
        AppointmentChange.objects.filter(appointment__call=call)
        .select_related("by_user", "appointment")
        .order_by("at", "pk")
    )


def appointments_markable_by(user: User) -> QuerySet[Appointment]:
    """Appointments ``user`` may change on the pages: those of accounts they manage
    (coach), and those made on their own calls; every one for staff."""
    if not user.is_active:
        return Appointment.objects.none()
    if user.is_staff:
        return Appointment.objects.all()
    return Appointment.objects.filter(
        Q(account__in=accounts_coachable_by(user)) | Q(call__agent=user)
    )


def actor_of(*, user: User, appointment: Appointment) -> str:
    """The role ``user`` changes ``appointment`` in: support, the call's agent, or a
    manager of its account."""
    if user.is_staff:
        return Actor.STAFF
    if (
        appointment.call_id
        and appointment.call
        and appointment.call.agent_id == user.pk
    ):
        return Actor.AGENT
    return Actor.MANAGER


def appointments_of_day(*, user: User, day: dt.date) -> list[Appointment]:
    """The appointments of the accounts ``user`` manages on ``day`` (each account's own
    local day), still to happen or marked, by time: the manager's list of today's
    appointments. A proposal waiting for a person is listed too."""
    accounts = accounts_coachable_by(user)
    window = Q(pk__in=[])
    # One range per timezone the accounts are in, not one per account.
    for zone in accounts.values_list("timezone", flat=True).distinct():
        start = dt.datetime.combine(day, dt.time(0), ZoneInfo(zone))
        window |= Q(
            account__timezone=zone,
            starts_at__gte=start,
            starts_at__lt=start + dt.timedelta(days=1),
        )
    return list(
        Appointment.objects.filter(window, account__in=accounts)
        .exclude(status__in=[Status.CANCELLED, Status.RESCHEDULED])
        .select_related("account", "call", "call__agent")
        .order_by("starts_at", "pk")
    )


def appointment_for_account(
    *, account: Account, appointment_id: int
) -> Appointment | None:
    """One of the account's appointments (the integrator's endpoint), or None."""
    return (
        Appointment.objects.filter(account=account, pk=appointment_id)
        .select_related("account", "call", "call__agent")
        .first()
    )
