"""What the transcript suggests to a call's scorer: pure functions over the call's turns.

A rule (a scorecard category, or a call-end reason or alert tag) is suggested by the first
turn on its side, within its first seconds if it has a limit, that says one of its phrases;
every alert tag whose rule matches is suggested. What the call established is read by
``understanding``: the appointment (the last one agreed, its date and time), the vehicle
and trade-in as they were said, and the call end for the reasons facts decide (voicemail,
wrong number, already purchased, appointment set, not interested, callback requested,
information given) when the scorecard lists them. Each suggestion keeps the transcript
line that triggered it, so the scorer can check it.
"""

from __future__ import annotations

import datetime as dt
import re
from collections.abc import Collection, Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from accounts.schedules import WEEKDAYS
from calls.transcripts import clock
from understanding import Context, Evidence, Facts, Vehicle, understand
from understanding.facts import VOICEMAIL, WRONG_NUMBER

_WEEKDAY = r"(?:" + "|".join(WEEKDAYS) + r")"
VEHICLE_PARTS = ("make", "model", "year")
# The call-end reasons the call's facts decide, in the order they win; the scorecard's
# other reasons are suggested by their phrases.
FACT_CALL_ENDS = (
    "Voicemail",
    "Wrong number",
    "Already purchased",
    "Appointment set",
    "Callback requested",
    "Not interested",
    "Information given",
)


@dataclass(frozen=True)
class Rule:
    """One suggestion rule as the matcher needs it: what it suggests and when."""

    member: str
    value: Any
    phrases: str
    side: str
    within_seconds: int | None


def rules_of(categories: Iterable[Any], choices: Iterable[Any]) -> list[Rule]:
    """A scorecard's phrase rules: its named categories' and its call-end and alert
    choices' with phrases (``ScorecardCategory`` and ``ScorecardChoice`` rows, saved or
    the unsaved defaults)."""
    rules = [
        Rule(
            member=f"cat{category.slot}",
            value=1,
            phrases=category.phrases,
            side=category.side,
            within_seconds=category.within_seconds,
        )
        for category in categories
        if category.name and category.phrases.strip()
    ]
    choices = list(choices)
    rules += [
        Rule(
            member=choice.kind,
            value=choice.name,
            phrases=choice.phrases,
            side=choice.side,
            within_seconds=choice.within_seconds,
        )
        for kind in ("call_end", "alert")
        for choice in choices
        if choice.kind == kind and choice.phrases.strip()
    ]
    return rules


def ordered_turns(turns: Iterable[Mapping[str, Any]]) -> list[Mapping[str, Any]]:
    """The turns as the transcript lists them: by start, blank ones left out."""
    return [
        turn
        for turn in sorted(turns, key=lambda turn: (turn["start"], turn["end"]))
        if str(turn["text"]).strip()
    ]


def _words(text: Any) -> str:
    return " ".join(str(text).split())


def transcript_lines(
    turns: Iterable[Mapping[str, Any]], names: Mapping[str, str]
) -> list[dict[str, Any]]:
    """One entry per transcript line: its speaker, side, start and end, clock and text."""
    return [
        {
            "index": index,
            "side": turn["side"],
            "speaker": names[turn["side"]],
            "start": float(turn["start"]),
            "end": float(turn["end"]),
            "clock": f"{clock(turn['start'])}-{clock(turn['end'])}",
            "text": _words(turn["text"]),
        }
        for index, turn in enumerate(ordered_turns(turns))
    ]


# Phrase lines that stand for what the call established rather than for words: each
# matches the transcript lines ``_fact_lines`` gives it.
FACT_PHRASES = ("{vehicle}", "{questions_answered}", "{appointment}")


def _fact_lines(phrases: str, facts: Facts) -> set[int]:
    """The lines a rule's fact phrases match: ``{vehicle}`` every line that names the
    vehicle the call was about; ``{questions_answered}`` the agent's replies when every
    question the lead asked was answered; ``{appointment}`` the line that agreed an
    appointment's day and time."""
    wanted = {line.strip() for line in phrases.splitlines()} & set(FACT_PHRASES)
    found: set[int] = set()
    if "{vehicle}" in wanted and facts.vehicle is not None:
        found |= {item.line for item in facts.vehicle.named_in}
    if (
        "{questions_answered}" in wanted
        and facts.answered_questions
        and not facts.open_questions
    ):
        found |= {question.evidence[-1].line for question in facts.answered_questions}
    appointment = facts.appointment
    if (
        "{appointment}" in wanted
        and appointment is not None
        and appointment.date is not None
        and appointment.time is not None
    ):
        found.add(appointment.evidence[-1].line)
    return found


