"""The speech-to-text interface: an engine reads one channel (float32 samples at 16 kHz)
and answers its segments, seconds from the start of the recording. It may be told the
call's ``Context`` (who talks, the dealer, the vehicles): names a small model would not
guess from the sound alone. An engine first tells which of the configured languages a
channel speaks (``language_of``), then transcribes it in that language.

Errors are of two kinds: a ``TransientError`` is worth trying again later (a server down
or overloaded), a ``PermanentError`` is not (audio that cannot be read, a model missing).

The implementations (``insights.engines``): ``faster_whisper`` in this process and
``remote``, an OpenAI-compatible endpoint; ``none`` transcribes nothing.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Protocol, Self

import numpy as np


class TransientError(RuntimeError):
    """The engine may succeed later: try again."""


class PermanentError(RuntimeError):
    """The engine will never succeed with this audio or this configuration."""


@dataclass(frozen=True)
class Segment:
    start: float
    end: float
    text: str


@dataclass(frozen=True)
class Context:
    """What is known of a call before it is heard: the names said on it (agent, lead,
    dealer) and the vehicles of the lead's form ("2025 Honda CR-V")."""

    names: tuple[str, ...] = ()
    vehicles: tuple[str, ...] = ()

    def hints(self) -> str:
        """The context as one line of words for an engine to expect ("" when empty)."""
        return ", ".join(part for part in (*self.names, *self.vehicles) if part.strip())


class SpeechToText(Protocol):
    name: str
    model: str

    @classmethod
    def from_settings(cls) -> Self:
        """The engine as the ``TRANSCRIPTION_*`` settings configure it."""
        ...

    def language_of(
        self, channel_audio: np.ndarray, *, languages: Sequence[str]
    ) -> str:
        """The language spoken on a channel: one of ``languages`` (ISO 639-1 codes), the
        first when the engine cannot tell (an English-only model, no speech)."""
        ...

    def transcribe(
        self,
        channel_audio: np.ndarray,
        *,
        context: Context | None = None,
        language: str = "en",
    ) -> list[Segment]: ...
