"""Every change of an appointment: made, confirmed, kept or missed, cancelled, moved.
Each change is kept (``AppointmentChange``: from, to, who, when) and reported to the
account's webhooks in the transaction that made it; a change its life does not allow is
refused (``NotAllowed``) and changes nothing."""

from __future__ import annotations

from datetime import datetime

from django.db import transaction

from appointments.models import (
    OPEN,
    Actor,
    Appointment,
    AppointmentChange,
    Kind,
    Status,
)
from appointments.payloads import appointment_event_emit
from appointments.reminders import reminders_cancel, reminders_plan
from calls.models import Call
from users.models import User

# Where each status may go. A kept or missed mark may be corrected; the other ends are final.
NEXT: dict[str, set[str]] = {
    Status.PROPOSED: {Status.SET, Status.CANCELLED, Status.RESCHEDULED},
    Status.SET: {
        Status.CONFIRMED,
        Status.KEPT,
        Status.NO_SHOW,
        Status.CANCELLED,
        Status.RESCHEDULED,
    },
    Status.CONFIRMED: {
        Status.KEPT,
        Status.NO_SHOW,
        Status.CANCELLED,
        Status.RESCHEDULED,
    },
    Status.KEPT: {Status.NO_SHOW},
    Status.NO_SHOW: {Status.KEPT},
    Status.CANCELLED: set(),
    Status.RESCHEDULED: set(),
}
# The webhook event each status reports (a proposal and a move report nothing: the new
# appointment of a move reports ``appointment_set``).
EVENTS: dict[str, str] = {
    Status.SET: "appointment_set",
    Status.CONFIRMED: "appointment_confirmed",
    Status.KEPT: "appointment_kept",
    Status.NO_SHOW: "appointment_no_show",
    Status.CANCELLED: "appointment_cancelled",
}


class NotAllowed(ValueError):
    """A change the appointment's life does not allow (the message says why)."""


def _record(
    appointment: Appointment,
    *,
    status_from: str,
    by: str,
    by_user: User | None,
    note: str = "",
) -> None:
    AppointmentChange.objects.create(
        appointment=appointment,
        status_from=status_from,
        status_to=appointment.status,
        by=by,
        by_user=by_user,
        note=note,
    )
    if appointment.status == Status.SET:
        reminders_plan(appointment)  # the lead is told, then reminded
    elif appointment.status not in OPEN:
        reminders_cancel(appointment)
        if appointment.change_requested:
            appointment.change_requested = ""  # a person has acted on it
            appointment.save(update_fields=["change_requested", "changed_at"])
    if appointment.status in EVENTS:
        appointment_event_emit(appointment=appointment, type=EVENTS[appointment.status])


@transaction.atomic
def appointment_make(
    *,
    call: Call,
    starts_at: datetime,
    by: str,
    by_user: User | None = None,
    kind: str = Kind.SALES_VISIT,
    vehicle: str = "",
    status: str = Status.SET,
    evidence: str = "",
) -> Appointment:
    """A new appointment for the call's lead (``set``, or ``proposed`` when the service
    suggests it); the lead's open appointment from the same call, if any, is moved to it
    instead (``appointment_reschedule``)."""
    if status not in (Status.SET, Status.PROPOSED):
        raise NotAllowed("A new appointment is set or proposed.")
    current = appointment_open_of_call(call=call)
    if current is not None:
        return appointment_reschedule(
            appointment=current,
            starts_at=starts_at,
            by=by,
            by_user=by_user,
            kind=kind,
            vehicle=vehicle or current.vehicle,
        )
    appointment = Appointment.objects.create(
        account=call.account,
        call=call,
        phone=call.phone,
        first_name=call.first_name,
        last_name=call.last_name,
        starts_at=starts_at,
        kind=kind,
        vehicle=vehicle[:200],
        status=status,
        set_by=by,
        set_by_user=by_user,
        evidence=evidence,
    )
    _record(appointment, status_from="", by=by, by_user=by_user)
    return appointment


@transaction.atomic
def appointment_change(
    *,
    appointment: Appointment,
    to: str,
    by: str,
    by_user: User | None = None,
    note: str = "",
) -> Appointment:
    """Move the appointment to ``to`` (confirmed, kept, no-show, cancelled; set for a
    proposal a person accepts). The row is locked, so two people marking it at once are
    told in turn; the second sees the first's status."""
    locked = Appointment.objects.select_for_update().get(pk=appointment.pk)
    if to == Status.RESCHEDULED:
        raise NotAllowed("Give the new time to move an appointment.")
    if to == locked.status:
        return locked  # already so: nothing to record
    if to not in NEXT[locked.status]:
        raise NotAllowed(
            f"An appointment {locked.get_status_display().lower()} cannot become "
            f"{Status(to).label.lower()}."
        )
    status_from, locked.status = locked.status, to
    locked.save(update_fields=["status", "changed_at"])
    _record(locked, status_from=status_from, by=by, by_user=by_user, note=note)
    return locked


