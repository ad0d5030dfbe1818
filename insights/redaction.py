"""Card numbers and identity numbers taken out of a call's transcript (issue 38).

What a lead reads out on a call must not sit in the transcript, the summary, the scored
data, the CRM write-back or a webhook: a payment card number (a run of 13 to 19 digits that
passes the Luhn check), a US social security number (nine digits said as 3-2-4, or after
"social security"), and a card's security code (3 or 4 digits after "security code",
"CVV", "CVC" or "the back of the card"). Digits count however they are written or spoken:
"4111 1111 1111 1111", "4111-1111-...", "four one one one ..." ("oh" for zero), and a
number read out in pieces over several turns of the same side.

Each is replaced by a label (``[card number]``, ``[social security number]``,
``[security code]``) and answered as a span of the recording (side, start and end
seconds of the turns that held it), which the stored audio silences too
(``calls.redaction``). Pure functions: no models.
"""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from providers.speech import Segment

CARD = "card number"
SSN = "social security number"
SECURITY_CODE = "security code"
DIGIT_WORDS = {
    "zero": "0",
    "oh": "0",
    "o": "0",
    "one": "1",
    "two": "2",
    "three": "3",
    "four": "4",
    "five": "5",
    "six": "6",
    "seven": "7",
    "eight": "8",
    "nine": "9",
}
# Words that may sit between the groups of a number read out: "4111, dash 1111" (not
# "and": "my number is 303 555 0123 and my zip is 80202" is two numbers).
JOINERS = {"dash"}
# A word of the text, with what follows it up to the next word.
_TOKEN = re.compile(r"[A-Za-z']+|\d+")
_SECURITY_CUE = re.compile(
    r"\b(?:security code|cvv|cvc|cv2|code on the back|back of the card)\b",
    re.IGNORECASE,
)
_SSN_CUE = re.compile(
    r"\b(?:social security|social|ssn|social security number)\b", re.I
)
_SSN_SHAPE = re.compile(r"(?<!\d)\d{3}[- ]\d{2}[- ]\d{4}(?!\d)")
# How far before a number a cue may be said, in characters of the same turn.
CUE_REACH = 60


@dataclass(frozen=True)
class Span:
    """A part of the recording that held a redacted number: one side, from start to end
    seconds (the turns that said it), and what it was."""

    side: str
    start: float
    end: float
    kind: str

    def as_dict(self) -> dict[str, Any]:
        return {
            "side": self.side,
            "start": round(self.start, 2),
            "end": round(self.end, 2),
            "kind": self.kind,
        }


@dataclass
class _Digit:
    """A digit token: the turn it is in, where in the turn's text, and its digits."""

    turn: int
    start: int
    end: int
    digits: str


def luhn_valid(digits: str) -> bool:
    """The payment card check digit: every second digit from the right doubled."""
    total = 0
    for position, char in enumerate(reversed(digits)):
        value = int(char)
        if position % 2:
            value = value * 2 - 9 if value > 4 else value * 2
        total += value
    return total % 10 == 0


def redact_turns(
    turns: Sequence[Mapping[str, Any]],
) -> tuple[list[dict[str, Any]], list[Span]]:
    """The turns with every card number, social security number and security code
    replaced by its label, and the spans of the recording that held them."""
    texts = [str(turn["text"]) for turn in turns]
    found: list[tuple[list[_Digit], str]] = []
    for side in ("agent", "lead"):
        indexes = [i for i, turn in enumerate(turns) if turn["side"] == side]
        for run in _runs(texts, indexes):
            kind = _kind(run, texts)
            if kind:
                found.append((run, kind))
    replaced = [dict(turn) for turn in turns]
    spans: list[Span] = []
    # Replace from the end of each text so earlier positions stay right.
    cuts: dict[int, list[tuple[int, int, str]]] = {}
    for run, kind in found:
        by_turn: dict[int, list[_Digit]] = {}
        for digit in run:
            by_turn.setdefault(digit.turn, []).append(digit)
        for turn_index, digits in by_turn.items():
            cuts.setdefault(turn_index, []).append(
                (digits[0].start, digits[-1].end, f"[{kind}]")
            )
        held = sorted(by_turn)
        spans.append(
            Span(
                side=str(turns[held[0]]["side"]),
                start=float(turns[held[0]]["start"]),
                end=float(turns[held[-1]]["end"]),
                kind=kind,
            )
        )
    for turn_index, pieces in cuts.items():
        text = texts[turn_index]
        for start, end, label in sorted(pieces, reverse=True):
            text = text[:start] + label + text[end:]
        replaced[turn_index]["text"] = text
    return replaced, spans


