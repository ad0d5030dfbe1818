"""How well the service understands calls, judged on labelled recordings
(``manage.py insights_eval DIR``): a dealer can judge engines and rules on their own calls.

A directory holds one ``NAME.txt`` per call (labels, ``---``, then the call's lines:
``agent: ...``, ``lead: ...``; the layout is in bench/eval/conversations/README.md) and,
beside it, its recordings in any of the audio forms ``NAME.16k.wav`` and ``NAME.8k.wav``.
Each call is understood from its perfect transcript (the file's lines) and from each
recording present, through ``backoffice.understand``, and scored against its labels:

- word error rate per channel and merged (recordings only; numbers spelled as words);
- vehicle models and the lead's and agent's names heard in the transcript;
- the summary's statements checked against the labels: right, false (listed) and missed;
- appointments right, wrong and missed; the ten default categories' micro precision and
  recall, and each category's; the call end's accuracy; the engine's real-time factor per channel.
"""

from __future__ import annotations

import datetime as dt
import re
from collections import Counter, defaultdict
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any
from zoneinfo import ZoneInfo

from understanding import Context, Vehicle

HEADER = (
    "agent_name",
    "lead_name",
    "dealer",
    "vehicle",
    "trade_in",
    "called_at",
    "timezone",
    "kind",
    "appointment",
    "call_end",
    "vehicle_discussed",
    "trade_in_said",
    "met",
)
FORMS = ("16k", "8k")
NONE = ("", "none")
_TURN = re.compile(r"^(agent|lead)\+?\s*:\s*(.*)$", re.IGNORECASE)


@dataclass(frozen=True)
class Labelled:
    """One labelled call: its labels and its lines (``side``, ``text``), in order."""

    name: str
    labels: dict[str, str]
    lines: tuple[tuple[str, str], ...]
    text: str  # the file as written: the perfect transcript

    def said_by(self, side: str) -> str:
        return " ".join(text for speaker, text in self.lines if speaker == side)

    @property
    def met(self) -> set[int]:
        return {int(slot) for slot in self.labels["met"].split(",") if slot.strip()}

    def value(self, key: str) -> str:
        """A label, "" for none."""
        value = self.labels.get(key, "").strip()
        return "" if value.lower() in NONE else value

    def context(self) -> Context:
        """What the service would know of the call beside its recording."""
        first, _, last = self.labels["lead_name"].partition(" ")
        zone = self.labels["timezone"] or "UTC"
        started = dt.datetime.fromisoformat(self.labels["called_at"]).replace(
            tzinfo=ZoneInfo(zone)
        )
        return Context(
            agent_name=self.labels["agent_name"],
            lead_first_name=first,
            lead_last_name=last,
            dealer=self.labels["dealer"],
            called_on=_vehicle(self.value("vehicle")),
            current=_vehicle(self.value("trade_in")),
            received_at=started - dt.timedelta(minutes=1),
            call_started_at=started,
            timezone=zone,
        )


def _vehicle(text: str) -> Vehicle:
    """ "2025 Honda CR-V" as year, make and model."""
    parts = text.split()
    year = parts.pop(0) if parts and parts[0].isdigit() else ""
    make = parts.pop(0) if parts else ""
    return Vehicle(year=year, make=make, model=" ".join(parts))


def labels_and_body(name: str, text: str) -> tuple[dict[str, str], str]:
    """A labelled call file split: its ``key: value`` labels (every one of ``HEADER``,
    no other) and the text after the ``---`` line."""
    head, separator, body = text.partition("\n---\n")
    if not separator:
        raise ValueError(f"{name}: no '---' line after the labels")
    labels: dict[str, str] = {}
    for row in head.splitlines():
        key, colon, value = row.partition(":")
        if not colon or key.strip() not in HEADER:
            raise ValueError(f"{name}: not a label: {row!r}")
        labels[key.strip()] = value.strip()
    missing = [key for key in HEADER if key not in labels]
    if missing:
        raise ValueError(f"{name}: missing labels {', '.join(missing)}")
    return labels, body


