"""Appointments on the pages: set, move, confirm and mark a call's appointment from the
call page's card, and the managers' list of a day's appointments, where each is marked kept
or no-show. Every change goes through appointments/services.py, with the role the user
makes it in; a change the appointment's life refuses, or a time that is not valid,
comes back on the page with the reason (422) and changes nothing."""

from __future__ import annotations

import datetime as dt
from typing import Any
from zoneinfo import ZoneInfo

from django.contrib import messages
from django.contrib.auth.decorators import login_required
from django.core.exceptions import PermissionDenied
from django.http import Http404, HttpRequest, HttpResponse
from django.shortcuts import redirect, render
from django.urls import reverse
from django.utils import timezone
from django.views.decorators.http import require_POST, require_safe

from appointments.models import Appointment, Status
from appointments.selectors import (
    actor_of,
    appointments_markable_by,
    appointments_of_day,
)
from appointments.services import (
    NotAllowed,
    appointment_change,
    appointment_open_of_call,
    appointment_set_for_call,
)
from calls.models import Call
from pages.appointments import CHANGES, appointments_settable_by, local
from pages.forms import AppointmentDayForm, AppointmentForm
from pages.views import call_page_context
from scoring.selectors import accounts_coachable_by, call_get_visible, roles_of
from users.models import User

# What each change is called once made (a proposal cancelled is dismissed).
DONE: dict[str, str] = {
    Status.SET: "Appointment set",
    Status.CONFIRMED: "Appointment confirmed by the lead",
    Status.KEPT: "Marked kept: the lead came",
    Status.NO_SHOW: "Marked no-show: the lead did not come",
    Status.CANCELLED: "Appointment cancelled",
}


def _user(request: HttpRequest) -> User:
    return request.user  # type: ignore[return-value]


def _call_card(request: HttpRequest, call_id: int) -> tuple[User, Call]:
    """The call, if the user sees it (404), and may change its appointments (403)."""
    user = _user(request)
    call = call_get_visible(user=user, call_id=call_id)
    if call is None:
        raise Http404("No such call.")
    if not appointments_settable_by(user=user, call=call):
        raise PermissionDenied(
            "Only the call's agent, a manager of the account or staff change its "
            "appointments."
        )
    return user, call


def _back_to_card(call: Call) -> HttpResponse:
    return redirect(reverse("pages:call-detail", args=[call.pk]) + "#appointments")


def _refused_on_call_page(
    request: HttpRequest,
    *,
    user: User,
    call: Call,
    problem: str = "",
    form: AppointmentForm | None = None,
) -> HttpResponse:
    context = call_page_context(
        call=call, user=user, appointment_form=form, appointment_problem=problem
    )
    return render(request, "pages/call_detail.html", context, status=422)


@login_required
@require_POST
def call_appointment_set(request: HttpRequest, call_id: int) -> HttpResponse:
    """Set the call's appointment at the day and time given in the account's timezone:
    a new one, the proposal at that time accepted, or the open one moved there."""
    user, call = _call_card(request, call_id)
    zone = call.account.timezone
    form = AppointmentForm(request.POST, zone=zone, prefix="appointment")
    if not form.is_valid():
        return _refused_on_call_page(request, user=user, call=call, form=form)
    starts_at = form.cleaned_data["starts_at"]
    current = appointment_open_of_call(call=call)
    # The role of the person who sets it: the call's agent, a manager or support (the
    # selector's rule, asked of an appointment of this call not made yet).
    by = actor_of(user=user, appointment=Appointment(call=call))
    try:
        made = appointment_set_for_call(
            call=call,
            starts_at=starts_at,
            by=by,
            by_user=user,
            kind=form.cleaned_data["kind"],
            vehicle=form.cleaned_data["vehicle"],
        )
    except NotAllowed as refused:
        return _refused_on_call_page(
            request, user=user, call=call, form=form, problem=str(refused)
        )
    when = local(made.starts_at, zone)
    if current is None:
        messages.success(request, f"Appointment set for {when}.")
    elif current.pk != made.pk:
        messages.success(request, f"Appointment moved to {when}.")
    elif current.status == Status.PROPOSED:
        messages.success(request, f"Proposal accepted: appointment set for {when}.")
    else:
        messages.info(request, f"The appointment is already set for {when}.")
    return _back_to_card(call)