def compile_phrases(phrases: str, *, first_name: str) -> list[re.Pattern[str]]:
    """A rule's phrases as patterns; a line that cannot match (no first name to say, a
    broken regular expression) is left out rather than failing the whole rule, and a
    fact phrase (``FACT_PHRASES``) is no words to match."""
    patterns = []
    for raw in phrases.splitlines():
        line = raw.strip()
        if not line or line in FACT_PHRASES:
            continue
        if line.startswith("re:"):
            source = line[3:].strip()
        else:
            if "{first_name}" in line and not first_name.strip():
                continue
            source = re.escape(_words(line))
            source = source.replace(r"\{first_name\}", re.escape(first_name.strip()))
            source = source.replace(r"\{weekday\}", _WEEKDAY)
            source = source.replace(r"\ ", r"\s+")
            source = r"(?<!\w)" + source + r"(?!\w)"
        try:
            patterns.append(re.compile(source, re.IGNORECASE))
        except re.error:
            continue
    return patterns


def phrase_errors(phrases: str) -> list[str]:
    """The ``re:`` lines that are not valid regular expressions, with why."""
    errors = []
    for raw in phrases.splitlines():
        line = raw.strip()
        if line.startswith("re:"):
            try:
                re.compile(line[3:].strip())
            except re.error as error:
                errors.append(f"{line}: {error}")
    return errors


def _hears(rule: Rule, turn: Mapping[str, Any]) -> bool:
    if rule.side in ("agent", "lead") and turn["side"] != rule.side:
        return False
    return rule.within_seconds is None or float(turn["start"]) <= rule.within_seconds


def _found(
    index: int, turn: Mapping[str, Any], value: Any, names: Mapping[str, str]
) -> dict[str, Any]:
    line = (
        f"{names[turn['side']]} ({clock(turn['start'])}-{clock(turn['end'])}): "
        f"{_words(turn['text'])}"
    )
    return {"value": value, "line": index, "text": line, "at": float(turn["start"])}


def _first_line(
    lines: Sequence[Evidence], ordered: Sequence[Mapping[str, Any]], last: bool = False
) -> int | None:
    usable = [item.line for item in lines if 0 <= item.line < len(ordered)]
    if not usable:
        return None
    return usable[-1] if last else usable[0]


def _from_fact(
    member: str,
    value: Any,
    lines: Sequence[Evidence],
    ordered: Sequence[Mapping[str, Any]],
    names: Mapping[str, str],
    *,
    last: bool = False,
) -> dict[str, dict[str, Any]]:
    index = _first_line(lines, ordered, last)
    if index is None or value in ("", None):
        return {}
    return {member: _found(index, ordered[index], value, names)}


def fact_call_end(facts: Facts) -> tuple[str, tuple[Evidence, ...]] | None:
    """The call end the facts decide, with its lines: None when they decide none."""
    if facts.kind == VOICEMAIL:
        return "Voicemail", facts.kind_evidence
    if facts.kind == WRONG_NUMBER:
        return "Wrong number", facts.kind_evidence
    if not facts.conversation:
        return None
    ends = [
        ("Already purchased", facts.purchased),
        ("Appointment set", facts.appointment),
        ("Callback requested", facts.callback),
        ("Not interested", facts.not_interested),
        ("Information given", facts.send_info),
    ]
    for name, fact in ends:
        if fact is not None:
            return name, fact.evidence
    return None


def _fact_members(
    facts: Facts,
    ordered: Sequence[Mapping[str, Any]],
    names: Mapping[str, str],
    call_ends: Collection[str],
) -> dict[str, dict[str, Any]]:
    """The members the call's facts give: the appointment, the vehicles, the call end."""
    members: dict[str, dict[str, Any]] = {}
    if facts.appointment is not None:
        said = facts.appointment.evidence
        date, time = facts.appointment.date, facts.appointment.time
        if date is not None:
            members |= _from_fact(
                "appointment_date", date.isoformat(), said, ordered, names, last=True
            )
        if time is not None:
            members |= _from_fact(
                "appointment_time",
                time.strftime("%H:%M"),
                said,
                ordered,
                names,
                last=True,
            )
    if facts.vehicle is not None:
        for part in VEHICLE_PARTS:
            members |= _from_fact(
                f"called_on_{part}",
                getattr(facts.vehicle.vehicle, part),
                facts.vehicle.evidence,
                ordered,
                names,
            )
    if facts.trade_in is not None and facts.trade_in.has:
        for part in VEHICLE_PARTS:
            members |= _from_fact(
                f"current_{part}",
                getattr(facts.trade_in.vehicle, part),
                facts.trade_in.evidence,
                ordered,
                names,
            )
    decided = fact_call_end(facts)
    if decided is not None and decided[0] in call_ends:
        # An appointment's line is the one that agreed it; other facts', the first.
        agreed = decided[0] == "Appointment set"
        members |= _from_fact(
            "call_end", decided[0], decided[1], ordered, names, last=agreed
        )
    return members


