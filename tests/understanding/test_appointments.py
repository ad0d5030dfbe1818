"""Appointments as people agree them: every way of saying a day and a time, the last
agreed one winning, a cancellation, and what is not an appointment. The call is made on
Monday, December 7 2026 in Chicago."""

import datetime as dt

import pytest

from tests.understanding.talk import STARTED, agent, context, lead, turns
from understanding import understand
from understanding.times import spoken_days, spoken_time

MONDAY = STARTED.date()


def appointment(*said, **changes):
    found = understand(turns(*said), context(**changes)).appointment
    if found is None:
        return None
    return found.date, found.time, found.what, [item.line for item in found.evidence]


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("tomorrow at noon", dt.time(12, 0)),
        ("around midday", dt.time(12, 0)),
        ("twelve noon", dt.time(12, 0)),
        ("a quarter past two", dt.time(14, 15)),
        ("quarter to five", dt.time(16, 45)),
        ("half past four", dt.time(16, 30)),
        ("ten after three", dt.time(15, 10)),
        ("two thirty", dt.time(14, 30)),
        ("two forty-five", dt.time(14, 45)),
        ("at 10 30", dt.time(10, 30)),
        ("10:30", dt.time(10, 30)),
        ("2:30 pm", dt.time(14, 30)),
        ("ten a.m.", dt.time(10, 0)),
        ("9am", dt.time(9, 0)),
        ("Monday morning at nine", dt.time(9, 0)),
        ("at 2", dt.time(14, 0)),
        ("at 7", dt.time(7, 0)),
        ("at eleven", dt.time(11, 0)),
        ("at six in the evening", dt.time(18, 0)),
    ],
)
def test_times_of_day_as_said(text, expected):
    assert spoken_time(text) == expected


@pytest.mark.parametrize(
    "text",
    [
        "Tuesday at 53",
        "about ten minutes",
        "at one point",
        "in 2019 I bought it",
        "my number is 555 0142",
        "it has 40 000 miles",
    ],
)
def test_numbers_that_are_not_times(text):
    assert spoken_time(text) is None


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("today", dt.date(2026, 12, 7)),
        ("tomorrow", dt.date(2026, 12, 8)),
        ("the day after tomorrow", dt.date(2026, 12, 9)),
        ("Tuesday", dt.date(2026, 12, 8)),
        ("next Tuesday", dt.date(2026, 12, 8)),
        ("this Friday", dt.date(2026, 12, 11)),
        ("Monday", dt.date(2026, 12, 14)),
        ("this Monday", dt.date(2026, 12, 7)),
        ("the 14th", dt.date(2026, 12, 14)),
        ("the 3rd", dt.date(2027, 1, 3)),
        ("December 10th", dt.date(2026, 12, 10)),
    ],
)
def test_days_as_said(text, expected):
    assert [day.value for day in spoken_days(text, MONDAY)] == [expected]


def test_tomorrow_counts_from_the_call_in_the_accounts_timezone():
    # 23:30 in Chicago on Monday is already Tuesday in UTC; tomorrow is still Tuesday.
    late = STARTED.replace(hour=23, minute=30)
    assert appointment(
        agent("Can you come in tomorrow at noon for a test drive?"),
        lead("Tomorrow at noon works for me."),
        call_started_at=late.astimezone(dt.UTC),
    ) == (dt.date(2026, 12, 8), dt.time(12), "test drive", [0, 1])


def test_a_proposal_answered_yes_is_agreed():
    assert appointment(
        agent("Would you like to come see the CR-V in person?"),
        lead("Yeah, I think so."),
        agent("How about Thursday at a quarter past two?"),
        lead("Sure, that's fine."),
    ) == (dt.date(2026, 12, 10), dt.time(14, 15), "visit", [2, 3])


def test_a_day_and_a_time_said_in_separate_lines_are_one_appointment():
    assert appointment(
        agent("When could you stop by the showroom?"),
        lead("Friday would be best."),
        agent("Great, what time on Friday?"),
        lead("Half past four."),
        agent("Perfect, I have you down for Friday at half past four."),
    ) == (dt.date(2026, 12, 11), dt.time(16, 30), "visit", [1, 2, 3, 4])


