"""Reminder texts of an appointment and the lead's replies, through texting's own
services: stored with their due times (past quiet hours, never after the appointment),
canceled when the appointment moves or ends, sent by texting's sweep when due; C confirms,
R is noted for a person, STOP is an opt-out and never an appointment reply (issue 39)."""

import datetime as dt
from zoneinfo import ZoneInfo

import pytest
from django.utils import timezone

from appointments.models import (
    Actor,
    Appointment,
    AppointmentChange,
    Reminder,
    ReminderKind,
    Status,
)
from appointments.services import appointment_change, appointment_set_for_call
from calls.models import Call
from tests.handover import hold_hand_overs
from tests.scoring.factories import AccountFactory, CallFactory
from tests.users.factories import UserFactory
from texting import providers
from texting.inbound import text_receive
from texting.models import OptOut, TextingSettings, TextStatus
from texting.services import text_reply_send, text_send, texts_sweep

pytestmark = pytest.mark.django_db

SENDER = "+13035550100"
DENVER = ZoneInfo("America/Denver")


@pytest.fixture
def handed(monkeypatch):
    """The texts handed to the broker (held here, not sent)."""
    texts: list[int] = []
    hold_hand_overs(
        monkeypatch,
        "texting.tasks.text_send_task",
        then=lambda text_id, countdown: texts.append(text_id),
    )
    return texts


def texting_call(*, quiet=(dt.time(0), dt.time(23, 59, 59))):
    """A call of an account that texts; by default no quiet hours (all but the day's last
    second), so "at once" is now whenever the test runs."""
    account = AccountFactory(name="Demo Motors", timezone="America/Denver")
    TextingSettings.objects.create(
        account=account,
        enabled=True,
        sender=SENDER,
        quiet_start=quiet[0],
        quiet_end=quiet[1],
    )
    return CallFactory(account=account, first_name="Sam", phone="+13035550147")


@pytest.fixture
def call(monkeypatch, handed):
    monkeypatch.setattr(providers, "_later", lambda *args, **kwargs: None)
    return texting_call()


def in_days(days: int, hour: int, minute: int = 0) -> dt.datetime:
    day = timezone.now().astimezone(DENVER).date() + dt.timedelta(days=days)
    return dt.datetime.combine(day, dt.time(hour, minute), DENVER)


def reminders(appointment):
    return {
        r.kind: r.text
        for r in Reminder.objects.filter(appointment=appointment).select_related("text")
    }


def test_setting_an_appointment_stores_three_reminders_with_their_times(call):
    starts = in_days(3, 10, 30)

    booked = appointment_set_for_call(call=call, starts_at=starts, by=Actor.AGENT)

    texts = reminders(booked)
    assert set(texts) == {
        ReminderKind.BOOKED,
        ReminderKind.DAY_BEFORE,
        ReminderKind.TWO_HOURS,
    }
    assert texts[ReminderKind.DAY_BEFORE].due_at == starts - dt.timedelta(days=1)
    assert texts[ReminderKind.TWO_HOURS].due_at == starts - dt.timedelta(hours=2)
    when = f"{starts:%A, %B} {starts.day} at 10:30 AM"
    assert texts[ReminderKind.BOOKED].body == (
        f"Hi Sam, you're booked for a visit at Demo Motors on {when}. "
        "Reply C to confirm or R to reschedule."
    )
    assert texts[ReminderKind.TWO_HOURS].body.startswith(
        f"Hi Sam, a reminder of your visit at Demo Motors on {when}."
    )
    assert {t.purpose for t in texts.values()} == {"reminder"}
    assert {t.to_number for t in texts.values()} == {call.phone}


def test_a_reminder_quiet_hours_would_push_past_the_appointment_is_not_stored(handed):
    # At 8:20 in the morning, two hours before is 6:20, in quiet hours until 8:00, and
    # 8:00 is within half an hour of the appointment: not worth sending.
    call = texting_call(quiet=(dt.time(8), dt.time(21)))
    booked = appointment_set_for_call(
        call=call, starts_at=in_days(2, 8, 20), by="agent"
    )
    assert ReminderKind.TWO_HOURS not in reminders(booked)
    assert ReminderKind.DAY_BEFORE in reminders(booked)


def test_a_moved_or_cancelled_appointment_cancels_what_was_not_sent(call):
    booked = appointment_set_for_call(call=call, starts_at=in_days(3, 15), by="agent")
    moved = appointment_set_for_call(call=call, starts_at=in_days(4, 15), by="agent")

    old = reminders(booked)
    assert old[ReminderKind.DAY_BEFORE].status == TextStatus.CANCELED
    assert old[ReminderKind.TWO_HOURS].status == TextStatus.CANCELED
    new = reminders(moved)
    assert new[ReminderKind.TWO_HOURS].status == TextStatus.SCHEDULED

    appointment_change(appointment=moved, to=Status.CANCELLED, by=Actor.AGENT)
    assert reminders(moved)[ReminderKind.TWO_HOURS].status == TextStatus.CANCELED


