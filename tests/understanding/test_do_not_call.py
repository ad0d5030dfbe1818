"""The lead asking not to be called again, in the ways people say it, and what only
looks like it: a time not to call, a call not needed, a name not to be called by."""

import pytest

from tests.understanding.talk import agent, context, lead, turns
from understanding import understand


def asked(*said):
    found = understand(turns(*said), context()).do_not_call
    if found is None:
        return None
    return found.sentence, [item.line for item in found.evidence]


def conversation(said):
    return (
        agent("Hi Wojciech, it's Siobhan from Lakeside Honda about the CR-V."),
        lead(said),
    )


@pytest.mark.parametrize(
    ("said", "sentence"),
    [
        ("Please don't call me again.", "Please don't call me again."),
        ("Look, do not call this number again, okay?", None),
        ("Take me off your list.", "Take me off your list."),
        ("Can you take my number off your calling list?", None),
        ("I bought one already. Stop calling me.", "Stop calling me."),
        ("Stop calling me every day, please.", None),
        ("Remove my number.", "Remove my number."),
        ("Remove me from your database please.", None),
        ("Put me on your do not call list.", None),
        ("I don't want any more calls.", None),
        ("I don't want you calling me anymore", None),
        ("never call me again", None),
        ("Yeah no, just stop calling", None),
        ("Can you stop calling me?", None),
        ("Why do you keep ringing? Take me off the list.", "Take me off the list."),
        ("Don't call me. I'll call you if I need anything.", "Don't call me."),
    ],
)
def test_asking_not_to_be_called_again_is_read(said, sentence):
    found = asked(*conversation(said))
    assert found is not None, said
    assert found[0] == (sentence or said)
    assert found[1] == [1]


@pytest.mark.parametrize(
    "said",
    [
        "Don't call me before 5, I'm at work.",
        "You don't need to call me, I'll come in on Saturday.",
        "Stop calling me by my first name, it's Mr. Nowak.",
        "Don't call me on my work phone, use my cell.",
        "Could you remove the sunroof option from the quote?",
        "I'll take it off your hands if the price is right.",
        "No need to call me back, I'll see you at ten.",
        "My wife said stop calling around and just pick one.",
        "Don't call me sir!",
    ],
)
def test_what_only_looks_like_it_is_not(said):
    assert asked(*conversation(said)) is None, said


def test_only_the_leads_words_count():
    assert (
        asked(
            agent("If you'd like, I can take you off our list."),
            lead("No, that's fine, tell me about the CR-V."),
        )
        is None
    )


def test_a_voicemail_asks_nothing():
    assert (
        asked(
            lead("You've reached Wojciech, leave a message after the tone."),
            agent("Hi, please don't call me again if you're not interested."),
        )
        is None
    )
