"""The facts a call can establish, each with its evidence (the transcript lines that
support it), and the context the reading needs."""

from __future__ import annotations

import datetime as dt
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from typing import Any

CONVERSATION = "conversation"
VOICEMAIL = "voicemail"
NO_CONVERSATION = "no_conversation"
WRONG_NUMBER = "wrong_number"


@dataclass(frozen=True)
class Line:
    """One transcript line: its place in the transcript (from 0), side, times and text."""

    index: int
    side: str
    start: float
    end: float
    text: str


@dataclass(frozen=True)
class Evidence:
    """A transcript line that supports a fact."""

    line: int
    text: str


@dataclass(frozen=True)
class Vehicle:
    year: str = ""
    make: str = ""
    model: str = ""

    @classmethod
    def of(cls, parts: Mapping[str, Any] | None) -> Vehicle:
        parts = parts or {}
        return cls(
            *(" ".join(str(parts.get(key) or "").split()) for key in VEHICLE_PARTS)
        )

    def words(self) -> str:
        return " ".join(part for part in (self.year, self.make, self.model) if part)

    def __bool__(self) -> bool:
        return bool(self.words())


VEHICLE_PARTS = ("year", "make", "model")


@dataclass(frozen=True)
class Context:
    """What the reading may know beside the transcript. The form's vehicles are hints for
    recognising what is said ("C R V" is the form's "CR-V"), never facts of the call."""

    agent_name: str = ""
    lead_first_name: str = ""
    lead_last_name: str = ""
    dealer: str = ""
    called_on: Vehicle = field(default_factory=Vehicle)
    current: Vehicle = field(default_factory=Vehicle)
    received_at: dt.datetime | None = None
    call_started_at: dt.datetime | None = None
    timezone: str = "UTC"

    @classmethod
    def of(cls, values: Mapping[str, Any]) -> Context:
        """A context from plain values (``calls.transcripts.reading_context``): the
        vehicles as ``{"year", "make", "model"}`` mappings."""
        fields = dict(values)
        for key in ("called_on", "current"):
            fields[key] = Vehicle.of(fields.get(key))
        return cls(**fields)

    @property
    def lead_name(self) -> str:
        return " ".join(
            part for part in (self.lead_first_name, self.lead_last_name) if part
        ).strip()

    def call_date(self) -> dt.date:
        """The day the call was made, in the account's timezone ("today")."""
        from zoneinfo import ZoneInfo

        zone = ZoneInfo(self.timezone or "UTC")
        moment = self.call_started_at or self.received_at or dt.datetime.now(tz=zone)
        return moment.astimezone(zone).date()


@dataclass(frozen=True)
class Flag:
    """A fact that holds, with its evidence."""

    evidence: tuple[Evidence, ...]


@dataclass(frozen=True)
class Appointment:
    """An agreed appointment: its date and time (either may be unknown), what for
    ("visit", "test drive", "service") and the lines where it was proposed and agreed."""

    date: dt.date | None
    time: dt.time | None
    what: str
    evidence: tuple[Evidence, ...]


@dataclass(frozen=True)
class Callback:
    """A callback: who asked for it ("lead", or "agent" when the agent offered it) and
    when, if a day or a time was said."""

    by: str
    date: dt.date | None
    time: dt.time | None
    evidence: tuple[Evidence, ...]


@dataclass(frozen=True)
class Revocation:
    """The lead asked not to be called again: the sentence they said it in (quoted to a
    person, who confirms or dismisses it) and its line."""

    sentence: str
    evidence: tuple[Evidence, ...]


@dataclass(frozen=True)
class Objection:
    """One of the lead's objections: "price", "timing", "spouse" or "elsewhere"."""

    kind: str
    evidence: tuple[Evidence, ...]


@dataclass(frozen=True)
class VehicleFact:
    """The vehicle the call was about, the line it was first said in (``evidence``) and
    every line that names it (``named_in``)."""

    vehicle: Vehicle
    evidence: tuple[Evidence, ...]
    named_in: tuple[Evidence, ...] = ()


@dataclass(frozen=True)
class TradeIn:
    """A trade-in discussed: ``has`` is False when the lead said there is none; the vehicle
    holds only the parts that were said."""

    has: bool
    vehicle: Vehicle
    evidence: tuple[Evidence, ...]


@dataclass(frozen=True)
class Question:
    text: str
    evidence: tuple[Evidence, ...]


@dataclass
class Facts:
    """Everything the call established. ``kind`` is one of ``conversation``,
    ``voicemail``, ``no_conversation`` or ``wrong_number``."""

    lines: list[Line]
    kind: str = CONVERSATION
    kind_evidence: tuple[Evidence, ...] = ()
    purchased: Flag | None = None
    appointment: Appointment | None = None
    cancelled: Flag | None = None
    callback: Callback | None = None
    send_info: Flag | None = None
    not_interested: Flag | None = None
    # The lead asked not to be called again (only ever a suggestion for a person).
    do_not_call: Revocation | None = None
    objections: list[Objection] = field(default_factory=list)
    vehicle: VehicleFact | None = None
    trade_in: TradeIn | None = None
    open_questions: list[Question] = field(default_factory=list)
    # The lead's questions about the car or the deal that the agent's reply dealt with,
    # each with the question's line and the reply's.
    answered_questions: list[Question] = field(default_factory=list)

    @property
    def conversation(self) -> bool:
        return self.kind == CONVERSATION


def lines_of(turns: Iterable[Mapping[str, Any]]) -> list[Line]:
    """The transcript's lines as the transcript lists them: turns by start (then end),
    blank ones left out, whitespace folded; indexes count from 0."""
    ordered = sorted(
        (turn for turn in turns if str(turn.get("text") or "").strip()),
        key=lambda turn: (float(turn["start"]), float(turn["end"])),
    )
    return [
        Line(
            index=index,
            side=str(turn["side"]),
            start=float(turn["start"]),
            end=float(turn["end"]),
            text=" ".join(str(turn["text"]).split()),
        )
        for index, turn in enumerate(ordered)
    ]


def evidence(*lines: Line) -> tuple[Evidence, ...]:
    seen: dict[int, Evidence] = {}
    for line in lines:
        seen.setdefault(line.index, Evidence(line.index, line.text))
    return tuple(sorted(seen.values(), key=lambda item: item.line))
