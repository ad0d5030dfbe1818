"""Suggestions from a call's transcript turns: the pure matcher (phrases, sides, first
seconds, {first_name}, {weekday}, re: lines, appointments, vehicles) and the service that
stores them when a transcription is saved."""

from __future__ import annotations

import datetime as dt
from zoneinfo import ZoneInfo

import pytest

from calls.services import call_transcription_save
from scoring.defaults import (
    DEFAULT_CATEGORIES,
    DEFAULT_CATEGORY_RULES,
    DEFAULT_CHOICE_RULES,
    DEFAULT_CHOICES,
    PREVIOUS_CATEGORY_RULES,
    PREVIOUS_CHOICE_RULES,
    RULES_BEFORE_0013_CATEGORIES,
    RULES_BEFORE_0013_CHOICES,
)
from scoring.models import CallSuggestions, ScorecardCategory, ScorecardChoice
from scoring.suggestions import Rule, compile_phrases, suggest
from tests.scoring.factories import CallFactory
from understanding.times import next_weekday, spoken_time

NAMES = {"agent": "Avery Lopez", "lead": "Pat Buyer"}
TUESDAY = dt.date(2026, 11, 24)


def turn(side: str, start: float, text: str, end: float | None = None) -> dict:
    return {"side": side, "start": start, "end": end or start + 3, "text": text}


def run(turns, *rules, called_on=None, current=None, first_name="Pat"):
    return suggest(
        turns=turns,
        rules=rules,
        names=NAMES,
        first_name=first_name,
        received_on=TUESDAY,
        called_on=called_on or {},
        current=current or {},
    )


def rule(phrases, side="either", within=None, member="cat1", value=1):
    return Rule(
        member=member, value=value, phrases=phrases, side=side, within_seconds=within
    )


def test_a_phrase_on_the_rule_side_suggests_the_category_with_its_line():
    turns = [
        turn("lead", 0, "Hello?"),
        turn("agent", 2, "Hi, this is Avery from North Motors."),
    ]
    assert run(turns, rule("this is", side="agent")) == {
        "cat1": {
            "value": 1,
            "line": 1,
            "text": "Avery Lopez (00:02-00:05): Hi, this is Avery from North Motors.",
            "at": 2.0,
        }
    }


def test_a_phrase_said_by_the_other_side_does_not_count():
    turns = [turn("lead", 0, "This is Pat"), turn("agent", 5, "Thanks")]
    assert run(turns, rule("this is", side="agent")) == {}
    assert run(turns, rule("this is", side="lead"))["cat1"]["line"] == 0
    assert run(turns, rule("this is", side="either"))["cat1"]["line"] == 0


def test_within_seconds_only_hears_the_first_seconds():
    turns = [turn("agent", 25, "Hi Pat, thanks for calling")]
    assert run(turns, rule("{first_name}", within=20)) == {}
    assert run(turns, rule("{first_name}", within=30))["cat1"]["at"] == 25.0


def test_first_name_is_the_lead_s_whole_word_name_and_needs_one():
    assert run([turn("agent", 1, "Hi Patricia")], rule("{first_name}")) == {}
    assert run([turn("agent", 1, "Hi PAT!")], rule("{first_name}"))["cat1"]
    assert compile_phrases("{first_name}", first_name="") == []


def test_weekday_stands_for_any_weekday_and_turns_are_read_in_time_order():
    turns = [turn("agent", 40, "How about Saturday?"), turn("agent", 10, "Hello")]
    found = run(turns, rule("come in\n{weekday}"))
    assert (found["cat1"]["line"], found["cat1"]["at"]) == (1, 40.0)


def test_a_re_line_is_a_case_insensitive_regular_expression():
    phrases = r"re:\b(monday|thursday)\b.*\b(at|around)\b"
    assert run([turn("lead", 3, "THURSDAY around noon works")], rule(phrases))
    assert run([turn("lead", 3, "Thursday works")], rule(phrases)) == {}
    # A broken expression is left out, not an error.
    assert compile_phrases("re:(unclosed\nhello", first_name="") != []


def test_a_call_end_of_the_account_s_own_takes_the_first_matching_rule():
    turns = [turn("lead", 3, "Send it to my son, he handles the finance side")]
    found = run(
        turns,
        rule("my son", member="call_end", value="Family member"),
        rule("finance", member="call_end", value="Finance question"),
        rule("manager", member="alert", value="Manager follow-up"),
    )
    assert found["call_end"]["value"] == "Family member"
    assert "alert" not in found


