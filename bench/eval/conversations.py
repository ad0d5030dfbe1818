"""The evaluation set's conversations (``bench/eval/conversations/*.txt``, layout in the
README there): hand-written dealer calls with their context and hand labels, read into
plain data for ``speak`` (audio) and ``measure`` (transcription accuracy)."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from backoffice.evaluation import labels_and_body
from scoring.defaults import DEFAULT_CHOICES

HERE = Path(__file__).resolve().parent / "conversations"
KINDS = ("conversation", "voicemail", "wrong number", "no conversation")
# The default call-end reasons, and the labels every file holds (read by the service's
# own evaluation too: backoffice.evaluation).
CALL_ENDS = tuple(DEFAULT_CHOICES["call_end"])


@dataclass(frozen=True)
class Line:
    """One line of the conversation: a turn (``agent``/``lead``; ``over`` when it starts
    before the other side has finished), or a pause (``hold``) or a tone (``tone``) of
    ``seconds`` with no words."""

    speaker: str  # "agent", "lead", "hold" or "tone"
    text: str = ""
    over: bool = False
    seconds: float = 0.0


@dataclass(frozen=True)
class Conversation:
    name: str  # the file's name without .txt: "01-wojciech-crv"
    labels: dict[str, str]
    lines: tuple[Line, ...]

    @property
    def met(self) -> list[int]:
        """The default scorecard's categories met, by slot (1-10)."""
        return [int(slot) for slot in self.labels["met"].split(",") if slot.strip()]

    def said_by(self, speaker: str) -> str:
        return " ".join(line.text for line in self.lines if line.speaker == speaker)


def parse(name: str, text: str) -> Conversation:
    """A conversation file's text: ``key: value`` labels, a ``---`` line, then its lines
    (the labels read as the service's evaluation reads them)."""
    labels, body = labels_and_body(name, text)
    if labels["kind"] not in KINDS:
        raise ValueError(f"{name}: kind {labels['kind']!r} is not one of {KINDS}")
    if labels["call_end"] not in (*CALL_ENDS, "none"):
        raise ValueError(f"{name}: call_end {labels['call_end']!r}")
    lines: list[Line] = []
    for row in body.splitlines():
        if not row.strip() or row.startswith("#"):
            continue
        who, colon, said = row.partition(":")
        who, said = who.strip(), said.strip()
        if not colon:
            raise ValueError(f"{name}: not a line: {row!r}")
        if who in ("hold", "tone"):
            lines.append(Line(who, seconds=float(said)))
        elif who.rstrip("+") in ("agent", "lead"):
            lines.append(Line(who.rstrip("+"), said, over=who.endswith("+")))
        else:
            raise ValueError(f"{name}: unknown speaker {who!r}")
    return Conversation(name, labels, tuple(lines))


def load(directory: Path = HERE) -> list[Conversation]:
    """Every conversation in ``directory``, in file-name order."""
    return [
        parse(path.stem, path.read_text(encoding="utf-8"))
        for path in sorted(directory.glob("*.txt"))
    ]
