"""An appointment's life through its services and the workflows that make one: each
change kept with who and when, a change its life does not allow refused without a trace,
a scorer's appointment members and a transcript's agreed time (issue 39)."""

import datetime as dt
from zoneinfo import ZoneInfo

import pytest

from appointments.effects import propose
from appointments.models import Actor, Appointment, AppointmentChange, Kind, Status
from appointments.services import (
    NotAllowed,
    appointment_change,
    appointment_reschedule,
    appointment_set_for_call,
)
from calls.models import CallStatus
from scoring.services import score_save
from tests.scoring.factories import AccountFactory, CallFactory, in_role

pytestmark = pytest.mark.django_db

DENVER = ZoneInfo("America/Denver")
SATURDAY = dt.datetime(2026, 11, 28, 10, 30, tzinfo=DENVER)


@pytest.fixture
def call():
    account = AccountFactory(name="Demo Motors North", timezone="America/Denver")
    return CallFactory(
        account=account,
        status=CallStatus.ANSWER,
        first_name="Sam",
        last_name="Rivera",
        phone="+13035550147",
    )


def history(appointment):
    return list(
        AppointmentChange.objects.filter(appointment=appointment).values_list(
            "status_from", "status_to", "by"
        )
    )


def test_set_confirmed_kept_and_corrected_each_kept_with_who(call):
    manager = in_role("Manager", accounts=[call.account])
    booked = appointment_set_for_call(
        call=call, starts_at=SATURDAY, by=Actor.AGENT, kind=Kind.TEST_DRIVE
    )
    appointment_change(appointment=booked, to=Status.CONFIRMED, by=Actor.LEAD)
    appointment_change(
        appointment=booked, to=Status.KEPT, by=Actor.MANAGER, by_user=manager
    )
    appointment_change(
        appointment=booked, to=Status.NO_SHOW, by=Actor.MANAGER, by_user=manager
    )

    booked.refresh_from_db()
    assert booked.status == Status.NO_SHOW
    assert (booked.phone, booked.lead_name) == ("+13035550147", "Sam Rivera")
    assert history(booked) == [
        ("", "set", "agent"),
        ("set", "confirmed", "lead"),
        ("confirmed", "kept", "manager"),
        ("kept", "no_show", "manager"),
    ]
    last = AppointmentChange.objects.filter(appointment=booked).last()
    assert last is not None
    assert last.by_user == manager


def test_a_change_the_life_does_not_allow_is_refused_and_changes_nothing(call):
    booked = appointment_set_for_call(call=call, starts_at=SATURDAY, by=Actor.AGENT)
    appointment_change(appointment=booked, to=Status.CANCELLED, by=Actor.AGENT)

    with pytest.raises(NotAllowed, match="cancelled cannot become kept"):
        appointment_change(appointment=booked, to=Status.KEPT, by=Actor.MANAGER)
    with pytest.raises(NotAllowed, match="cannot be moved"):
        appointment_reschedule(appointment=booked, starts_at=SATURDAY, by=Actor.AGENT)
    booked.refresh_from_db()
    assert booked.status == Status.CANCELLED
    assert len(history(booked)) == 2
    # The same status again is no change: nothing recorded.
    appointment_change(appointment=booked, to=Status.CANCELLED, by=Actor.AGENT)
    assert len(history(booked)) == 2


def test_a_new_time_moves_the_open_appointment_to_a_new_one_linked(call):
    booked = appointment_set_for_call(call=call, starts_at=SATURDAY, by=Actor.AGENT)
    monday = SATURDAY + dt.timedelta(days=2)

    moved = appointment_set_for_call(call=call, starts_at=monday, by=Actor.AGENT)

    booked.refresh_from_db()
    assert booked.status == Status.RESCHEDULED
    assert moved.replaces == booked
    assert (moved.status, moved.starts_at) == (Status.SET, monday)
    assert history(booked)[-1] == ("set", "rescheduled", "agent")
    # Setting the same time again changes nothing.
    assert (
        appointment_set_for_call(call=call, starts_at=monday, by=Actor.AGENT) == moved
    )
    assert Appointment.objects.count() == 2