def test_the_facts_decide_the_call_end_over_the_phrases():
    # The lead asks for a callback: the phrase rule for "Not interested" matches too, but
    # the facts say a callback was requested.
    turns = [turn("lead", 3, "I'm not interested today, but call me back next month")]
    found = run(
        turns,
        rule("not interested", member="call_end", value="Not interested"),
        rule("call me back", member="call_end", value="Callback requested"),
    )
    assert found["call_end"]["value"] == "Callback requested"


def test_a_facts_call_end_the_scorecard_does_not_list_is_not_suggested():
    turns = [turn("lead", 3, "Sorry, wrong number.")]
    assert "call_end" not in run(
        turns, rule("never said", member="call_end", value="Appointment set")
    )


def test_the_vehicle_phrase_hears_every_line_naming_the_vehicle_discussed():
    turns = [
        turn("agent", 1, "Hi Pat, it's Avery from North Motors."),
        turn("lead", 5, "Hi. Is the C R V still there?"),
        turn("agent", 9, "The CR-V in blue is, yes."),
    ]
    honda = {"make": "Honda", "model": "CR-V", "year": "2025"}
    found = run(turns, rule("{vehicle}", side="agent"), called_on=honda)
    assert found["cat1"]["line"] == 2
    # Not a vehicle said, not the words "{vehicle}".
    assert "cat1" not in run(turns[:1], rule("{vehicle}"), called_on=honda)
    assert "cat1" not in run(
        [turn("agent", 1, "The {vehicle} is here")], rule("{vehicle}")
    )


def test_questions_answered_hears_the_answer_when_every_question_was_answered():
    answered = [
        turn("lead", 1, "Does the CR-V have heated seats?"),
        turn("agent", 5, "Yes, front and back."),
    ]
    found = run(answered, rule("{questions_answered}", side="agent"))
    assert found["cat1"]["line"] == 1
    talked_past = [
        *answered,
        turn("lead", 9, "And what is the price on the blue one?"),
        turn("agent", 13, "So when would you like to come in?"),
    ]
    assert "cat1" not in run(talked_past, rule("{questions_answered}"))
    request = [
        turn("lead", 1, "Can you call me back this afternoon?"),
        turn("agent", 5, "Sure, I will."),
    ]
    assert "cat1" not in run(request, rule("{questions_answered}"))


def test_the_appointment_phrase_hears_the_line_that_agreed_a_day_and_time():
    agreed = [
        turn("agent", 5, "Can you come in tomorrow at noon?"),
        turn("lead", 9, "Yes, that works."),
    ]
    assert run(agreed, rule("{appointment}"))["cat1"]["line"] == 1
    cancelled = [
        turn("agent", 5, "I'm confirming your visit tomorrow at ten."),
        turn("lead", 9, "I need to cancel that, sorry."),
    ]
    assert "cat1" not in run(cancelled, rule("{appointment}"))


def test_on_a_wrong_number_the_first_name_is_not_heard():
    turns = [
        turn("agent", 1, "Hi, is this Pat? Avery from North Motors."),
        turn("lead", 5, "No, there's no Pat here."),
    ]
    found = run(turns, rule("{first_name}"), rule("from", member="cat2"))
    assert list(found) == ["cat2"]


def test_a_polite_cancellation_is_not_an_unhappy_customer():
    unhappy = DEFAULT_CHOICE_RULES[("alert", "Unhappy customer")]
    tag = rule(unhappy[0], side=unhappy[1], member="alert", value="Unhappy customer")
    polite = [turn("lead", 3, "I'm so sorry, I have to cancel Friday's test drive.")]
    assert "alert" not in run(polite, tag)
    upset = [turn("lead", 3, "I'm really disappointed, cancel it.")]
    assert run(upset, tag)["alert"]["value"] == "Unhappy customer"