def parse(name: str, text: str) -> Labelled:
    """A call's file: ``key: value`` labels, a ``---`` line, then its lines."""
    labels, body = labels_and_body(name, text)
    lines = tuple(
        (match[1].lower(), match[2].strip())
        for row in body.splitlines()
        if (match := _TURN.match(row.strip()))
    )
    return Labelled(name=name, labels=labels, lines=lines, text=body)


def load(directory: Path) -> list[Labelled]:
    return [
        parse(path.stem, path.read_text()) for path in sorted(directory.glob("*.txt"))
    ]


# --- words -----------------------------------------------------------------------------


_ONES = [
    "zero",
    "one",
    "two",
    "three",
    "four",
    "five",
    "six",
    "seven",
    "eight",
    "nine",
    "ten",
    "eleven",
    "twelve",
    "thirteen",
    "fourteen",
    "fifteen",
    "sixteen",
    "seventeen",
    "eighteen",
    "nineteen",
]
_TENS = [
    "_",
    "_",
    "twenty",
    "thirty",
    "forty",
    "fifty",
    "sixty",
    "seventy",
    "eighty",
    "ninety",
]


def spelled(number: int) -> str:
    """A whole number in words, no "and": 2013 = "two thousand thirteen"."""
    if number < 20:
        return _ONES[number]
    if number < 100:
        tens, ones = divmod(number, 10)
        return _TENS[tens] + (f" {_ONES[ones]}" if ones else "")
    for size, name in ((10**9, "billion"), (10**6, "million"), (1000, "thousand")):
        if number >= size:
            high, rest = divmod(number, size)
            return f"{spelled(high)} {name}" + (f" {spelled(rest)}" if rest else "")
    hundreds, rest = divmod(number, 100)
    return f"{_ONES[hundreds]} hundred" + (f" {spelled(rest)}" if rest else "")


def words(text: str) -> list[str]:
    """What WER compares: lower case, hyphens and apostrophes joined, other punctuation a
    space, a number of digits alone spelled out (a digit-letter mix, F-150, kept)."""
    text = text.lower().replace("%", " percent")
    text = re.sub(r"(?<=[a-z0-9])[-'\u2019](?=[a-z0-9])", "", text)
    text = re.sub(r"(?<=\d),(?=\d{3})", "", text)
    out: list[str] = []
    for token in re.findall(r"[a-z0-9]+", text):
        out.extend(spelled(int(token)).split() if token.isdigit() else [token])
    return out


def word_errors(reference: list[str], hypothesis: list[str]) -> int:
    """Substitutions, deletions and insertions (Levenshtein distance over words)."""
    previous = list(range(len(hypothesis) + 1))
    for i, ref in enumerate(reference, 1):
        current = [i]
        for j, hyp in enumerate(hypothesis, 1):
            current.append(
                min(previous[j] + 1, current[j - 1] + 1, previous[j - 1] + (ref != hyp))
            )
        previous = current
    return previous[-1]


def compact(text: str) -> str:
    """A model's letters and digits only: "CR-V", "C R V" and "crv" agree."""
    return "".join(words(text))


# --- scoring ---------------------------------------------------------------------------