def test_texting_off_or_an_opted_out_number_gets_no_reminder(call):
    OptOut.objects.create(
        account=call.account,
        phone=call.phone,
        message="STOP",
        opted_out_at=timezone.now(),
    )
    booked = appointment_set_for_call(call=call, starts_at=in_days(3, 15), by="agent")
    assert reminders(booked) == {}


def test_the_sweep_hands_a_reminder_over_when_it_falls_due(call, handed):
    starts = in_days(3, 15)
    booked = appointment_set_for_call(call=call, starts_at=starts, by="agent")
    two_hours = reminders(booked)[ReminderKind.TWO_HOURS]

    texts_sweep(now=starts - dt.timedelta(hours=3))
    assert two_hours.pk not in handed
    texts_sweep(now=starts - dt.timedelta(hours=2))
    assert two_hours.pk in handed


def reply(call, body, n):
    return text_receive(
        to_number=SENDER,
        from_number=call.phone,
        body=body,
        provider="simulator",
        provider_id=f"SIMIN-{n}",
    )


def test_c_confirms_r_asks_a_person_and_stop_is_only_an_opt_out(call):
    booked = appointment_set_for_call(call=call, starts_at=in_days(3, 15), by="agent")
    first = reminders(booked)[ReminderKind.BOOKED]
    assert text_send(text_id=first.pk) == "sent"

    reply(call, "R", 1)
    booked.refresh_from_db()
    assert (booked.status, booked.change_requested) == (Status.SET, "R")

    reply(call, "c", 2)
    booked.refresh_from_db()
    assert booked.status == Status.CONFIRMED
    change = AppointmentChange.objects.filter(appointment=booked).last()
    assert change is not None
    assert (change.by, change.note) == (Actor.LEAD, "Replied 'c' by text.")

    reply(call, "STOP", 3)
    booked.refresh_from_db()
    assert booked.status == Status.CONFIRMED  # an opt-out, not an answer
    assert OptOut.objects.filter(phone=call.phone).exists()
    # The reminders still to come are not sent to a number that opted out.
    later = reminders(booked)[ReminderKind.TWO_HOURS]
    assert text_send(text_id=later.pk) != "sent"


def test_a_reply_before_any_reminder_went_out_changes_nothing(call):
    booked = appointment_set_for_call(call=call, starts_at=in_days(3, 15), by="agent")
    reply(call, "C", 1)
    booked.refresh_from_db()
    assert booked.status == Status.SET


def test_a_reply_agreeing_a_time_a_person_texted_proposes_it(call):
    agent = UserFactory(account=call.account, first_name="Alex")
    Call.objects.filter(pk=call.pk).update(agent=agent)
    call.refresh_from_db()
    asked = text_reply_send(
        call=call, user=agent, body="Would Saturday at 10:30 work for a test drive?"
    )

    reply(call, "Yes, Saturday at 10:30 works, see you then", 1)

    (proposal,) = Appointment.objects.filter(call=call)
    assert (proposal.status, proposal.set_by) == (Status.PROPOSED, Actor.LEAD)
    local = proposal.starts_at.astimezone(DENVER)
    assert (local.strftime("%A"), local.hour, local.minute) == ("Saturday", 10, 30)
    assert local.date() > asked.created_at.astimezone(DENVER).date()
    assert proposal.evidence.endswith("Yes, Saturday at 10:30 works, see you then")
    # Another reply agreeing a time adds nothing while one is open.
    reply(call, "Or Sunday at 11 is fine too", 2)
    assert Appointment.objects.filter(call=call).count() == 1


def test_a_reply_with_no_time_a_person_texted_proposes_nothing(call):
    agent = UserFactory(account=call.account)
    Call.objects.filter(pk=call.pk).update(agent=agent)
    call.refresh_from_db()
    text_reply_send(call=call, user=agent, body="Thanks for your interest!")
    reply(call, "Sure, thanks", 1)
    assert not Appointment.objects.filter(call=call).exists()


def test_yes_to_a_reminder_confirms_and_is_no_call_me_reply(call):
    booked = appointment_set_for_call(call=call, starts_at=in_days(3, 15), by="agent")
    assert text_send(text_id=reminders(booked)[ReminderKind.BOOKED].pk) == "sent"

    answer = reply(call, "Yes", 1)

    booked.refresh_from_db()
    assert booked.status == Status.CONFIRMED
    assert answer is not None
    assert answer.queued_call_id is None  # "yes" is a call-me word, but not here