def test_a_scorers_appointment_members_set_it_in_the_accounts_timezone(call):
    scorer = in_role("Scorer", accounts=[call.account])

    score_save(
        call=call,
        scorer=scorer,
        values={"appointment_date": "2026-11-28", "appointment_time": "10:30"},
    )

    (booked,) = Appointment.objects.all()
    assert booked.starts_at == SATURDAY
    assert (booked.set_by, booked.set_by_user) == (Actor.SCORER, scorer)
    # A later save that leaves the appointment alone moves nothing; a new time moves it.
    score_save(call=call, scorer=scorer, values={"cat1": True})
    assert Appointment.objects.count() == 1
    score_save(call=call, scorer=scorer, values={"appointment_time": "14:15"})
    latest = Appointment.objects.get(status=Status.SET)
    assert latest.starts_at == SATURDAY.replace(hour=14, minute=15)
    assert latest.replaces == booked


def test_a_score_with_a_date_but_no_time_sets_nothing(call):
    scorer = in_role("Scorer", accounts=[call.account])
    score_save(call=call, scorer=scorer, values={"appointment_date": "2026-11-28"})
    assert not Appointment.objects.exists()


def turn(side, start, text):
    return {"side": side, "start": start, "end": start + 2, "text": text}


AGREED = [
    turn("agent", 0, "Hi Sam, it's Alex at Demo Motors about the RAV4."),
    turn("lead", 3, "Hi, yes. Can I test drive it?"),
    turn("agent", 6, "Of course. Would Saturday at 10 30 work?"),
    turn("lead", 9, "Saturday at 10 30 works, see you then."),
    turn("agent", 12, "Great, you're booked for Saturday at 10:30. Bye."),
]


def test_a_transcript_that_agrees_a_time_proposes_it_for_a_person(call, monkeypatch):
    call.transcript_turns = AGREED
    call.transcript_language = "en"
    call.save()
    monkeypatch.setattr(
        "appointments.effects.reading_context",
        lambda c: {
            "lead_first_name": "Sam",
            "dealer": "Demo Motors",
            "call_started_at": dt.datetime(2026, 11, 24, 9, 0, tzinfo=DENVER),
            "received_at": dt.datetime(2026, 11, 24, 8, 59, tzinfo=DENVER),
            "timezone": "America/Denver",
        },
    )

    proposal = propose(call_id=call.pk)

    assert proposal is not None
    assert proposal.status == Status.PROPOSED
    assert proposal.set_by == Actor.SERVICE
    assert proposal.starts_at == SATURDAY
    assert "Saturday" in proposal.evidence
    # Proposed once: the task run again (a redelivery) proposes nothing more.
    assert propose(call_id=call.pk) is None
    # A person setting the same time accepts the proposal.
    accepted = appointment_set_for_call(call=call, starts_at=SATURDAY, by=Actor.AGENT)
    assert accepted.pk == proposal.pk
    assert accepted.status == Status.SET
    assert history(accepted) == [
        ("", "proposed", "service"),
        ("proposed", "set", "agent"),
    ]


def test_nothing_is_proposed_from_a_call_in_another_language(call):
    call.transcript_turns = AGREED
    call.transcript_language = "es"
    call.save()
    assert propose(call_id=call.pk) is None
    assert not Appointment.objects.exists()


def test_the_same_time_with_another_kind_or_vehicle_is_kept_as_an_edit(call):
    booked = appointment_set_for_call(call=call, starts_at=SATURDAY, by=Actor.AGENT)

    again = appointment_set_for_call(
        call=call,
        starts_at=SATURDAY,
        by=Actor.AGENT,
        kind=Kind.TEST_DRIVE,
        vehicle="2025 Toyota RAV4",
    )

    assert again.pk == booked.pk
    again.refresh_from_db()
    assert (again.kind, again.vehicle, again.status) == (
        Kind.TEST_DRIVE,
        "2025 Toyota RAV4",
        Status.SET,
    )
    last = AppointmentChange.objects.filter(appointment=booked).last()
    assert last is not None
    assert (last.status_from, last.status_to, last.note) == (
        "set",
        "set",
        "Changed kind sales visit to test drive; vehicle none to 2025 Toyota RAV4.",
    )
