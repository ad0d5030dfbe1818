"""The call page's appointment card: the call's appointments with their life (each change,
who made it and when), and for those who may change them the form that sets one (or moves
the open one) and the buttons each status allows. Times are the account's (the dealer's)."""

from __future__ import annotations

from dataclasses import dataclass, field
from datetime import datetime
from typing import Any
from zoneinfo import ZoneInfo

from appointments.models import OPEN, Appointment, AppointmentChange, Status
from appointments.selectors import appointment_changes_of_call, appointments_of_call
from calls.models import Call, CallStatus
from pages.forms import AppointmentForm
from scoring.selectors import call_may_be_coached_by
from users.models import User

# The buttons each status offers (the change it asks for, its words); the service checks
# the change again, so a stale page is refused, never obeyed.
ACTIONS: dict[str, list[tuple[str, str]]] = {
    Status.PROPOSED: [
        (Status.SET, "Set this appointment"),
        (Status.CANCELLED, "Dismiss"),
    ],
    Status.SET: [
        (Status.CONFIRMED, "Confirm"),
        (Status.KEPT, "Kept"),
        (Status.NO_SHOW, "No-show"),
        (Status.CANCELLED, "Cancel"),
    ],
    Status.CONFIRMED: [
        (Status.KEPT, "Kept"),
        (Status.NO_SHOW, "No-show"),
        (Status.CANCELLED, "Cancel"),
    ],
    # A mark may be corrected.
    Status.KEPT: [(Status.NO_SHOW, "No-show after all")],
    Status.NO_SHOW: [(Status.KEPT, "Kept after all")],
}
# What each change asked for is called in the URL (``.../appointments/<id>/<to>``).
CHANGES = {Status.SET, Status.CONFIRMED, Status.KEPT, Status.NO_SHOW, Status.CANCELLED}


def appointments_settable_by(*, user: User, call: Call) -> bool:
    """Whether ``user`` may set and change the call's appointments: the rule of
    ``appointments_markable_by`` (staff, the call's agent, a manager who coaches the
    account) for a call that may have none yet."""
    if not user.is_active:
        return False
    if user.is_staff or call.agent_id == user.pk:
        return True
    return call_may_be_coached_by(user=user, call=call)


def local(moment: datetime, zone: str) -> str:
    """A moment as the dealer says it: "Sat 2026-12-12 10:30 MST"."""
    return f"{moment.astimezone(ZoneInfo(zone)):%a %Y-%m-%d %H:%M %Z}"


@dataclass
class Row:
    appointment: Appointment
    changes: list[AppointmentChange] = field(default_factory=list)
    actions: list[tuple[str, str]] = field(default_factory=list)
    moved_to: Appointment | None = None


def appointment_card(
    *,
    call: Call,
    user: User,
    form: AppointmentForm | None = None,
    problem: str = "",
) -> dict[str, Any] | None:
    """What the card shows (None: no card, for a call not answered without any
    appointment). Two queries: the appointments with who set them, and their changes."""
    appointments = list(appointments_of_call(call=call).select_related("set_by_user"))
    if not appointments and call.status != CallStatus.ANSWER:
        return None
    may_change = appointments_settable_by(user=user, call=call)
    rows = {appointment.pk: Row(appointment) for appointment in appointments}
    if appointments:
        for change in appointment_changes_of_call(call=call):
            rows[change.appointment_id].changes.append(change)
    for row in rows.values():
        moved_from = row.appointment.replaces_id
        if moved_from in rows:
            rows[moved_from].moved_to = row.appointment
        if may_change:
            row.actions = ACTIONS.get(row.appointment.status, [])
    # The open one a new time moves (``appointment_open_of_call``: the latest).
    current = next((a for a in reversed(appointments) if a.status in OPEN), None)
    zone = call.account.timezone
    if may_change and form is None:
        form = AppointmentForm(
            zone=zone, prefix="appointment", initial=_initial(call, current, zone)
        )
    return {
        "rows": list(rows.values()),
        "zone": zone,
        "zone_now": f"{datetime.now(ZoneInfo(zone)):%Z}",
        "current": current,
        "form": form if may_change else None,
        "problem": problem,
    }


def _initial(call: Call, current: Appointment | None, zone: str) -> dict[str, Any]:
    """The open appointment's day, time, kind and vehicle (set as it is, a proposal is
    accepted); otherwise the vehicle the lead called on."""
    if current is not None:
        at = current.starts_at.astimezone(ZoneInfo(zone))
        return {
            "date": at.date().isoformat(),
            "time": at.time().strftime("%H:%M"),
            "kind": current.kind,
            "vehicle": current.vehicle,
        }
    vehicle = " ".join(
        part
        for part in (call.called_on_year, call.called_on_make, call.called_on_model)
        if part
    )
    return {"vehicle": vehicle[:200]}