@transaction.atomic
def appointment_reschedule(
    *,
    appointment: Appointment,
    starts_at: datetime,
    by: str,
    by_user: User | None = None,
    kind: str | None = None,
    vehicle: str | None = None,
    note: str = "",
) -> Appointment:
    """The appointment moved to ``starts_at``: it ends ``rescheduled`` and a new one, set
    (proposed when the old one was only proposed and the service moves it), replaces it."""
    locked = Appointment.objects.select_for_update().get(pk=appointment.pk)
    if Status.RESCHEDULED not in NEXT[locked.status]:
        raise NotAllowed(
            f"An appointment {locked.get_status_display().lower()} cannot be moved."
        )
    if locked.starts_at == starts_at and (kind or locked.kind) == locked.kind:
        return locked  # the same appointment: nothing moves
    status_from, locked.status = locked.status, Status.RESCHEDULED
    locked.save(update_fields=["status", "changed_at"])
    _record(locked, status_from=status_from, by=by, by_user=by_user, note=note)
    proposed = status_from == Status.PROPOSED and by == Actor.SERVICE
    moved = Appointment.objects.create(
        account=locked.account,
        call=locked.call,
        phone=locked.phone,
        first_name=locked.first_name,
        last_name=locked.last_name,
        starts_at=starts_at,
        kind=kind or locked.kind,
        vehicle=(locked.vehicle if vehicle is None else vehicle)[:200],
        status=Status.PROPOSED if proposed else Status.SET,
        set_by=by,
        set_by_user=by_user,
        replaces=locked,
    )
    _record(moved, status_from="", by=by, by_user=by_user, note=note)
    return moved


def appointment_open_of_call(*, call: Call) -> Appointment | None:
    """The call's appointment still to happen (proposed, set or confirmed), the latest."""
    return (
        Appointment.objects.filter(call=call, status__in=OPEN)
        .order_by("-created_at", "-pk")
        .first()
    )


@transaction.atomic
def appointment_set_for_call(
    *,
    call: Call,
    starts_at: datetime,
    by: str,
    by_user: User | None = None,
    kind: str = "",
    vehicle: str = "",
) -> Appointment:
    """A person sets the call's lead's appointment at ``starts_at``: a proposal at that
    time is accepted (set), an open appointment at another time is moved, and otherwise a
    new one is set. ``kind`` and ``vehicle`` given change the open one's; left empty,
    they keep it (a new one is a sales visit)."""
    current = appointment_open_of_call(call=call)
    if current is not None and current.starts_at == starts_at:
        _what_changed(current, kind=kind, vehicle=vehicle, by=by, by_user=by_user)
        if current.status == Status.PROPOSED:
            return appointment_change(
                appointment=current, to=Status.SET, by=by, by_user=by_user
            )
        return current
    return appointment_make(
        call=call,
        starts_at=starts_at,
        by=by,
        by_user=by_user,
        kind=kind or (current.kind if current else Kind.SALES_VISIT),
        vehicle=vehicle,
    )


def _what_changed(
    appointment: Appointment, *, kind: str, vehicle: str, by: str, by_user: User | None
) -> None:
    """The same time set again with another kind or vehicle: both kept, the edit
    recorded as a change that leaves the status as it was."""
    edits = []
    kind = kind or appointment.kind
    if kind != appointment.kind:
        edits.append(
            f"kind {Kind(appointment.kind).label.lower()} to {Kind(kind).label.lower()}"
        )
    if vehicle and vehicle[:200] != appointment.vehicle:
        edits.append(f"vehicle {appointment.vehicle or 'none'} to {vehicle[:200]}")
    if not edits:
        return
    appointment.kind = kind
    appointment.vehicle = vehicle[:200] or appointment.vehicle
    appointment.save(update_fields=["kind", "vehicle", "changed_at"])
    AppointmentChange.objects.create(
        appointment=appointment,
        status_from=appointment.status,
        status_to=appointment.status,
        by=by,
        by_user=by_user,
        note="Changed " + "; ".join(edits) + ".",
    )