def redact_segments(
    agent: Sequence[Segment], lead: Sequence[Segment]
) -> tuple[list[Segment], list[Segment], list[Span]]:
    """``redact_turns`` over the engine's segments of each side, before they are joined
    into turns: a span is then the few seconds of the segments that said the number, not
    a whole turn."""
    pieces = sorted(
        [("agent", s) for s in agent] + [("lead", s) for s in lead],
        key=lambda piece: (piece[1].start, piece[1].end),
    )
    turns = [
        {"side": side, "start": s.start, "end": s.end, "text": s.text}
        for side, s in pieces
    ]
    redacted, spans = redact_turns(turns)
    sides: dict[str, list[Segment]] = {"agent": [], "lead": []}
    for turn in redacted:
        sides[turn["side"]].append(Segment(turn["start"], turn["end"], turn["text"]))
    return sides["agent"], sides["lead"], spans


def _tokens(text: str, turn: int) -> list[_Digit | None]:
    """The turn's words in order: a digit token for digits and digit words, None for a
    joiner, and a plain word (which ends a run) as an empty-digit token."""
    tokens: list[_Digit | None] = []
    for match in _TOKEN.finditer(text):
        word = match.group(0)
        lower = word.lower()
        if word.isdigit():
            tokens.append(_Digit(turn, match.start(), match.end(), word))
        elif lower in DIGIT_WORDS:
            tokens.append(_Digit(turn, match.start(), match.end(), DIGIT_WORDS[lower]))
        elif lower in JOINERS:
            tokens.append(None)
        else:
            tokens.append(_Digit(turn, match.start(), match.end(), ""))
    return tokens


def _runs(texts: Sequence[str], indexes: Sequence[int]) -> list[list[_Digit]]:
    """Runs of digit tokens of one side, in order: a run goes on across joiners and
    across the end of one of the side's turns into its next turn when both edges are
    digits (a number read out in pieces)."""
    runs: list[list[_Digit]] = []
    current: list[_Digit] = []
    for turn in indexes:
        tokens = _tokens(texts[turn], turn)
        starts_with_digit = bool(tokens) and tokens[0] is not None and tokens[0].digits
        if current and not starts_with_digit:
            runs.append(current)
            current = []
        for token in tokens:
            if token is None:
                continue
            if token.digits:
                current.append(token)
            elif current:
                runs.append(current)
                current = []
    if current:
        runs.append(current)
    return [run for run in runs if _digits(run)]


def _digits(run: Sequence[_Digit]) -> str:
    return "".join(digit.digits for digit in run)


def _kind(run: Sequence[_Digit], texts: Sequence[str]) -> str:
    digits = _digits(run)
    first = run[0]
    before = texts[first.turn][max(0, first.start - CUE_REACH) : first.start]
    if 13 <= len(digits) <= 19 and luhn_valid(digits):
        return CARD
    if len(digits) == 9:
        said = texts[first.turn][first.start : run[-1].end]
        if _SSN_CUE.search(before) or (
            first.turn == run[-1].turn and _SSN_SHAPE.search(said)
        ):
            return SSN
    if len(digits) in (3, 4) and _SECURITY_CUE.search(before):
        return SECURITY_CODE
    return ""
