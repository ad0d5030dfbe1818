"""The summary from the facts: what happened, each sentence with its lines; less when
unsure, never the form's vehicles."""

from tests.understanding.talk import agent, context, lead, turns
from understanding import Vehicle, summary_sentences, understand


def summary(*said, **changes):
    ctx = context(**changes)
    return [
        (sentence.text, list(sentence.lines))
        for sentence in summary_sentences(understand(turns(*said), ctx), ctx)
    ]


def test_a_conversation_with_a_rescheduled_test_drive():
    assert summary(
        agent(
            "Hi Wojciech, it's Siobhan from Lakeside Honda. You asked about the C R V?"
        ),
        lead("Yes. I'd be trading in my 2016 Subaru Outback."),
        agent("Great. I have you down for a test drive tomorrow at noon."),
        lead(
            "Oh, tomorrow won't work after all, can we do Thursday at a quarter past two?"
        ),
        agent("Sure, Thursday at a quarter past two it is."),
    ) == [
        (
            "Wojciech Nowak spoke with Siobhan Keane about the Honda CR-V, with a 2016 "
            "Subaru Outback to trade in.",
            [0, 1],
        ),
        ("A test drive was set for Thursday, December 10 at 2:15 PM.", [3, 4]),
    ]


def test_a_voicemail_says_only_that():
    assert summary(
        lead("You've reached Wojciech, leave a message after the beep."),
        agent(
            "Hi Wojciech, Siobhan at Lakeside Honda, call me back about Tuesday at 2."
        ),
    ) == [("Voicemail: Siobhan Keane left a message.", [0, 1])]


def test_a_wrong_number_says_only_that():
    assert summary(
        agent("Hi, is this Wojciech? About the 2025 CR-V?"),
        lead("Wrong number, mate."),
    ) == [("Wrong number: the person who answered did not make this enquiry.", [1])]


def test_no_vehicle_said_names_none_and_the_forms_trade_in_is_not_told():
    # Nor "no appointment": an appointment not heard may have been set all the same.
    assert summary(
        agent("Hi Wojciech, Siobhan here, thanks for your enquiry."),
        lead("Hi, yes, I was hoping to get some information."),
    ) == [("Wojciech Nowak spoke with Siobhan Keane.", [1])]


def test_a_denied_trade_in_is_told_as_none():
    assert summary(
        agent("Are you trading in your Focus?"),
        lead("No, there's no trade."),
        agent("Okay, I'll email you the pricing on the CR-V then."),
    ) == [
        (
            "Wojciech Nowak spoke with Siobhan Keane about the Honda CR-V, with no trade-in.",
            [1, 2],
        ),
        ("The agent is sending the lead the details.", [2]),
    ]


def test_already_purchased_and_no_appointment_sentence():
    assert summary(
        agent("Hi Oluwaseun, still looking at the Mach-E?"),
        lead("No thanks, I already bought one elsewhere."),
        called_on=Vehicle("", "Ford", "Mach-E"),
        lead_first_name="Oluwaseun",
        lead_last_name="Adeyemi",
    ) == [
        ("Oluwaseun Adeyemi spoke with Siobhan Keane about the Ford Mach-E.", [0]),
        ("The lead said they had already bought a vehicle.", [1]),
    ]


def test_a_cancelled_appointment_is_not_told_as_set():
    sentences = summary(
        agent("You're all set for Saturday at 10 30."),
        lead("Actually I have to cancel, sorry."),
        agent("No problem at all."),
    )
    assert sentences[1] == (
        "The appointment was cancelled and no new time was set.",
        [1],
    )


def test_left_open_lists_only_the_unanswered_question():
    sentences = summary(
        lead("Does it have heated seats?"),
        agent("It does, front and back."),
        lead("Is the price negotiable at all?"),
        agent("So when would you like to come in?"),
    )
    assert sentences[-1] == ("Left open: Is the price negotiable at all?", [2])


def test_never_more_than_four_sentences():
    sentences = summary(
        lead("I need to talk to my husband, and the price is too high."),
        lead("I'm not interested really."),
        lead("Is the price negotiable at all?"),
        agent("So what colour do you like?"),
    )
    assert len(sentences) == 4


def test_a_callback_is_told_instead_of_no_appointment():
    assert summary(
        lead("I'm at work, can you call me back tomorrow at half past four?"),
        agent("Sure, I'll call you back then."),
    ) == [
        ("Wojciech Nowak spoke with Siobhan Keane.", [0]),
        ("The lead asked to be called back on Tuesday, December 8 at 4:30 PM.", [0, 1]),
    ]


def test_a_greeting_with_no_message_left():
    assert summary(lead("The mailbox is full and cannot accept messages.")) == [
        ("Voicemail: no message was left.", [0])
    ]


def test_no_one_speaking_is_one_sentence():
    assert summary() == [("No conversation: nothing was heard from the lead.", [])]


def test_objections_are_named():
    sentences = summary(
        lead("It's out of my budget and I'm just looking."),
        agent("I understand, there's no rush."),
    )
    assert sentences[-1] == ("The lead raised the price and the timing.", [0])


def test_a_lead_who_hears_no_one_is_no_conversation_and_one_who_talks_is_not():
    said = (lead("Hello?"), lead("Hello? Is anyone there?"), lead("I can't hear you."))
    assert summary(*said) == [
        ("No conversation: nothing was heard from the agent.", [0])
    ]
    talked = lead("Hi, it's Oluwaseun, I was told to leave the F-150's details here.")
    assert not summary(talked)[0][0].startswith("No conversation")
