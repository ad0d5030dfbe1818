"""The conversation a simulated call carries (issue 17, first part): a script made from the
call's own facts, varied and reproducible (seeded by the call's id), so its recording can
carry speech and a transcription can be checked against what was said.

The script is the ground truth: who said what, in order, and which of the behaviours
scorers look for it holds (``Script.met``). Nothing here synthesises audio yet; the
recording, its speech and the transcription are still to be built on top of it.
"""

from __future__ import annotations

import random
from dataclasses import dataclass, field
from typing import Any, Literal

Speaker = Literal["agent", "lead"]
ENDINGS = ("appointment", "callback", "information", "not_interested")
WEEKDAYS = ("Monday", "Tuesday", "Wednesday", "Thursday", "Friday", "Saturday")
TIMES = ("nine thirty", "ten", "eleven", "one", "two thirty", "four", "five thirty")
# Behaviours a scorer looks for, each met on some calls and not on others.
GREETED_BY_NAME = "greeted_by_name"
CONFIRMED_VEHICLE = "confirmed_vehicle"
ASKED_ABOUT_TRADE_IN = "asked_about_trade_in"
ASKED_FOR_APPOINTMENT = "asked_for_appointment"
OFFERED_TEST_DRIVE = "offered_test_drive"


@dataclass(frozen=True)
class Facts:
    """What the conversation is made from: the call's lead, vehicles and agent."""

    agent_name: str
    dealer: str
    first_name: str = ""
    last_name: str = ""
    vehicle: str = ""  # "2025 Toyota RAV4"
    trade_in: str = ""  # "2016 Honda Civic", or "" when the lead has none

    @classmethod
    def of(cls, call: Any, *, agent_name: str) -> Facts:
        """The facts of a ``calls.models.Call``."""

        def joined(*parts: str) -> str:
            return " ".join(part for part in parts if part).strip()

        return cls(
            agent_name=agent_name or "your sales advisor",
            dealer=call.account.name,
            first_name=call.first_name,
            last_name=call.last_name,
            vehicle=joined(
                call.called_on_year, call.called_on_make, call.called_on_model
            ),
            trade_in=joined(call.current_year, call.current_make, call.current_model),
        )


@dataclass(frozen=True)
class Turn:
    speaker: Speaker
    text: str


@dataclass(frozen=True)
class Script:
    turns: tuple[Turn, ...]
    ending: str  # one of ENDINGS
    appointment: str = ""  # "Thursday at two thirty" when one was set
    met: frozenset[str] = field(default_factory=frozenset)

    def said_by(self, speaker: Speaker) -> str:
        return " ".join(turn.text for turn in self.turns if turn.speaker == speaker)


def call_script(call: Any) -> Script:
    """The conversation a simulated ``calls.models.Call`` carries: the same for the same
    call (seeded by its id), whether it is timed by the simulator or spoken for its
    recording."""
    agent_name = call.agent.get_full_name() if call.agent else ""
    return conversation_script(
        Facts.of(call, agent_name=agent_name or call.agent_shown), seed=call.pk
    )


def conversation_script(facts: Facts, *, seed: int) -> Script:
    """A conversation between the agent and the lead, the same for the same facts and seed."""
    rng = random.Random(seed)
    turns: list[Turn] = []
    met: set[str] = set()

    def agent(text: str) -> None:
        turns.append(Turn("agent", text))

    def lead(text: str) -> None:
        turns.append(Turn("lead", text))

    first = facts.first_name or ""
    if first and rng.random() < 0.7:
        agent(
            f"Hi {first}, this is {facts.agent_name} from {facts.dealer}. "
            "Thanks for your enquiry."
        )
        met.add(GREETED_BY_NAME)
    else:
        agent(
            f"Hello, this is {facts.agent_name} from {facts.dealer}. "
            "You sent us an enquiry."
        )
    lead(rng.choice(("Yes, hi.", "Oh, hello, thanks for calling.", "Hi, yes.")))
    if facts.vehicle and rng.random() < 0.8:
        agent(f"You were looking at the {facts.vehicle}, is that right?")
        lead(
            rng.choice(
                (
                    f"That's right, the {facts.vehicle}.",
                    "Yes, I'd like to know if it is still available.",
                    "Yes. What colours do you have?",
                )
            )
        )
        met.add(CONFIRMED_VEHICLE)
    else:
        agent("What kind of vehicle are you looking for?")
        lead(f"The {facts.vehicle}." if facts.vehicle else "Something reliable.")
    if facts.trade_in and rng.random() < 0.7:
        agent(f"Are you thinking of trading in your {facts.trade_in}?")
        lead(
            rng.choice(
                ("Yes, if the price is right.", "Maybe, what would it be worth?")
            )
        )
        met.add(ASKED_ABOUT_TRADE_IN)
    if rng.random() < 0.5:
        agent("Would you like to take it for a test drive?")
        lead(rng.choice(("Sure, that would be good.", "Not yet, thanks.")))
        met.add(OFFERED_TEST_DRIVE)
    ending = rng.choice(ENDINGS)
    appointment = ""
    if ending == "appointment":
        appointment = f"{rng.choice(WEEKDAYS)} at {rng.choice(TIMES)}"
        agent("When could you come in to see it?")
        lead(f"{appointment} works for me.")
        agent(f"Great, I have you down for {appointment}. See you then.")
        met.add(ASKED_FOR_APPOINTMENT)
    elif ending == "callback":
        agent("Would you like to come in this week?")
        lead("I need to check with my partner. Can you call me back tomorrow?")
        agent("Of course, I will call you back tomorrow.")
        met.add(ASKED_FOR_APPOINTMENT)
    elif ending == "information":
        agent("I will email you the price and the details today.")
        lead("Thanks, I will have a look.")
    else:
        agent("Is there anything else I can help you with?")
        lead("No thanks, I am not interested any more.")
    agent("Thank you for your time. Goodbye.")
    lead("Bye.")
    return Script(tuple(turns), ending, appointment, frozenset(met))
