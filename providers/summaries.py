"""The summariser interface: a call's summary, 1 to 4 sentences for the dealer, from its
transcript turns (``{"side", "start", "end", "text"}``) and the lead on the call, with the
transcript lines each sentence came from.

A summariser never fails a transcription: one that needs a server falls back to the
builtin rules when the server fails. The implementations (``insights.summaries``):
``builtin`` (rules, no model) and ``openai`` (an OpenAI-compatible chat endpoint).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any, Protocol, Self


@dataclass(frozen=True)
class Summary:
    """A call's summary and its evidence: for each sentence, the transcript lines (from 0)
    it was written from (``[{"sentence": ..., "lines": [3, 7]}]``)."""

    text: str
    evidence: list[dict[str, Any]] = field(default_factory=list)


class Summariser(Protocol):
    name: str

    @classmethod
    def from_settings(cls) -> Self:
        """The summariser as the ``SUMMARY_*`` settings configure it."""
        ...

    def summarise(
        self, *, call: Any, turns: Sequence[dict[str, Any]], transcript: str
    ) -> Summary: ...
