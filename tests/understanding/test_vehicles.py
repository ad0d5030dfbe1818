"""Vehicles from what was said: the form's model recognised however it is spelled, a
trade-in only as the lead told it."""

import pytest

from tests.understanding.talk import agent, context, lead, turns
from understanding import Vehicle, understand


def vehicle(*said, **changes):
    found = understand(turns(*said), context(**changes)).vehicle
    return None if found is None else (found.vehicle, [e.line for e in found.evidence])


def trade(*said, **changes):
    found = understand(turns(*said), context(**changes)).trade_in
    if found is None:
        return None
    return found.has, found.vehicle, [e.line for e in found.evidence]


@pytest.mark.parametrize("said", ["CRV", "C R V", "the CR-V", "crv"])
def test_the_forms_model_is_recognised_however_it_is_spelled(said):
    assert vehicle(
        agent(f"You asked about {said}, right?"), lead("Yes, that one.")
    ) == (Vehicle("", "Honda", "CR-V"), [0])


def test_f_150_said_as_f_one_fifty_digits():
    assert vehicle(
        lead("I'm calling about the 2024 F 150 you have listed."),
        called_on=Vehicle("2024", "Ford", "F-150"),
    ) == (Vehicle("2024", "Ford", "F-150"), [0])


def test_a_year_is_given_only_when_said():
    assert vehicle(
        lead("Is the Mach E still there?"), called_on=Vehicle("2025", "Ford", "Mach-E")
    ) == (
        Vehicle("", "Ford", "Mach-E"),
        [0],
    )


def test_the_vehicle_said_is_named_not_the_forms():
    assert vehicle(
        agent("I see you were looking at the CR-V."),
        lead("Actually I'd rather see a GMC Sierra 1500."),
        called_on=Vehicle("2025", "Ford", "Escape"),
    ) == (Vehicle("", "GMC", "Sierra"), [1])


def test_no_vehicle_said_is_no_vehicle():
    assert (
        vehicle(
            agent("Hi Wojciech, how can I help?"), lead("Just returning your call.")
        )
        is None
    )


def test_a_trade_in_not_on_the_form_is_taken_from_what_the_lead_said():
    assert trade(
        agent("Do you have anything to trade in?"),
        lead("Yes, a 2016 Subaru Outback with about 90 000 miles."),
    ) == (True, Vehicle("2016", "Subaru", "Outback"), [1])


def test_a_denied_trade_in_is_none_even_when_the_form_has_one():
    assert trade(
        agent("Are you trading in your Focus?"),
        lead("No, I sold it last month, no trade."),
    ) == (False, Vehicle(), [1])


def test_i_dont_have_a_trade_is_none():
    assert trade(
        agent("Will there be a trade-in?"),
        lead("I don't have a trade, it'll be cash."),
    ) == (False, Vehicle(), [1])


def test_the_word_after_a_make_is_not_taken_for_a_model():
    assert trade(
        agent("Any trade-in?"),
        lead("Yeah, my Nissan, log book and all, 2012."),
    ) == (True, Vehicle("2012", "Nissan", ""), [1])


def test_the_forms_trade_in_named_by_the_agent_and_confirmed_by_the_lead():
    assert trade(
        agent("Are you still trading in the Focus?"),
        lead("Yes I am."),
    ) == (True, Vehicle("", "Ford", "Focus"), [0, 1])


def test_a_trade_in_asked_about_but_not_answered_is_unknown():
    assert (
        trade(
            agent("Would you be trading something in?"),
            lead("What colours does the CR-V come in?"),
        )
        is None
    )


def test_the_trade_in_is_not_the_vehicle_discussed():
    said = (
        agent("You're interested in the Mach-E?"),
        lead("Right. And I'd trade in my F-150."),
    )
    facts = understand(turns(*said), context(called_on=Vehicle("", "Ford", "Mach-E")))
    assert facts.vehicle is not None
    assert facts.vehicle.vehicle == Vehicle("", "Ford", "Mach-E")
    assert facts.trade_in is not None
    assert facts.trade_in.vehicle == Vehicle("", "Ford", "F-150")


