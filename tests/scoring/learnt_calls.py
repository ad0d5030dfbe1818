"""Scored calls for the learning tests: hand-written lines, put together at random (with a
seed) so that the scorers' judgement follows the words while the default phrase rules
miss it. The agent asks about a trade-in in words the default rule ("trade in") never
hears, and now and then says "trade-in" where the scorers do not count it; the lead asks
to be called later in words the "call me back" rule does not know, and says they will
buy today where no default rule listens ("Hot lead" has no phrases)."""

from __future__ import annotations

import random
from datetime import datetime, timedelta
from typing import Any

from accounts.models import Account
from calls.models import Call
from scoring.models import Score
from scoring.services import categories_snapshot
from tests.scoring.factories import CallFactory

FIRST_NAMES = ["Pat", "Dana", "Lee", "Robin", "Alex", "Jamie", "Morgan"]
GREETINGS_BY_NAME = [
    "Hi {name}, this is Avery from North Motors.",
    "Good morning {name}, Jordan here at North Motors.",
    "Hello {name}, Casey calling from North Motors about your request.",
]
GREETINGS_WITHOUT = [
    "Hi there, this is Avery from North Motors.",
    "Hello, Jordan calling from North Motors about your request.",
]
TRADE_ASKS = [
    "What are you driving now?",
    "Do you have a vehicle you would want to swap towards it?",
    "Anything you would like to part with towards the new one?",
    "Is your current car going to be part of the deal?",
    "And what are you driving at the moment?",
]
# "trade-in" said where the scorers do not count it as asking about one.
TRADE_WORDS_UNASKED = [
    "That price is without a trade-in, just so you know.",
    "The trade-in desk is closed on Sundays.",
]
AGENT_OTHER = [
    "We have it in silver and in blue.",
    "The price includes freight and prep.",
    "It comes with the premium package.",
    "We open at nine tomorrow.",
    "It has about twelve thousand miles on it.",
]
LEAD_OTHER = [
    "I saw the listing online.",
    "Is it still available?",
    "What is the mileage on it?",
    "I need something bigger for the kids.",
    "Can you get me a better rate?",
]
LATER = [
    "Can you ring me tomorrow instead?",
    "Try me again on Friday, I am at work.",
    "Phone me later this week please.",
]
BUYING = [
    "I want to buy it today.",
    "I am ready to sign this afternoon.",
    "If it is there I will buy it today.",
]


def conversation(rng: random.Random, *, name: str) -> tuple[list[dict], dict[str, Any]]:
    """A call's turns and what its scorer confirmed (categories by name, call end, alert)."""
    greeted = rng.random() < 0.6
    asked = rng.random() < 0.45
    later = rng.random() < 0.35
    buying = rng.random() < 0.3
    agent = [
        rng.choice(GREETINGS_BY_NAME).format(name=name)
        if greeted
        else rng.choice(GREETINGS_WITHOUT)
    ]
    agent += rng.sample(AGENT_OTHER, 2)
    if asked:
        agent.insert(rng.randint(1, len(agent)), rng.choice(TRADE_ASKS))
    elif rng.random() < 0.5:
        agent.insert(rng.randint(1, len(agent)), rng.choice(TRADE_WORDS_UNASKED))
    lead = rng.sample(LEAD_OTHER, 2)
    if buying:
        lead.insert(rng.randint(0, len(lead)), rng.choice(BUYING))
    if later:
        lead.append(rng.choice(LATER))
    said = []
    for index in range(max(len(agent), len(lead))):
        if index < len(agent):
            said.append(("agent", agent[index]))
        if index < len(lead):
            said.append(("lead", lead[index]))
    turns = [
        {"side": side, "start": 1.0 + 5 * i, "end": 5.0 + 5 * i, "text": text}
        for i, (side, text) in enumerate(said)
    ]
    scored = {
        "Greeted the customer by name": greeted,
        "Asked about a trade-in": asked,
        "call_end": "Callback requested" if later else "Information given",
        "alert": "Hot lead" if buying else "",
    }
    return turns, scored


def scored_calls(
    account: Account, count: int, *, seed: int, start: datetime
) -> list[Call]:
    """``count`` calls of ``account`` with transcripts, scored an hour apart from ``start``."""
    rng = random.Random(seed)
    names, points = categories_snapshot(account.scorecard.categories.all())
    calls = []
    for index in range(count):
        name = rng.choice(FIRST_NAMES)
        turns, scored = conversation(rng, name=name)
        at = start + timedelta(hours=index)
        call = CallFactory(
            account=account,
            first_name=name,
            received_at=at - timedelta(minutes=10),
            transcript_turns=turns,
            transcription="\n".join(turn["text"] for turn in turns),
        )
        flags = {
            f"cat{slot}": bool(scored.get(name))
            for slot, name in enumerate(names, start=1)
            if name
        }
        Score.objects.create(
            call=call,
            scored_at=at,
            category_names=names,
            category_points=points,
            call_end=scored["call_end"],
            alert=scored["alert"],
            **flags,
        )
        calls.append(call)
    return calls