def test_every_matching_alert_is_suggested_with_the_first_line():
    turns = [
        turn("lead", 3, "Can you hear me? You're breaking up."),
        turn("lead", 9, "I want to talk to your manager, this is terrible."),
        turn("lead", 15, "I'm ready to buy today if the price is right."),
    ]
    found = run(
        turns,
        rule("manager", member="alert", value="Manager follow-up", side="lead"),
        rule("ready to buy", member="alert", value="Hot lead", side="lead"),
        rule("breaking up", member="alert", value="Poor audio"),
        rule("nobody says this", member="alert", value="Unhappy customer"),
    )
    assert found["alert"] == {
        "value": "Manager follow-up, Hot lead, Poor audio",
        "line": 0,
        "text": "Pat Buyer (00:03-00:06): Can you hear me? You're breaking up.",
        "at": 3.0,
    }


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("Thursday at two thirty", "14:30"),
        ("Tuesday at 10", "10:00"),
        ("see you at 2:30 pm", "14:30"),
        ("11 am", "11:00"),
        ("9:15", "09:15"),
        ("at five", "17:00"),
        ("at seven", "07:00"),
        ("at twelve", "12:00"),
        ("around noon", "12:00"),
        ("at two forty five", "14:45"),
        ("at 8 p.m.", "20:00"),
        ("I have 3 kids", None),
    ],
)
def test_spoken_times(text, expected):
    moment = spoken_time(text)
    assert (moment.strftime("%H:%M") if moment else None) == expected


def test_a_weekday_is_the_next_one_after_the_call_day():
    assert next_weekday(TUESDAY, "Thursday") == dt.date(2026, 11, 26)
    assert next_weekday(TUESDAY, "tuesday") == dt.date(2026, 12, 1)
    assert next_weekday(TUESDAY, "Monday") == dt.date(2026, 11, 30)


def test_the_appointment_agreed_is_suggested_with_the_line_that_agreed_it():
    turns = [
        turn("agent", 5, "Could you come in Friday?"),
        turn("lead", 9, "Thursday at two thirty is better"),
        turn("agent", 13, "Sure, see you Thursday at two thirty."),
    ]
    found = run(turns)
    assert found["appointment_date"]["value"] == "2026-11-26"
    assert found["appointment_time"]["value"] == "14:30"
    assert found["appointment_time"]["line"] == 2


def test_a_day_and_time_only_proposed_suggests_no_appointment():
    # Before issue 38 the first weekday and time said was suggested, agreed or not.
    turns = [
        turn("agent", 5, "Could you come in Friday?"),
        turn("lead", 9, "Thursday at two thirty is better"),
    ]
    assert "appointment_date" not in run(turns)


def test_tomorrow_at_noon_counts_from_the_call():
    turns = [
        turn("agent", 5, "Can you come in tomorrow at noon?"),
        turn("lead", 9, "Yes, that works."),
    ]
    found = run(turns)
    assert (found["appointment_date"]["value"], found["appointment_time"]["value"]) == (
        "2026-11-25",
        "12:00",
    )


def test_the_call_s_vehicle_words_said_suggest_the_called_on_vehicle():
    turns = [
        turn("agent", 5, "You were looking at the 2024 toyota camry?"),
        turn("lead", 9, "Yes."),
    ]
    found = run(turns, called_on={"make": "Toyota", "model": "Camry", "year": "2024"})
    assert {m: s["value"] for m, s in found.items()} == {
        "called_on_make": "Toyota",
        "called_on_model": "Camry",
        "called_on_year": "2024",
    }


def test_a_trade_in_discussed_suggests_the_current_vehicle():
    turns = [
        turn("agent", 5, "Are you trading in a car for the Toyota Camry?"),
        turn("lead", 9, "Yes, my 2015 Honda Civic."),
        turn("agent", 30, "We have a Ford Focus too."),
    ]
    found = run(turns, called_on={"make": "Toyota", "model": "Camry"})
    assert {m: s["value"] for m, s in found.items() if m.startswith("current")} == {
        "current_make": "Honda",
        "current_model": "Civic",
        "current_year": "2015",
    }
    assert run([turn("lead", 9, "My 2015 Honda Civic is great")]) == {}


def test_the_lead_s_known_trade_in_is_suggested_when_said():
    turns = [
        turn("agent", 5, "Still want to trade in the Outback?"),
        turn("lead", 9, "Yes."),
    ]
    found = run(turns, current={"make": "Subaru", "model": "Outback"})
    assert found["current_model"]["value"] == "Outback"


def test_a_trade_in_the_lead_denies_suggests_no_current_vehicle():
    turns = [
        turn("agent", 5, "Still want to trade in the Outback?"),
        turn("lead", 9, "No, I'm keeping it."),
    ]
    found = run(turns, current={"make": "Subaru", "model": "Outback"})
    assert not [member for member in found if member.startswith("current")]


def test_the_word_after_a_make_is_not_suggested_as_the_trade_in_model():
    turns = [
        turn("agent", 5, "Anything to trade in?"),
        turn("lead", 9, "Yes, a Nissan log truck from 2009."),
    ]
    found = run(turns)
    assert {m: s["value"] for m, s in found.items() if m.startswith("current")} == {
        "current_make": "Nissan",
        "current_year": "2009",
    }