def _phrase_call_end_allowed(rule: Rule, facts: Facts) -> bool:
    """A call-end phrase rule may suggest only on a conversation, and never an
    appointment set when the facts say it was cancelled."""
    if not facts.conversation:
        return False
    return not (facts.cancelled is not None and rule.value == "Appointment set")


def _context(
    *,
    first_name: str,
    received_on: dt.date | None,
    called_on: Mapping[str, str] | None,
    current: Mapping[str, str] | None,
) -> Context:
    """A context for callers that have no call (the bench): noon of the day received."""
    day = received_on or dt.datetime.now(dt.UTC).date()
    noon = dt.datetime.combine(day, dt.time(12), dt.UTC)
    return Context(
        lead_first_name=first_name,
        called_on=Vehicle.of(called_on),
        current=Vehicle.of(current),
        received_at=noon,
        call_started_at=noon,
    )


def _matched(
    rule: Rule,
    ordered: Sequence[Mapping[str, Any]],
    names: Mapping[str, str],
    first_name: str,
    facts: Facts,
) -> dict[str, Any] | None:
    """The rule's suggestion from the first line on its side that says a phrase or that
    a fact phrase matches. On a wrong number the person who answered is not the lead, so
    a rule that listens for the lead's first name hears nothing."""
    if facts.kind == WRONG_NUMBER and "{first_name}" in rule.phrases:
        return None
    patterns = compile_phrases(rule.phrases, first_name=first_name)
    established = _fact_lines(rule.phrases, facts)
    for index, turn in enumerate(ordered):
        if (patterns or established) and _hears(rule, turn):
            text = _words(turn["text"])
            if index in established or any(
                pattern.search(text) for pattern in patterns
            ):
                return _found(index, turn, rule.value, names)
    return None


def suggest(
    *,
    turns: Iterable[Mapping[str, Any]],
    rules: Iterable[Rule],
    names: Mapping[str, str],
    first_name: str,
    facts: Facts | None = None,
    call_ends: Collection[str] | None = None,
    received_on: dt.date | None = None,
    called_on: Mapping[str, str] | None = None,
    current: Mapping[str, str] | None = None,
) -> dict[str, dict[str, Any]]:
    """Every member the transcript suggests, each ``{"value", "line", "text", "at"}``;
    ``line`` counts the transcript's lines (``ordered_turns``) from 0. ``facts`` are the
    call's (``understanding.understand``; read here from ``received_on`` and the form's
    vehicles when not given). The call end is the facts' when they decide one of
    ``call_ends`` (the scorecard's reasons; by default those the rules name), else the
    first call-end rule that matches; ``alert`` lists every matching tag, comma-separated
    as a score holds them, with the line of the first."""
    ordered = ordered_turns(turns)
    rules = list(rules)
    if facts is None:
        facts = understand(
            ordered,
            _context(
                first_name=first_name,
                received_on=received_on,
                called_on=called_on,
                current=current,
            ),
        )
    if call_ends is None:
        call_ends = {str(rule.value) for rule in rules if rule.member == "call_end"}
    members = _fact_members(facts, ordered, names, call_ends)
    alerts: list[tuple[str, dict[str, Any]]] = []
    for rule in rules:
        if rule.member == "alert":
            if any(tag == rule.value for tag, _ in alerts):
                continue
        elif rule.member in members or (
            rule.member == "call_end" and not _phrase_call_end_allowed(rule, facts)
        ):
            continue
        found = _matched(rule, ordered, names, first_name, facts)
        if found is None:
            continue
        if rule.member == "alert":
            alerts.append((str(rule.value), found))
        else:
            members[rule.member] = found
    if alerts:
        first = min((found for _, found in alerts), key=lambda found: found["line"])
        members["alert"] = {**first, "value": ", ".join(tag for tag, _ in alerts)}
    return members