def test_the_forms_sierra_1500_said_in_full():
    assert vehicle(
        lead("Do you still have the Sierra 1500 in white?"),
        called_on=Vehicle("2024", "GMC", "Sierra 1500"),
    ) == (Vehicle("", "GMC", "Sierra 1500"), [0])


@pytest.mark.parametrize(
    ("said", "model"),
    [
        ("the RAV four", "RAV4"),
        ("an F one fifty", "F-150"),
        ("a Sierra fifteen hundred", "Sierra 1500"),
    ],
)
def test_numbers_said_as_words_in_a_model(said, model):
    found = vehicle(lead(f"I'm after {said}."), called_on=Vehicle("", "Make", model))
    assert found[0].model == model


def test_an_everyday_word_is_no_model():
    # "charger" is a Dodge model and a plug: said in lower case without its make, a plug.
    assert (
        vehicle(
            agent("Hi Wojciech, it's Siobhan from Lakeside Honda."),
            lead("I don't have a charger at home, is that a problem?"),
            called_on=Vehicle("2025", "Ford", "Mustang Mach-E"),
        )
        is None
    )


def test_a_model_named_with_its_make_is_a_model_in_lower_case_too():
    assert vehicle(
        lead("honestly i'd rather look at a dodge charger"),
        called_on=Vehicle("2025", "Ford", "Bronco"),
    ) == (Vehicle("", "Dodge", "Charger"), [0])


def test_a_distinct_word_of_the_forms_model_names_it():
    assert vehicle(
        agent("Tomasz here from Riverside Ford, about the Mach-E."),
        lead("I don't have a charger at home either."),
        agent("Then the Escape plug-in hybrid might suit you better."),
        called_on=Vehicle("2025", "Ford", "Mustang Mach-E"),
    ) == (Vehicle("", "Ford", "Mustang Mach-E"), [0])


def test_the_car_the_lead_drives_now_is_not_the_vehicle_discussed():
    assert (
        vehicle(
            agent("Hi Wojciech, it's Siobhan from Lakeside Honda."),
            lead("I'm driving a Dodge Charger now, but it's too small for us."),
            called_on=Vehicle("2025", "Ford", "Bronco"),
        )
        is None
    )
    assert vehicle(
        lead("I drive a Dodge Charger now. Is the Bronco still there?"),
        agent("The Bronco is here, yes."),
        called_on=Vehicle("2025", "Ford", "Bronco"),
    ) == (Vehicle("", "Ford", "Bronco"), [0])


def test_the_dealerships_make_is_not_the_vehicle_discussed():
    assert (
        vehicle(
            agent("Hi Wojciech, it's Siobhan from Lakeside Honda."),
            lead("Hi, I just had a quick question about financing."),
        )
        is None
    )
    assert vehicle(
        agent("Hi Wojciech, it's Siobhan from Lakeside Honda."),
        lead("Hi, do you have any Honda with a third row?"),
        called_on=Vehicle(),
    ) == (Vehicle("", "Honda", ""), [1])


def test_every_line_naming_the_vehicle_discussed():
    found = understand(
        turns(
            agent("Hi Wojciech, Siobhan from Lakeside Honda."),
            lead("Hi. Is the CRV still there?"),
            agent("It is. The C R V in blue, right outside."),
            agent("Are you trading the Focus?"),
        ),
        context(),
    ).vehicle
    assert found is not None
    assert [item.line for item in found.named_in] == [1, 2]


def test_the_dealerships_own_stock_is_not_the_leads_own_car():
    assert vehicle(
        lead("Hi, is the big one still there?"),
        agent("It sold, but our Ford Ranger just came in, if a smaller truck works."),
        called_on=Vehicle("2025", "Ford", "Bronco"),
    ) == (Vehicle("", "Ford", "Ranger"), [1])
