"""The default scorecard's suggestions for hand-written calls, through the transcription's
save: what the call established decides the appointment, the vehicles and the call end;
every matching alert is suggested."""

from __future__ import annotations

import datetime as dt
from zoneinfo import ZoneInfo

import pytest

from calls.services import call_transcription_save
from scoring.models import CallSuggestions
from tests.scoring.factories import CallFactory

pytestmark = pytest.mark.django_db


def said(*lines: tuple[str, str]) -> list[dict]:
    return [
        {"side": side, "start": 5.0 * at, "end": 5.0 * at + 4, "text": text}
        for at, (side, text) in enumerate(lines)
    ]


@pytest.fixture
def call():
    call = CallFactory(
        first_name="Oluwaseun",
        last_name="Adeyemi",
        called_on_year="2025",
        called_on_make="Ford",
        called_on_model="F-150",
        current_year="2018",
        current_make="Kia",
        current_model="Soul",
        # Thursday morning in Chicago.
        received_at=dt.datetime(2026, 12, 10, 9, 0, tzinfo=ZoneInfo("America/Chicago")),
    )
    call.account.timezone = "America/Chicago"
    call.account.save(update_fields=["timezone"])
    return call


def suggested(call, turns, django_capture_on_commit_callbacks) -> dict:
    with django_capture_on_commit_callbacks(execute=True):
        call_transcription_save(call=call, turns=turns)
    members = CallSuggestions.objects.get(call=call).members
    return {
        member: (found["value"], found["line"])
        for member, found in members.items()
        if not member.startswith("cat")
    }


def test_a_rescheduled_test_drive_with_a_trade_in_not_on_the_form(
    call, django_capture_on_commit_callbacks
):
    turns = said(
        (
            "agent",
            "Hi Oluwaseun, it's Siobhan at Prairie Ford. You asked about the F 150?",
        ),
        ("lead", "Yes! I'm ready to buy, honestly, as soon as possible."),
        ("agent", "Great. Any trade-in?"),
        ("lead", "A 2014 Chevy Silverado with a lot of miles."),
        ("agent", "Can you come in tomorrow at noon for a test drive?"),
        ("lead", "Tomorrow at noon works."),
        (
            "lead",
            "Sorry, you're breaking up. Actually noon won't work, I can't make it.",
        ),
        ("agent", "No problem, how about a quarter past two tomorrow?"),
        ("lead", "Sure, see you then."),
    )
    assert suggested(call, turns, django_capture_on_commit_callbacks) == {
        # Friday, the day after the call, at the rebooked time.
        "appointment_date": ("2026-12-11", 8),
        "appointment_time": ("14:15", 8),
        "called_on_make": ("Ford", 0),
        "called_on_model": ("F-150", 0),
        "current_make": ("Chevrolet", 3),
        "current_model": ("Silverado", 3),
        "current_year": ("2014", 3),
        "call_end": ("Appointment set", 8),
        "alert": ("Hot lead, Poor audio", 1),
    }


def test_a_voicemail_suggests_voicemail_and_nothing_it_did_not_establish(
    call, django_capture_on_commit_callbacks
):
    turns = said(
        (
            "lead",
            "Hi, this is Oluwaseun. I can't take your call, leave a message after the beep.",
        ),
        ("agent", "Hi Oluwaseun, Siobhan at Prairie Ford about the F-150."),
        (
            "agent",
            "I can see you tomorrow at noon for a test drive, call me back at 555 0199.",
        ),
    )
    assert suggested(call, turns, django_capture_on_commit_callbacks) == {
        "call_end": ("Voicemail", 0),
    }


def test_a_wrong_number_suggests_wrong_number(call, django_capture_on_commit_callbacks):
    turns = said(
        ("agent", "Hi, is this Oluwaseun? About the F-150 you asked about?"),
        ("lead", "No, I never filled out anything. Wrong number."),
    )
    found = suggested(call, turns, django_capture_on_commit_callbacks)
    assert found["call_end"] == ("Wrong number", 1)
    assert "appointment_date" not in found


def test_a_score_accepts_the_alerts_suggested_when_it_holds_every_tag(
    call, django_capture_on_commit_callbacks
):
    from scoring.services import score_save
    from tests.scoring.factories import in_role

    turns = said(
        ("agent", "Hi Oluwaseun, it's Siobhan at Prairie Ford."),
        ("lead", "You're breaking up. I'm ready to buy though."),
    )
    assert suggested(call, turns, django_capture_on_commit_callbacks)["alert"] == (
        "Hot lead, Poor audio",
        1,
    )
    scorer = in_role("Scorer", accounts=[call.account])
    some = score_save(call=call, scorer=scorer, values={"alert": "Hot lead"})
    assert "alert" not in some.accepted_suggestions
    every = score_save(
        call=call,
        scorer=scorer,
        values={"alert": "Poor audio, Hot lead, Manager follow-up"},
    )
    assert "alert" in every.accepted_suggestions