def _change(*, user: User, appointment: Appointment, to: str) -> str:
    """Make the change; what to say (raises ``NotAllowed``)."""
    was = appointment.status
    changed = appointment_change(
        appointment=appointment,
        to=to,
        by=actor_of(user=user, appointment=appointment),
        by_user=user,
    )
    if changed.status == was:
        return f"Nothing changed: the appointment is {changed.get_status_display()}."
    if was == Status.PROPOSED and to == Status.CANCELLED:
        return "Proposal dismissed."
    return f"{DONE[to]} ({local(changed.starts_at, changed.account.timezone)})."


@login_required
@require_POST
def call_appointment_change(
    request: HttpRequest, call_id: int, appointment_id: int, to: str
) -> HttpResponse:
    """Confirm, mark kept or no-show, cancel one of the call's appointments; accept
    (``set``) or dismiss (``cancelled``) a proposal."""
    if to not in CHANGES:
        raise Http404("No such change.")
    user, call = _call_card(request, call_id)
    appointment = (
        appointments_markable_by(user)
        .select_related("account", "call")
        .filter(call=call, pk=appointment_id)
        .first()
    )
    if appointment is None:
        raise Http404("No such appointment.")
    try:
        done = _change(user=user, appointment=appointment, to=to)
    except NotAllowed as refused:
        return _refused_on_call_page(
            request, user=user, call=call, problem=str(refused)
        )
    messages.success(request, done)
    return _back_to_card(call)


# --- today's appointments


def _manager(request: HttpRequest) -> User:
    user = _user(request)
    if not roles_of(user).manager:
        raise PermissionDenied("Today's appointments are for managers.")
    return user


def today_of(user: User) -> dt.date:
    """Today in the timezone of the first account the user manages (UTC without one)."""
    zone = (
        accounts_coachable_by(user)
        .order_by("pk")
        .values_list("timezone", flat=True)
        .first()
    )
    return timezone.now().astimezone(ZoneInfo(zone or "UTC")).date()


def _day_page(
    request: HttpRequest,
    *,
    user: User,
    form: AppointmentDayForm,
    problem: str = "",
    status: int = 200,
) -> HttpResponse:
    day = (form.cleaned_data.get("day") if form.is_valid() else None) or today_of(user)
    context: dict[str, Any] = {
        "section": "appointments",
        "form": form,
        "day": day,
        "previous": day - dt.timedelta(days=1),
        "next": day + dt.timedelta(days=1),
        "appointments": appointments_of_day(user=user, day=day),
        "marks": [(Status.KEPT, "Kept"), (Status.NO_SHOW, "No-show")],
        "markable": (Status.SET, Status.CONFIRMED),
        "problem": problem,
    }
    return render(request, "pages/appointments_day.html", context, status=status)


@login_required
@require_safe
def appointments_day(request: HttpRequest) -> HttpResponse:
    """A day's appointments of the accounts the manager manages (``?day=``; today by
    default), by time, each in its account's timezone."""
    user = _manager(request)
    return _day_page(request, user=user, form=AppointmentDayForm(request.GET or None))


@login_required
@require_POST
def appointment_mark(
    request: HttpRequest, appointment_id: int, to: str
) -> HttpResponse:
    """Mark an appointment of the day kept or no-show (or any change the call page
    offers), then back to the same day."""
    if to not in CHANGES:
        raise Http404("No such change.")
    user = _manager(request)
    appointment = (
        appointments_markable_by(user)
        .select_related("account", "call")
        .filter(pk=appointment_id)
        .first()
    )
    if appointment is None:
        raise Http404("No such appointment.")
    form = AppointmentDayForm({"day": request.POST.get("day", "")})
    try:
        done = _change(user=user, appointment=appointment, to=to)
    except NotAllowed as refused:
        return _day_page(
            request, user=user, form=form, problem=str(refused), status=422
        )
    messages.success(request, done)
    day = form.cleaned_data.get("day") if form.is_valid() else None
    query = f"?day={day.isoformat()}" if day else ""
    return redirect(reverse("pages:appointments") + query)
