"""What the lead said about buying: already bought, not interested, objections, callbacks,
information to send, and the questions left open."""

import datetime as dt

from tests.understanding.talk import agent, context, lead, turns
from understanding import understand


def facts(*said):
    return understand(turns(*said), context())


def lines(found):
    return [item.line for item in found.evidence]


def test_already_bought_elsewhere():
    found = facts(
        agent("Hi Oluwaseun, are you still shopping for the Mach-E?"),
        lead("Thanks, but I already bought one elsewhere last weekend."),
    )
    assert lines(found.purchased) == [1]


def test_not_interested():
    found = facts(
        agent("Still looking at trucks?"), lead("No, I'm not interested anymore.")
    )
    assert lines(found.not_interested) == [1]


def test_not_interested_in_one_thing_is_not_not_interested():
    found = facts(
        lead("I'm not interested in the extended warranty, but tell me more.")
    )
    assert found.not_interested is None


def test_objections_by_kind():
    found = facts(
        lead("Honestly the monthly payment is too high for me."),
        agent("I understand."),
        lead("And I need to talk to my wife before anything."),
        lead("I also got a quote from another dealer in town."),
        lead("And we're just looking for now, not ready yet."),
    )
    assert [(o.kind, lines(o)) for o in found.objections] == [
        ("price", [0]),
        ("timing", [4]),
        ("spouse", [2]),
        ("elsewhere", [3]),
    ]


def test_a_callback_asked_by_the_lead_with_no_time():
    found = facts(lead("I'm driving, call me back later please."), agent("Will do."))
    assert (found.callback.by, found.callback.date, found.callback.time) == (
        "lead",
        None,
        None,
    )


def test_a_callback_offered_by_the_agent_and_accepted():
    found = facts(
        agent("Can I give you a call back Friday at half past four?"),
        lead("Yes, that works."),
    )
    assert (
        found.callback.by,
        found.callback.date,
        found.callback.time,
        lines(found.callback),
    ) == (
        "agent",
        dt.date(2026, 12, 11),
        dt.time(16, 30),
        [0],
    )
    assert found.appointment is None


def test_a_callback_offer_refused_is_none():
    found = facts(agent("Can I call you back tomorrow?"), lead("No, don't bother."))
    assert found.callback is None


def test_information_to_send():
    found = facts(
        lead("Could you just email me the price breakdown?"),
        agent("Of course, I'll send it over this afternoon."),
    )
    assert lines(found.send_info) == [0]


def test_dont_text_me_is_no_information_to_send():
    found = facts(lead("Please don't text me the details, I'll call."))
    assert found.send_info is None


def test_a_question_answered_is_not_open():
    found = facts(
        lead("Does the CR-V come with all wheel drive?"),
        agent("Yes, every trim we have on the lot is all wheel drive."),
    )
    assert found.open_questions == []


def test_a_question_the_agent_will_find_out_about_is_not_open():
    found = facts(
        lead("How many miles are on the demo one?"),
        agent("Good question, let me check with the lot and get back to you."),
    )
    assert found.open_questions == []


def test_a_question_answered_a_little_later_is_not_open():
    found = facts(
        lead("What does the warranty cover on the Sierra?"),
        agent("Sorry, can you hold one second?"),
        lead("Sure."),
        agent("Thanks for holding. The warranty covers the powertrain for five years."),
    )
    assert found.open_questions == []


def test_a_question_the_agent_talked_past_is_open():
    found = facts(
        lead("Great. Is the price negotiable at all?"),
        agent("So when would you like to come in?"),
        lead("Maybe Saturday."),
    )
    assert [(q.text, lines(q)) for q in found.open_questions] == [
        ("Is the price negotiable at all?", [0])
    ]


def test_short_and_social_questions_are_never_open():
    found = facts(
        lead("Hello? Who is this?"),
        agent("What's your budget?"),
        lead("How are you doing today?"),
        agent("When can you come?"),
    )
    assert found.open_questions == []


def test_a_quote_already_got_is_not_a_purchase():
    found = facts(lead("I already got a quote from you guys last week."))
    assert found.purchased is None


def test_already_got_a_car_is_a_purchase():
    found = facts(lead("We already got a new truck, thanks anyway."))
    assert lines(found.purchased) == [0]


def test_changed_our_minds_is_not_interested():
    found = facts(
        agent("I'm calling about the CR-V you asked about."),
        lead("Honestly, we've changed our minds."),
    )
    assert lines(found.not_interested) == [1]


def test_changing_ones_mind_about_a_colour_is_not_not_interested():
    found = facts(lead("I changed my mind, I want the red one instead."))
    assert found.not_interested is None


def test_a_callback_asked_for_someone_else_of_the_household():
    found = facts(
        lead("He handles the cars. Can you call him back this evening?"),
        agent("Of course."),
    )
    assert (found.callback.by, lines(found.callback)) == ("lead", [0])


def test_a_day_said_as_owning_something_is_not_the_callbacks_day():
    found = facts(
        lead("Just cancel it. Give me a call in April."),
        agent("Will do. I'll cancel tomorrow's appointment and reach out in April."),
    )
    assert (found.callback.by, found.callback.date, found.callback.time) == (
        "lead",
        None,
        None,
    )


def test_questions_answered_by_the_agents_reply():
    found = facts(
        lead("Does the CR-V come with all wheel drive?"),
        agent("Yes, every trim we have on the lot is all wheel drive."),
        lead("And has it been in any accidents?"),
        agent("No, a clean history and one owner."),
    )
    assert [(q.text, lines(q)) for q in found.answered_questions] == [
        ("Does the CR-V come with all wheel drive?", [0, 1]),
        ("Has it been in any accidents?", [2, 3]),
    ]


def test_requests_and_times_put_forward_are_not_questions_answered():
    found = facts(
        lead("Can you call me back later this week?"),
        agent("Absolutely, I will."),
        lead("Would Tuesday at ten be too early for a visit?"),
        agent("Tuesday at ten is fine."),
    )
    assert found.answered_questions == []


def test_a_question_the_agent_talked_past_is_not_answered():
    found = facts(
        lead("Is the price negotiable at all?"),
        agent("So when would you like to come in?"),
    )
    assert found.answered_questions == []
