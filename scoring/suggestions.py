"""What the transcript suggests to a call's scorer: pure functions over the call's turns.

A rule (a scorecard category, or a call-end reason or alert tag) is suggested by the first
turn on its side, within its first seconds if it has a limit, that says one of its phrases.
An appointment is a weekday and a time said in one turn; the vehicles are the call's own
vehicle words said on the call, and the trade-in's when a trade-in is discussed. Each
suggestion keeps the transcript line that triggered it, so the scorer can check it.
"""

from __future__ import annotations

import datetime as dt
import re
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from accounts.schedules import WEEKDAYS
from calls.transcripts import clock

_WEEKDAY = r"(?:" + "|".join(WEEKDAYS) + r")"
_NUMBERS = {
    "one": 1,
    "two": 2,
    "three": 3,
    "four": 4,
    "five": 5,
    "six": 6,
    "seven": 7,
    "eight": 8,
    "nine": 9,
    "ten": 10,
    "eleven": 11,
    "twelve": 12,
}
_MINUTES = {
    "o'clock": 0,
    "oclock": 0,
    "oh five": 5,
    "ten": 10,
    "fifteen": 15,
    "twenty": 20,
    "thirty": 30,
    "forty": 40,
    "forty five": 45,
    "forty-five": 45,
    "fifty": 50,
}
_HOUR = r"(?P<hour>1[0-2]|0?[1-9]|" + "|".join(_NUMBERS) + r")"
_MINUTE = (
    r"(?::(?P<digits>[0-5]\d)|\s+(?P<words>"
    + "|".join(sorted((re.escape(m) for m in _MINUTES), key=len, reverse=True))
    + r"))?"
)
_HALF = r"(?P<period>\s*(?:a\.?m\.?|p\.?m\.?)(?!\w))?"
# "at two thirty", "around 10", "2:30 pm", "11 am", "noon".
_TIME = re.compile(
    r"(?:(?<!\w)(?:at|around|by|for)\s+" + _HOUR + _MINUTE + _HALF + r"(?!\w)"
    r"|(?<![\w:])(?P<hour2>1[0-2]|0?[1-9]):(?P<digits2>[0-5]\d)(?P<period2>\s*(?:a\.?m\.?|p\.?m\.?)(?!\w))?"
    r"|(?<![\w:])(?P<hour3>1[0-2]|0?[1-9])\s*(?P<period3>a\.?m\.?|p\.?m\.?)(?!\w)"
    r"|(?<!\w)(?P<noon>noon|midday)(?!\w))",
    re.IGNORECASE,
)
_WEEKDAY_RE = re.compile(r"(?<!\w)(" + _WEEKDAY + r")s?(?!\w)", re.IGNORECASE)
_TRADE = re.compile(r"(?<!\w)trad(?:e|ing)(?:[\s-]+in)?(?!\w)", re.IGNORECASE)
_YEAR = re.compile(r"(?<!\w)((?:19[5-9]|20[0-4])\d)(?!\w)")
MAKES = [
    "Acura",
    "Audi",
    "BMW",
    "Buick",
    "Cadillac",
    "Chevrolet",
    "Chevy",
    "Chrysler",
    "Dodge",
    "Fiat",
    "Ford",
    "GMC",
    "Genesis",
    "Honda",
    "Hyundai",
    "Infiniti",
    "Jaguar",
    "Jeep",
    "Kia",
    "Lexus",
    "Lincoln",
    "Mazda",
    "Mercedes",
    "Mini",
    "Mitsubishi",
    "Nissan",
    "Porsche",
    "Ram",
    "Subaru",
    "Tesla",
    "Toyota",
    "Volkswagen",
    "VW",
    "Volvo",
]
_MAKE = re.compile(
    r"(?<!\w)(" + "|".join(MAKES) + r")(?:\s+([A-Za-z0-9-]+))?(?!\w)", re.IGNORECASE
)
# Words that follow a make without being its model.
_NOT_MODEL = {"and", "or", "but", "that", "which", "with", "for", "in", "is", "it", "i"}
VEHICLE_PARTS = ("make", "model", "year")
# Turns after the one that mentions a trade-in that may still be about it.
TRADE_WINDOW = 2


@dataclass(frozen=True)
class Rule:
    """One suggestion rule as the matcher needs it: what it suggests and when."""

    member: str
    value: Any
    phrases: str
    side: str
    within_seconds: int | None


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


def compile_phrases(phrases: str, *, first_name: str) -> list[re.Pattern[str]]:
    """A rule's phrases as patterns; a line that cannot match (no first name to say, a
    broken regular expression) is left out rather than failing the whole rule."""
    patterns = []
    for raw in phrases.splitlines():
        line = raw.strip()
        if not line:
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


def spoken_time(text: str) -> dt.time | None:
    """The first time of day said in ``text``; hours 1-6 without am/pm are afternoon
    hours, 7-11 morning hours (dealers' opening hours)."""
    match = _TIME.search(text)
    if match is None:
        return None
    parts = match.groupdict()
    if parts["noon"]:
        return dt.time(12, 0)
    hour_text = parts["hour"] or parts["hour2"] or parts["hour3"]
    hour = _NUMBERS.get(hour_text.lower()) or int(hour_text)
    minute = 0
    if parts["digits"] or parts["digits2"]:
        minute = int(parts["digits"] or parts["digits2"])
    elif parts["words"]:
        minute = _MINUTES[" ".join(parts["words"].lower().split())]
    period = (parts["period"] or parts["period2"] or parts["period3"] or "").lower()
    if period.strip().startswith("p") and hour < 12:
        hour += 12
    elif period.strip().startswith("a") and hour == 12:
        hour = 0
    elif not period.strip() and 1 <= hour <= 6:
        hour += 12
    return dt.time(hour, minute)


