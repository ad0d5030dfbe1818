"""Reminder texts of an appointment, and the lead's replies to them. When an appointment is
set, up to three texts are stored for the lead: at once, the day before and two hours
before, each in texting's table with its due time (the sweep sends it when due, past quiet
hours; none that quiet hours would push past the appointment), each asking "Reply C to
confirm or R to reschedule". Moved, cancelled or marked first, the texts not sent are
canceled. A lead's ordinary reply (texting has already taken opt-outs, START and HELP) to
an upcoming appointment: C confirms it, R or another word asking to move it is noted on
the appointment for a person; every reply is forwarded to the agent by texting."""

from __future__ import annotations

import datetime as dt
import re
from typing import Any
from zoneinfo import ZoneInfo

from django.db import transaction
from django.utils import timezone

from appointments.models import (
    OPEN,
    Actor,
    Appointment,
    Kind,
    Reminder,
    ReminderKind,
    Status,
)
from texting.models import Purpose, Text
from texting.services import texts_cancel, texts_to_lead

ASK = "Reply C to confirm or R to reschedule."
WORDS = {
    Kind.SALES_VISIT: "visit",
    Kind.TEST_DRIVE: "test drive",
    Kind.SERVICE: "service appointment",
}
# Before the appointment: the day before and two hours before; the one on setting at once.
BEFORE = {
    ReminderKind.DAY_BEFORE: dt.timedelta(days=1),
    ReminderKind.TWO_HOURS: dt.timedelta(hours=2),
}
# A reminder quiet hours would push this close to the appointment is not sent.
LAST_USEFUL = dt.timedelta(minutes=30)
CONFIRM = re.compile(r"^\s*(c|confirm(ed)?|yes|y)\s*[.!]*\s*$", re.I)
MOVE = re.compile(
    r"^\s*(r|reschedule)\b|\b(reschedule|another time|different time|move it)\b", re.I
)


def when_words(appointment: Appointment) -> str:
    """ "Saturday, November 28 at 10:30 AM", in the dealer's timezone."""
    local = appointment.starts_at.astimezone(ZoneInfo(appointment.account.timezone))
    return f"{local:%A, %B} {local.day} at {local:%I:%M %p}".replace(" 0", " ")


def reminder_body(appointment: Appointment, kind: str) -> str:
    first = appointment.first_name or "there"
    what = WORDS.get(Kind(appointment.kind), "visit")
    dealer = appointment.account.name
    when = when_words(appointment)
    if kind == ReminderKind.BOOKED:
        return f"Hi {first}, you're booked for a {what} at {dealer} on {when}. {ASK}"
    return f"Hi {first}, a reminder of your {what} at {dealer} on {when}. {ASK}"


def reminders_plan(appointment: Appointment) -> list[Reminder]:
    """Store the appointment's reminder texts (in the caller's transaction), those still
    ahead and not planned before; none without a call (texts go to a call's lead)."""
    call = appointment.call
    if call is None:
        return []
    now = timezone.now()
    before = appointment.starts_at - LAST_USEFUL
    due = {ReminderKind.BOOKED: now} | {
        kind: appointment.starts_at - ahead for kind, ahead in BEFORE.items()
    }
    planned = set(
        Reminder.objects.filter(appointment=appointment).values_list("kind", flat=True)
    )
    kinds = [
        kind
        for kind, at in due.items()
        if kind not in planned and at >= now - dt.timedelta(minutes=1) and at < before
    ]
    texts = texts_to_lead(
        call=call,
        purpose=Purpose.REMINDER,
        timed=[
            (reminder_body(appointment, kind), max(due[kind], now)) for kind in kinds
        ],
        before=before,
    )
    return Reminder.objects.bulk_create(
        Reminder(appointment=appointment, kind=kind, text=text)
        for kind, text in zip(kinds, texts, strict=True)
        if text is not None
    )


def reminders_cancel(appointment: Appointment) -> int:
    """Cancel the appointment's reminder texts not sent yet."""
    ids = [
        text_id
        for text_id in Reminder.objects.filter(appointment=appointment).values_list(
            "text_id", flat=True
        )
        if text_id is not None
    ]
    return texts_cancel(text_ids=ids)


def on_lead_replied(sender: type, text: Text, **kwargs: Any) -> None:
    """A lead's reply read against their next appointment with the account that was sent
    a reminder: C confirms it, R (or words asking to move it) is noted for a person."""
    body = text.body.strip()
    confirm, move = bool(CONFIRM.match(body)), bool(MOVE.search(body))
    if not (confirm or move):
        return
    with transaction.atomic():
        appointment = (
            Appointment.objects.select_for_update()
            .filter(
                account_id=text.account_id,
                phone=text.lead_phone,
                status__in=OPEN,
                starts_at__gt=timezone.now(),
                reminders__text__status__in=["sent", "delivered", "queued"],
            )
            .exclude(status=Status.PROPOSED)
            .order_by("starts_at")
            .first()
        )
        if appointment is None:
            return
        if confirm:
            from appointments.services import appointment_change

            appointment_change(
                appointment=appointment,
                to=Status.CONFIRMED,
                by=Actor.LEAD,
                note=f"Replied {body!r} by text.",
            )
        else:
            appointment.change_requested = body[:1000]
            appointment.save(update_fields=["change_requested", "changed_at"])