# --- the service, through the transcription's save


@pytest.fixture
def call(db):
    call = CallFactory(
        first_name="Pat",
        called_on_make="Toyota",
        called_on_model="Camry",
        # Tuesday evening in Denver, already Wednesday in UTC.
        received_at=dt.datetime(2026, 11, 24, 20, 0, tzinfo=ZoneInfo("America/Denver")),
    )
    call.account.timezone = "America/Denver"
    call.account.save(update_fields=["timezone"])
    return call


CONVERSATION = [
    {
        "side": "agent",
        "start": 0.5,
        "end": 4,
        "text": "Hi Pat, this is Avery from North Motors.",
    },
    {"side": "lead", "start": 4.5, "end": 7, "text": "Hi."},
    {
        "side": "agent",
        "start": 7.5,
        "end": 12,
        "text": "You were looking at the Camry. Will you be trading in a car?",
    },
    {
        "side": "lead",
        "start": 12.5,
        "end": 15,
        "text": "No. It's too expensive anyway.",
    },
    {
        "side": "agent",
        "start": 15.5,
        "end": 20,
        "text": "Can you come in Wednesday at 10 for a test drive? I have you down for then.",
    },
]


def test_saving_a_transcription_stores_the_default_scorecard_s_suggestions(
    call, django_capture_on_commit_callbacks
):
    with django_capture_on_commit_callbacks(execute=True):
        call_transcription_save(
            call=call, turns=CONVERSATION, summary="Booked a test drive."
        )
    members = CallSuggestions.objects.get(call=call).members
    names = {
        f"cat{c.slot}": c.name
        for c in ScorecardCategory.objects.filter(scorecard__account=call.account)
    }
    suggested = {names.get(m, m): s["value"] for m, s in members.items()}
    assert suggested == {
        "Greeted the customer by name": 1,
        "Introduced self and dealership": 1,
        "Confirmed the vehicle of interest": 1,
        "Asked about a trade-in": 1,
        "Asked for the appointment": 1,
        "Set a date and time": 1,
        "call_end": "Appointment set",
        "alert": "Unhappy customer",
        # Received on a Tuesday in the account's timezone: the next Wednesday.
        "appointment_date": "2026-11-25",
        "appointment_time": "10:00",
        "called_on_model": "Camry",
        # The Camry said is a Toyota (the make the model belongs to).
        "called_on_make": "Toyota",
    }
    assert members["cat1"] == {
        "value": 1,
        "line": 0,
        "text": "Agent (00:00-00:04): Hi Pat, this is Avery from North Motors.",
        "at": 0.5,
    }
    assert members["alert"]["text"] == (
        "Pat Rivera (00:12-00:15): No. It's too expensive anyway."
    )


def test_an_account_s_own_phrases_and_a_new_transcription_replace_the_suggestions(
    call, django_capture_on_commit_callbacks
):
    with django_capture_on_commit_callbacks(execute=True):
        call_transcription_save(call=call, turns=CONVERSATION)
    ScorecardChoice.objects.filter(
        scorecard__account=call.account, kind="alert", name="Hot lead"
    ).update(phrases="test drive", side="agent")
    ScorecardChoice.objects.filter(
        scorecard__account=call.account, name="Unhappy customer"
    ).update(phrases="")
    with django_capture_on_commit_callbacks(execute=True):
        call_transcription_save(call=call, turns=CONVERSATION[:1] + CONVERSATION[4:])
    members = CallSuggestions.objects.get(call=call).members
    assert members["alert"]["value"] == "Hot lead"
    assert members["alert"]["line"] == 1
    assert "cat4" not in members


def test_the_migration_gives_default_rules_only_to_default_names_without_phrases(db):
    import importlib

    from django.apps import apps

    from tests.accounts.factories import AccountFactory

    migration = importlib.import_module(
        "scoring.migrations.0004_default_suggestion_phrases"
    )
    account = AccountFactory()
    categories = ScorecardCategory.objects.filter(scorecard__account=account)
    categories.update(phrases="", side="either", within_seconds=None)
    categories.filter(slot=2).update(phrases="my own")
    categories.filter(slot=3).update(name="Named the car")
    ScorecardChoice.objects.filter(scorecard__account=account).update(phrases="")
    migration.forward(apps, None)
    rules = {c.slot: (c.phrases, c.side, c.within_seconds) for c in categories.all()}
    assert rules[1] == ("{first_name}", "agent", 20)
    assert rules[2] == ("my own", "either", None)
    assert rules[3] == ("", "either", None)
    assert (
        ScorecardChoice.objects.get(
            scorecard__account=account, name="Callback requested"
        ).phrases
        == DEFAULT_CHOICE_RULES[("call_end", "Callback requested")][0]
    )