def next_weekday(after: dt.date, weekday: str) -> dt.date:
    """The first date after ``after`` (never that day itself) falling on ``weekday``."""
    days = (WEEKDAYS.index(weekday.lower()) - after.weekday()) % 7
    return after + dt.timedelta(days=days or 7)


def _appointment(
    turns: Sequence[Mapping[str, Any]],
    received_on: dt.date,
    names: Mapping[str, str],
) -> dict[str, Any]:
    for index, turn in enumerate(turns):
        text = _words(turn["text"])
        day = _WEEKDAY_RE.search(text)
        if day is None:
            continue
        moment = spoken_time(text[day.start() :]) or spoken_time(text)
        if moment is None:
            continue
        date = next_weekday(received_on, day.group(1))
        return {
            "appointment_date": _found(index, turn, date.isoformat(), names),
            "appointment_time": _found(index, turn, moment.strftime("%H:%M"), names),
        }
    return {}


def _said(value: str, text: str) -> bool:
    value = _words(value)
    if not value:
        return False
    return bool(
        re.search(
            r"(?<!\w)" + re.escape(value).replace(r"\ ", r"\s+") + r"(?!\w)",
            text,
            re.IGNORECASE,
        )
    )


def _called_on(
    turns: Sequence[Mapping[str, Any]],
    vehicle: Mapping[str, str],
    names: Mapping[str, str],
) -> dict[str, Any]:
    found: dict[str, Any] = {}
    for part in VEHICLE_PARTS:
        value = _words(vehicle.get(part) or "")
        for index, turn in enumerate(turns):
            if _said(value, str(turn["text"])):
                found[f"called_on_{part}"] = _found(index, turn, value, names)
                break
    return found


def _trade_in(
    turns: Sequence[Mapping[str, Any]],
    vehicle: Mapping[str, str],
    called_on: Mapping[str, str],
    names: Mapping[str, str],
) -> dict[str, Any]:
    """The trade-in's make, model and year: said in the turn that mentions a trade-in or
    the few after it. The lead's known current vehicle first; otherwise a make from the
    list with the word after it as the model, and a year."""
    window: list[int] = []
    for index, turn in enumerate(turns):
        if _TRADE.search(str(turn["text"])):
            window.extend(range(index, min(index + TRADE_WINDOW + 1, len(turns))))
    seen = sorted(set(window))
    # The lead knows their own car best: their turns first.
    seen.sort(key=lambda index: turns[index]["side"] != "lead")
    found: dict[str, Any] = {}
    for part in VEHICLE_PARTS:
        value = _words(vehicle.get(part) or "")
        for index in seen:
            if _said(value, str(turns[index]["text"])):
                found[f"current_{part}"] = _found(index, turns[index], value, names)
                break
    for index in seen:
        text = str(turns[index]["text"])
        make = next(
            (
                match
                for match in _MAKE.finditer(text)
                if not _is_called_on(match, called_on)
            ),
            None,
        )
        if make and "current_make" not in found:
            found["current_make"] = _found(index, turns[index], make.group(1), names)
            model = make.group(2)
            if (
                model
                and "current_model" not in found
                and model.lower() not in _NOT_MODEL
                and not _YEAR.fullmatch(model)
            ):
                found["current_model"] = _found(index, turns[index], model, names)
        year = _YEAR.search(text)
        if year and "current_year" not in found:
            found["current_year"] = _found(index, turns[index], year.group(1), names)
    return found


def _is_called_on(make: re.Match[str], called_on: Mapping[str, str]) -> bool:
    """A make said with the called-on vehicle's model is the car asked about, not a trade."""
    said = (make.group(1).lower(), (make.group(2) or "").lower())
    asked = (
        _words(called_on.get("make") or "").lower(),
        _words(called_on.get("model") or "").lower(),
    )
    return said[0] == asked[0] and said[1] in ("", asked[1])


def suggest(
    *,
    turns: Iterable[Mapping[str, Any]],
    rules: Iterable[Rule],
    names: Mapping[str, str],
    first_name: str,
    received_on: dt.date,
    called_on: Mapping[str, str],
    current: Mapping[str, str],
) -> dict[str, dict[str, Any]]:
    """Every member the transcript suggests, each ``{"value", "line", "text", "at"}``;
    ``line`` counts the transcript's lines (``ordered_turns``) from 0. For the lists
    (``call_end``, ``alert``) the first rule given that matches wins."""
    ordered = ordered_turns(turns)
    members: dict[str, dict[str, Any]] = {}
    for rule in rules:
        if rule.member in members:
            continue
        patterns = compile_phrases(rule.phrases, first_name=first_name)
        if not patterns:
            continue
        for index, turn in enumerate(ordered):
            if not _hears(rule, turn):
                continue
            text = _words(turn["text"])
            if any(pattern.search(text) for pattern in patterns):
                members[rule.member] = _found(index, turn, rule.value, names)
                break
    members.update(_appointment(ordered, received_on, names))
    members.update(_called_on(ordered, called_on, names))
    members.update(_trade_in(ordered, current, called_on, names))
    return members
