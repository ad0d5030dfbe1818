"""The summary written from the facts alone: 1 to 4 sentences, each with the transcript
lines it came from. It names what the call established and nothing else: no vehicle or
trade-in from the lead's form, no appointment unless one was agreed, no open question
unless nothing after it answered it."""

from __future__ import annotations

import datetime as dt
from dataclasses import dataclass

from understanding.facts import (
    CONVERSATION,
    NO_CONVERSATION,
    VOICEMAIL,
    WRONG_NUMBER,
    Context,
    Evidence,
    Facts,
)

MOST_SENTENCES = 4
OBJECTION_WORDS = {
    "price": "the price",
    "timing": "the timing",
    "spouse": "deciding with their partner",
    "elsewhere": "shopping at other dealers",
}
WHAT = {
    "visit": "An appointment",
    "test drive": "A test drive",
    "service": "A service appointment",
}


@dataclass(frozen=True)
class Sentence:
    """One sentence of the summary and the transcript lines (from 0) it came from."""

    text: str
    lines: tuple[int, ...]

    def as_dict(self) -> dict[str, object]:
        return {"sentence": self.text, "lines": list(self.lines)}


def _lines(*groups: tuple[Evidence, ...]) -> tuple[int, ...]:
    return tuple(sorted({item.line for group in groups for item in group}))


def when(date: dt.date | None, time: dt.time | None) -> str:
    """ "Thursday, December 10 at 2:30 PM", "Thursday, December 10", "2:30 PM"."""
    parts = []
    if date is not None:
        parts.append(f"{date:%A}, {date:%B} {date.day}")
    if time is not None:
        clock = f"{time.hour % 12 or 12}:{time.minute:02d} {'AM' if time.hour < 12 else 'PM'}"
        parts.append(f"at {clock}" if parts else clock)
    return " ".join(parts)


def summary_sentences(facts: Facts, context: Context) -> list[Sentence]:
    """The summary's sentences, most important first, at most four."""
    agent = context.agent_name or "The agent"
    lead = context.lead_name or "The lead"
    if facts.kind == NO_CONVERSATION:
        if any(line.side == "lead" for line in facts.lines):
            return [
                Sentence(
                    "No conversation: nothing was heard from the agent.",
                    _lines(facts.kind_evidence),
                )
            ]
        return [Sentence("No conversation: nothing was heard from the lead.", ())]
    if facts.kind == VOICEMAIL:
        spoke = any(line.side == "agent" for line in facts.lines)
        agent_lines = tuple(line.index for line in facts.lines if line.side == "agent")
        if spoke:
            return [
                Sentence(
                    f"Voicemail: {agent} left a message.",
                    _lines(facts.kind_evidence) + agent_lines[:1],
                )
            ]
        return [
            Sentence("Voicemail: no message was left.", _lines(facts.kind_evidence))
        ]
    if facts.kind == WRONG_NUMBER:
        return [
            Sentence(
                "Wrong number: the person who answered did not make this enquiry.",
                _lines(facts.kind_evidence),
            )
        ]
    assert facts.kind == CONVERSATION
    sentences = [_opening(facts, agent, lead)]
    if facts.purchased:
        sentences.append(
            Sentence(
                "The lead said they had already bought a vehicle.",
                _lines(facts.purchased.evidence),
            )
        )
    outcome = _outcome(facts)
    if outcome:
        sentences.append(outcome)
    if facts.not_interested and not facts.purchased:
        sentences.append(
            Sentence(
                "The lead said they were not interested.",
                _lines(facts.not_interested.evidence),
            )
        )
    if facts.open_questions:
        asked = facts.open_questions[:2]
        sentences.append(
            Sentence(
                "Left open: " + " ".join(question.text for question in asked),
                _lines(*(question.evidence for question in asked)),
            )
        )
    if facts.objections:
        named = [OBJECTION_WORDS[objection.kind] for objection in facts.objections]
        listed = (
            named[0] if len(named) == 1 else ", ".join(named[:-1]) + " and " + named[-1]
        )
        sentences.append(
            Sentence(
                f"The lead raised {listed}.",
                _lines(*(objection.evidence for objection in facts.objections)),
            )
        )
    return sentences[:MOST_SENTENCES]


def _opening(facts: Facts, agent: str, lead: str) -> Sentence:
    """Who spoke with whom, about the vehicle said (if one was) and the trade-in said."""
    text = f"{lead} spoke with {agent}"
    groups = []
    if facts.vehicle:
        text += f" about the {facts.vehicle.vehicle.words()}"
        groups.append(facts.vehicle.evidence)
    trade = facts.trade_in
    if trade is not None:
        groups.append(trade.evidence)
        if not trade.has:
            text += ", with no trade-in"
        elif trade.vehicle:
            text += f", with a {trade.vehicle.words()} to trade in"
        else:
            text += ", with a vehicle to trade in"
    lines = (
        _lines(*groups)
        or tuple(line.index for line in facts.lines if line.side == "lead")[:1]
    )
    return Sentence(text + ".", lines)


def _outcome(facts: Facts) -> Sentence | None:
    """What was agreed: the appointment (the last one), its cancellation, a callback,
    information to send; nothing otherwise. Not hearing an appointment is no evidence
    that none was set (telephone audio loses the words that set one: on the evaluation
    set's 8 kHz audio "No appointment was set." was false on 11 calls), so the summary
    says nothing rather than "no appointment"."""
    if facts.appointment:
        moment = when(facts.appointment.date, facts.appointment.time)
        what = WHAT.get(facts.appointment.what, "An appointment")
        return Sentence(
            f"{what} was set for {moment}.", _lines(facts.appointment.evidence)
        )
    if facts.cancelled:
        return Sentence(
            "The appointment was cancelled and no new time was set.",
            _lines(facts.cancelled.evidence),
        )
    if facts.callback:
        moment = when(facts.callback.date, facts.callback.time)
        moment = f" {'on ' if facts.callback.date else 'at '}{moment}" if moment else ""
        if facts.callback.by == "lead":
            text = f"The lead asked to be called back{moment}."
        else:
            text = f"The agent will call the lead back{moment}."
        return Sentence(text, _lines(facts.callback.evidence))
    if facts.send_info:
        return Sentence(
            "The agent is sending the lead the details.",
            _lines(facts.send_info.evidence),
        )
    return None
