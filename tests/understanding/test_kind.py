"""What kind of call it was: a conversation, a voicemail, a wrong number, or no one."""

from tests.understanding.talk import agent, context, lead, turns
from understanding import understand


def kind(*said):
    facts = understand(turns(*said), context())
    return facts.kind, [item.line for item in facts.kind_evidence]


def test_a_recorded_greeting_and_a_message_is_a_voicemail():
    assert kind(
        lead("Hi, you've reached Wojciech."),
        lead(
            "I can't take your call right now, please leave a message after the tone."
        ),
        agent("Hi Wojciech, this is Siobhan from Lakeside Honda about the CR-V."),
        agent("Give me a call back at 555 0142 when you get this. Thanks!"),
    ) == ("voicemail", [1])


def test_the_agent_alone_is_a_voicemail():
    assert kind(
        agent("Hi Wojciech, sorry I missed you, this is Siobhan at Lakeside Honda."),
    ) == ("voicemail", [0])


def test_no_one_speaking_is_no_conversation():
    assert kind() == ("no_conversation", [])


def test_a_lead_who_answers_after_the_greeting_is_a_conversation():
    assert kind(
        lead("Please leave a message after the tone."),
        agent("Hi Wojciech, it's Siobhan from Lakeside Honda."),
        lead("Oh hi, sorry, I picked up late. Go ahead."),
    ) == ("conversation", [])


def test_a_lead_not_available_on_a_day_is_no_voicemail():
    assert kind(
        agent("Could you come in Tuesday?"),
        lead("I am not available on Tuesday, sorry."),
    ) == ("conversation", [])


def test_wrong_number_said_by_the_person_who_answered():
    assert kind(
        agent("Hi, is this Oluwaseun? It's Siobhan from Lakeside Honda."),
        lead("No, you have the wrong number, there's no Oluwaseun here."),
    ) == ("wrong_number", [1])


def test_i_didnt_fill_out_anything_is_a_wrong_number():
    assert kind(
        agent("You sent us a request about the F-150?"),
        lead("I didn't fill out any form, you've got the wrong person."),
    ) == ("wrong_number", [1])


def test_a_wrong_number_or_voicemail_establishes_nothing_else():
    facts = understand(
        turns(
            agent("Hi, I'm calling about the Mach-E appointment tomorrow at noon."),
            lead("Wrong number, sorry."),
        ),
        context(),
    )
    assert (facts.appointment, facts.vehicle, facts.open_questions) == (None, None, [])


def test_the_agent_saying_hello_into_silence_is_no_conversation():
    assert kind(agent("Hello? Wojciech?"), agent("Hello?")) == ("no_conversation", [])


def test_a_lead_who_mentions_a_voicemail_is_in_a_conversation():
    assert kind(
        agent("Hi Wojciech, it's Siobhan from Lakeside Honda."),
        lead("Hi, yes, I got your voicemail earlier."),
    ) == ("conversation", [])


def test_a_form_not_filled_in_yet_is_no_wrong_number():
    assert kind(
        agent("Did you get a chance to do the credit application?"),
        lead(
            "I didn't fill out the credit application yet, I never sent the photos either."
        ),
    ) == ("conversation", [])


def test_the_lead_named_not_being_there_is_a_wrong_number():
    assert kind(
        agent("Hi, is this Wojciech? Siobhan from Lakeside Honda about the CR-V."),
        lead("No, there's no Wojciech here. I've had this number for years."),
        agent("Oh, I'm so sorry."),
    ) == ("wrong_number", [1])


def test_the_agent_owning_up_to_a_wrong_number_makes_one():
    assert kind(
        agent("Hi, is this Wojciech? Siobhan from Lakeside Honda."),
        lead("No, this is the front desk of a dental office."),
        agent("Oh, sorry, wrong number. Have a good day."),
    ) == ("wrong_number", [2])


def test_the_agent_asking_whether_it_is_a_wrong_number_is_no_wrong_number():
    assert kind(
        agent("Hi, is this Wojciech?"),
        lead("Who's asking?"),
        agent("Siobhan from Lakeside Honda. Sorry, do I have the wrong number?"),
        lead("No, it's me. Go ahead."),
    ) == ("conversation", [])


def test_no_rush_here_is_no_wrong_number():
    assert kind(
        agent("Hi Wojciech, it's Siobhan from Lakeside Honda."),
        lead("Hi. There's no rush here, I'm just browsing."),
    ) == ("conversation", [])