def test_the_issue_38_migration_gives_every_default_name_its_rule_unless_edited(db):
    import importlib

    from django.apps import apps

    from tests.accounts.factories import AccountFactory

    migration = importlib.import_module(
        "scoring.migrations.0012_every_default_has_a_rule"
    )
    account = AccountFactory()
    categories = ScorecardCategory.objects.filter(scorecard__account=account)
    choices = ScorecardChoice.objects.filter(scorecard__account=account)
    for name, (phrases, side, within) in PREVIOUS_CATEGORY_RULES.items():
        categories.filter(name=name).update(
            phrases=phrases, side=side, within_seconds=within
        )
    categories.filter(name="Built rapport").update(phrases="")
    categories.filter(name="Offered alternatives").update(phrases="we also stock")
    for (kind, name), (phrases, side, within) in PREVIOUS_CHOICE_RULES.items():
        choices.filter(kind=kind, name=name).update(
            phrases=phrases, side=side, within_seconds=within
        )
    choices.filter(name="Voicemail").update(phrases="")
    choices.filter(name="Not interested").update(phrases="not interested\nno thanks")

    migration.forward(apps, None)

    rules = {c.name: (c.phrases, c.side, c.within_seconds) for c in categories.all()}
    assert rules["Set a date and time"] == DEFAULT_CATEGORY_RULES["Set a date and time"]
    assert rules["Built rapport"] == DEFAULT_CATEGORY_RULES["Built rapport"]
    assert rules["Offered alternatives"][0] == "we also stock"
    listed = {c.name: (c.phrases, c.side, c.within_seconds) for c in choices.all()}
    assert listed["Voicemail"] == DEFAULT_CHOICE_RULES[("call_end", "Voicemail")]
    assert (
        listed["Callback requested"]
        == DEFAULT_CHOICE_RULES[("call_end", "Callback requested")]
    )
    assert listed["Not interested"][0] == "not interested\nno thanks"


def test_every_default_name_has_a_rule():
    assert set(DEFAULT_CATEGORY_RULES) == {name for name, _ in DEFAULT_CATEGORIES}
    assert set(DEFAULT_CHOICE_RULES) == {
        (kind, name) for kind in ("call_end", "alert") for name in DEFAULT_CHOICES[kind]
    }


def test_the_0013_migration_moves_only_scorecards_still_on_the_previous_rules(db):
    import importlib

    from django.apps import apps

    from tests.accounts.factories import AccountFactory

    migration = importlib.import_module(
        "scoring.migrations.0013_default_rules_read_the_facts"
    )
    account = AccountFactory()
    categories = ScorecardCategory.objects.filter(scorecard__account=account)
    choices = ScorecardChoice.objects.filter(scorecard__account=account)
    for name, (phrases, side, within) in RULES_BEFORE_0013_CATEGORIES.items():
        categories.filter(name=name).update(
            phrases=phrases, side=side, within_seconds=within
        )
    for (kind, name), (phrases, side, within) in RULES_BEFORE_0013_CHOICES.items():
        choices.filter(kind=kind, name=name).update(
            phrases=phrases, side=side, within_seconds=within
        )
    categories.filter(name="Built rapport").update(phrases="how are you\nweather")
    categories.filter(name="Offered alternatives").update(phrases="")
    categories.filter(name="Set a date and time").update(within_seconds=600)

    migration.forward(apps, None)

    rules = {c.name: (c.phrases, c.side, c.within_seconds) for c in categories.all()}
    for name in (
        "Confirmed the vehicle of interest",
        "Answered the customer's questions",
    ):
        assert rules[name] == DEFAULT_CATEGORY_RULES[name]
    # What a person changed or emptied is theirs.
    assert rules["Built rapport"][0] == "how are you\nweather"
    assert rules["Offered alternatives"][0] == ""
    assert rules["Set a date and time"] == (
        RULES_BEFORE_0013_CATEGORIES["Set a date and time"][0],
        "either",
        600,
    )
    unhappy = choices.get(kind="alert", name="Unhappy customer")
    assert "cancel" not in unhappy.phrases.splitlines()
    assert unhappy.phrases == DEFAULT_CHOICE_RULES[("alert", "Unhappy customer")][0]