@dataclass
class Scores:
    """The figures of one form (perfect transcript, 16k or 8k) over the set."""

    form: str
    calls: int = 0
    errors: Counter[str] = field(default_factory=Counter)
    reference_words: Counter[str] = field(default_factory=Counter)
    heard: Counter[str] = field(default_factory=Counter)
    summary: Counter[str] = field(default_factory=Counter)
    false_statements: list[str] = field(default_factory=list)
    appointments: Counter[str] = field(default_factory=Counter)
    categories: Counter[str] = field(default_factory=Counter)
    by_slot: defaultdict[int, Counter[str]] = field(
        default_factory=lambda: defaultdict(Counter)
    )
    call_end: Counter[str] = field(default_factory=Counter)
    audio_seconds: float = 0.0
    engine_seconds: float = 0.0

    def add(
        self, call: Labelled, understood: dict[str, Any], *, audio_seconds: float
    ) -> None:
        self.calls += 1
        lines = _lines_by_side(understood["transcription"], call)
        if self.form != "transcript":
            for side in ("agent", "lead"):
                reference = words(call.said_by(side))
                self.errors[side] += word_errors(reference, words(lines[side]))
                self.reference_words[side] += len(reference)
            self.audio_seconds += audio_seconds
            self.engine_seconds += float(
                (understood.get("engine") or {}).get("seconds") or 0
            )
        heard = compact(understood["transcription"])
        model = call.value("vehicle_discussed")
        if model:
            self.heard["models"] += 1
            self.heard["models heard"] += compact(model) in heard
        for who in (
            call.labels["lead_name"].split()[0],
            call.labels["agent_name"].split()[0],
        ):
            if who.lower() in call.text.lower():
                self.heard["names"] += 1
                self.heard["names heard"] += compact(who) in heard
        self._summary(call, understood)
        self._suggestions(call, understood["suggestions"])

    def _summary(self, call: Labelled, understood: dict[str, Any]) -> None:
        for fact, verdict in summary_verdicts(call, understood["summary"]):
            self.summary[verdict] += 1
            if verdict == "false":
                self.false_statements.append(f"{call.name} ({self.form}): {fact}")

    def _suggestions(self, call: Labelled, suggested: dict[str, Any]) -> None:
        labelled = call.value("appointment")
        said = suggested.get("appointment")
        said_text = f"{said['date']} {said['time']}" if said else ""
        if labelled:
            key = "right" if said_text == labelled else ("wrong" if said else "missed")
            self.appointments[key] += 1
        elif said:
            self.appointments["wrong"] += 1
        slots = {item["slot"] for item in suggested["categories"]}
        self.categories["true"] += len(slots & call.met)
        self.categories["false"] += len(slots - call.met)
        self.categories["missed"] += len(call.met - slots)
        for slot in slots:
            self.by_slot[slot]["true" if slot in call.met else "false"] += 1
        for slot in call.met - slots:
            self.by_slot[slot]["missed"] += 1
        self.call_end["calls"] += 1
        self.call_end["right"] += (suggested.get("call_end") or "") == call.value(
            "call_end"
        )

    def figures(self) -> dict[str, Any]:
        def rate(errors: float, total: float) -> float | None:
            return round(errors / total, 3) if total else None

        found, false = self.categories["true"], self.categories["false"]
        return {
            "form": self.form,
            "calls": self.calls,
            "wer": {
                "agent": rate(self.errors["agent"], self.reference_words["agent"]),
                "lead": rate(self.errors["lead"], self.reference_words["lead"]),
                "merged": rate(
                    sum(self.errors.values()), sum(self.reference_words.values())
                ),
            },
            "models_heard": f"{self.heard['models heard']}/{self.heard['models']}",
            "names_heard": f"{self.heard['names heard']}/{self.heard['names']}",
            "summary": dict(self.summary),
            "false_statements": self.false_statements,
            "appointments": {
                key: self.appointments[key] for key in ("right", "wrong", "missed")
            },
            "categories": {
                "precision": rate(found, found + false),
                "recall": rate(found, found + self.categories["missed"]),
            },
            # Each default category by its slot: precision and recall (None where it
            # was never suggested, or never met).
            "by_category": {
                str(slot): {
                    "precision": rate(counts["true"], counts["true"] + counts["false"]),
                    "recall": rate(counts["true"], counts["true"] + counts["missed"]),
                }
                for slot, counts in sorted(self.by_slot.items())
            },
            "call_end_accuracy": rate(self.call_end["right"], self.call_end["calls"]),
            # Each channel is read on its own: the engine's seconds per audio second
            # of one channel.
            "real_time_factor": rate(self.engine_seconds / 2, self.audio_seconds),
        }


