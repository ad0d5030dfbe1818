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
from understanding import Context, understand

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


def on_lead_replied(sender: type, text: Text, **kwargs: Any) -> bool:
    """A lead's reply read against their next appointment with the account that was sent
    a reminder: C confirms it, R (or words asking to move it) is noted for a person; a
    reply agreeing a day and time a person's text proposed (``proposed_by_text``).
    True when the reply was about an appointment (texting then reads no "call me")."""
    body = text.body.strip()
    confirm, move = bool(CONFIRM.match(body)), bool(MOVE.search(body))
    if not (confirm or move):
        return proposed_by_text(text) is not None
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
            return False
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
    return True


def proposed_by_text(reply: Text) -> Appointment | None:
    """A lead's reply agreeing a time with the account's last text to them from a person
    ("Would Saturday at 10:30 work?" then "Yes, see you then"), read as the call's
    transcript is read (``understanding``): an appointment proposed on the lead's latest
    call, for a person to set; none when the call already has one open or the two texts
    agree no day and time."""
    call = reply.call
    if call is None:
        return None
    asked = (
        Text.objects.filter(
            account_id=reply.account_id,
            lead_phone=reply.lead_phone,
            purpose=Purpose.REPLY,
            created_at__lte=reply.created_at,
        )
        .order_by("-created_at", "-pk")
        .first()
    )
    if asked is None:
        return None
    turns = [
        {"side": "agent", "start": 0.0, "end": 1.0, "text": asked.body},
        {"side": "lead", "start": 2.0, "end": 3.0, "text": reply.body},
    ]
    context = Context(
        lead_first_name=call.first_name,
        dealer=call.account.name,
        call_started_at=reply.created_at,
        timezone=call.account.timezone,
    )
    agreed = understand(turns, context).appointment
    if agreed is None or agreed.date is None or agreed.time is None:
        return None
    from appointments.services import appointment_make, appointment_open_of_call

    with transaction.atomic():
        if appointment_open_of_call(call=call) is not None:
            return None
        return appointment_make(
            call=call,
            starts_at=dt.datetime.combine(
                agreed.date, agreed.time, ZoneInfo(call.account.timezone)
            ),
            by=Actor.LEAD,
            status=Status.PROPOSED,
            evidence=f"{asked.body}\n{reply.body}",
        )