def test_the_rescheduled_appointment_replaces_the_first():
    assert appointment(
        agent("So I have you down for Tuesday at 10 30 for the test drive."),
        lead("Actually, can we move it? Tuesday doesn't work for me any more."),
        agent("No problem. How about Wednesday at two thirty instead?"),
        lead("Wednesday at two thirty is perfect."),
    ) == (dt.date(2026, 12, 9), dt.time(14, 30), "test drive", [2, 3])


def test_a_cancellation_without_a_new_time_leaves_no_appointment():
    facts = understand(
        turns(
            agent("You're booked for Saturday at ten a.m. to see the Sierra 1500."),
            lead("Thanks. Actually I need to cancel that, something came up."),
            agent("Understood, just let me know when you are ready."),
        ),
        context(),
    )
    assert facts.appointment is None
    assert facts.cancelled is not None
    assert [item.line for item in facts.cancelled.evidence] == [1]


def test_tuesday_at_53_holds_no_time_so_no_appointment():
    assert (
        appointment(
            agent(
                "The F-150 we have is a Tuesday at 53 thousand, I mean it lists at 53."
            ),
            lead("Okay."),
        )
        is None
    )


def test_a_callback_time_is_not_an_appointment():
    facts = understand(
        turns(
            lead("I'm at work, can you call me back tomorrow at 4?"),
            agent("Sure, I'll call you back tomorrow at four."),
        ),
        context(),
    )
    assert facts.appointment is None
    assert facts.callback is not None
    assert (facts.callback.by, facts.callback.date, facts.callback.time) == (
        "lead",
        dt.date(2026, 12, 8),
        dt.time(16),
    )


def test_a_day_refused_is_not_agreed():
    assert (
        appointment(
            agent("Could you come in Thursday at 3?"),
            lead("No, Thursday is no good for me."),
            agent("Okay."),
        )
        is None
    )


def test_a_proposal_left_unanswered_is_not_agreed():
    assert (
        appointment(
            agent("Could you come in Thursday at 3?"),
            lead("Let me check with my wife first and get back to you."),
        )
        is None
    )


def test_a_service_appointment_says_so():
    assert appointment(
        agent("We can take it for the oil change on the 14th at 9."),
        lead("Yes please, the 14th at 9 works."),
    ) == (dt.date(2026, 12, 14), dt.time(9), "service", [0, 1])


def test_monday_morning_at_nine_is_next_monday_at_nine():
    assert appointment(
        lead("Could I come by Monday morning at nine?"),
        agent("Absolutely, see you Monday at nine."),
    ) == (dt.date(2026, 12, 14), dt.time(9), "visit", [0, 1])


def test_not_wanting_to_cancel_keeps_the_appointment():
    assert appointment(
        agent("You're booked for Saturday at 10 30 to see the Sierra 1500."),
        lead("Great, I don't want to cancel, I'll be there."),
    ) == (dt.date(2026, 12, 12), dt.time(10, 30), "visit", [0, 1])


def test_a_day_and_time_only_stated_is_not_agreed_by_an_okay():
    assert (
        appointment(
            lead("Great, I might come in to look."),
            agent("Sounds good. We close at 6 today, by the way."),
            lead("Okay, thanks."),
        )
        is None
    )


@pytest.mark.parametrize(
    "answer",
    ["Thursday at 9 works, before I head to work.", "Thursday at nine works."],
)
def test_a_day_and_time_said_back_with_works_agree_to_the_visit(answer):
    found = appointment(
        agent("Could you come in Thursday?"),
        lead(answer),
        agent("Thursday at nine it is. I'll send the confirmation."),
    )
    assert found is not None
    assert found[:2] == (dt.date(2026, 12, 10), dt.time(9, 0))


def test_it_is_agrees_only_at_the_end_of_what_is_said():
    # "it is" inside a sentence ("it is a long drive") agrees to nothing.
    assert (
        appointment(
            agent("Could you come in Thursday at nine?"),
            lead("Thursday at nine, it is a long drive for me though, I'm not sure."),
        )
        is None
    )


def test_a_callbacks_day_is_not_a_visit_when_a_visit_is_talked_of_later():
    said = (
        lead("Can you call me back later? Thursday after five would be best."),
        agent("Absolutely. Are you still trading the Pilot?"),
        lead("Probably, yes. We can talk about it Thursday."),
        agent("Sounds good. Would you want to come see the truck this week?"),
        lead("Maybe, let's talk Thursday."),
    )
    facts = understand(turns(*said), context())
    assert facts.appointment is None
    assert facts.callback is not None
    assert facts.callback.date == dt.date(2026, 12, 10)