def _lines_by_side(transcription: str, call: Labelled) -> dict[str, str]:
    """The transcript's words of each side (its lines name the agent or the lead)."""
    agent = call.labels["agent_name"].strip().lower()
    said: dict[str, list[str]] = {"agent": [], "lead": []}
    for line in transcription.splitlines():
        name, _, rest = line.partition(" (")
        text = rest.partition("): ")[2]
        said["agent" if name.strip().lower() in (agent, "agent") else "lead"].append(
            text
        )
    return {side: " ".join(texts) for side, texts in said.items()}


_SET_FOR = re.compile(
    r"was set for (?:(?P<weekday>\w+), (?P<month>\w+) (?P<day>\d+))?"
    r"(?: ?at )?(?P<time>\d{1,2}:\d\d [AP]M)?"
)
_ABOUT = re.compile(r"spoke with .+? about the (?P<vehicle>[^.,]+)")
_TRADE = re.compile(r", with (?:a (?P<vehicle>.+?) to trade in|(?P<none>no trade-in))")


def summary_verdicts(call: Labelled, summary: str) -> Iterable[tuple[str, str]]:
    """Each statement the summary makes, or should have made, judged against the
    labels: ``right``, ``false`` (it says what did not happen) or ``missed``. The
    summary's sentences are the builtin summariser's (``understanding.summary``)."""
    kind = call.value("kind")
    lowered = summary.lower()
    said_kind = next(
        (
            k
            for k in ("voicemail", "wrong number", "no conversation")
            if lowered.startswith(k)
        ),
        "conversation",
    )
    yield f"the call is a {said_kind}", "right" if said_kind == kind else "false"
    yield from _appointment_verdicts(call, summary)
    if about := _ABOUT.search(summary):
        named, model = about["vehicle"], call.value("vehicle_discussed")
        # True, if incomplete, when it names the model discussed, or only words of the
        # vehicle discussed (its make: "the Toyota" of a RAV4 the form names).
        known = set(words(model)) | set(words(call.value("vehicle")))
        right = bool(model) and (
            compact(model) in compact(named) or set(words(named)) <= known
        )
        yield f"the vehicle discussed was the {named}", "right" if right else "false"
    if trade := _TRADE.search(summary):
        said = call.value("trade_in_said")
        if trade["none"]:
            yield "the lead has no trade-in", "false" if said else "right"
        else:
            named = trade["vehicle"]
            right = bool(said) and (
                named == "vehicle" or compact(_vehicle(said).model) in compact(named)
            )
            yield f"the lead has a {named} to trade in", "right" if right else "false"


def _appointment_verdicts(call: Labelled, summary: str) -> Iterable[tuple[str, str]]:
    labelled = call.value("appointment")
    stated = _SET_FOR.search(summary)
    if stated is None:
        if labelled:
            yield "an appointment was set", "missed"
            if "no appointment was set" in summary.lower():
                yield "no appointment was set", "false"
        return
    claim = stated.group(0).removeprefix("was set for ")
    if not labelled:
        yield f"an appointment was set for {claim}", "false"
        return
    when = dt.datetime.fromisoformat(labelled)  # the dealer's local time, as labelled
    right = True
    if stated["day"]:
        right &= (stated["month"], int(stated["day"])) == (f"{when:%B}", when.day)
    if stated["time"]:
        right &= stated["time"] == f"{when.hour % 12 or 12}:{when.minute:02d} {when:%p}"
    if not (stated["day"] or stated["time"]):
        right = False
    yield f"an appointment was set for {claim}", "right" if right else "false"


def evaluate(
    calls: list[Labelled],
    *,
    understand: Callable[[Labelled, str], tuple[dict[str, Any], float] | None],
    forms: Iterable[str] = ("transcript", *FORMS),
) -> list[dict[str, Any]]:
    """The figures of each form: ``understand(call, form)`` answers what the service
    understood and the audio's seconds, or None when the call has no recording in it."""
    results = []
    for form in forms:
        scores = Scores(form)
        for call in calls:
            understood = understand(call, form)
            if understood is not None:
                scores.add(call, understood[0], audio_seconds=understood[1])
        if scores.calls:
            results.append(scores.figures())
    return results
