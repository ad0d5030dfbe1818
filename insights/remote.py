"""The ``remote`` speech-to-text engine: an OpenAI-compatible ``/v1/audio/transcriptions``
endpoint (a hosted engine, or a GPU server of one's own), one request per channel as a mono
16 kHz WAV; with several ``TRANSCRIPTION_LANGUAGES``, one more for the channel's first 30
seconds, without a language, for the language the server hears. A server down or
overloaded is a ``TransientError``, a refusal or an answer not understood a
``PermanentError`` (``providers.speech``).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any, Self

import numpy as np
import requests
from django.conf import settings
from django.conf.locale import LANG_INFO

from insights.engines import LANGUAGE_WINDOW, mono_wav
from providers.speech import Context, PermanentError, Segment, TransientError

REMOTE_TIMEOUT = (5, 300)  # connect, read: a long call takes a while to transcribe


class RemoteEngine:
    name = "remote"

    def __init__(self, *, url: str, key: str, model: str) -> None:
        if not url:
            raise PermanentError("TRANSCRIPTION_REMOTE_URL is not set")
        self.url = f"{url.rstrip('/')}/v1/audio/transcriptions"
        self.key, self.model = key, model

    @classmethod
    def from_settings(cls) -> Self:
        return cls(
            url=settings.TRANSCRIPTION_REMOTE_URL,
            key=settings.TRANSCRIPTION_REMOTE_KEY,
            model=settings.TRANSCRIPTION_REMOTE_MODEL,
        )

    def language_of(
        self, channel_audio: np.ndarray, *, languages: Sequence[str]
    ) -> str:
        """The language the server hears in the channel's first 30 seconds (its answer's
        ``language``, a name such as "spanish" or a code), when it is one of
        ``languages``; else the first of them."""
        first = languages[0] if languages else "en"
        if len(languages) < 2 or not len(channel_audio):
            return first
        fields = {"model": self.model, "response_format": "verbose_json"}
        body = self._post(channel_audio[:LANGUAGE_WINDOW], fields)
        heard = str(body.get("language") or "").strip().lower()
        code = heard if heard in languages else LANGUAGE_CODES.get(heard, "")
        return code if code in languages else first

    def transcribe(
        self,
        channel_audio: np.ndarray,
        *,
        context: Context | None = None,
        language: str = "en",
    ) -> list[Segment]:
        if not len(channel_audio):
            return []
        fields = {
            "model": self.model,
            "response_format": "verbose_json",
            "timestamp_granularities[]": "segment",
            "language": language,
            "temperature": "0",
        }
        hints = context.hints() if context is not None else ""
        if hints:
            fields["prompt"] = hints  # OpenAI's field for words to expect
        body = self._post(channel_audio, fields)
        try:
            return [
                Segment(float(s["start"]), float(s["end"]), str(s["text"]).strip())
                for s in body.get("segments") or []
                if str(s["text"]).strip()
            ]
        except (KeyError, TypeError, AttributeError, ValueError) as error:
            raise PermanentError(f"unexpected answer: {str(body)[:200]}") from error

    def _post(
        self, channel_audio: np.ndarray, fields: dict[str, str]
    ) -> dict[str, Any]:
        """The server's JSON answer for one channel; a server down or overloaded is
        transient, a refusal or an answer that is not a JSON object permanent."""
        try:
            response = requests.post(
                self.url,
                headers={"Authorization": f"Bearer {self.key}"} if self.key else {},
                files={"file": ("channel.wav", mono_wav(channel_audio), "audio/wav")},
                data=fields,
                timeout=REMOTE_TIMEOUT,
            )
        except requests.RequestException as error:
            raise TransientError(f"{type(error).__name__}: {error}") from error
        if response.status_code >= 500 or response.status_code == 429:
            raise TransientError(f"HTTP {response.status_code}: {response.text[:200]}")
        if response.status_code >= 400:
            raise PermanentError(f"HTTP {response.status_code}: {response.text[:200]}")
        try:
            body = response.json()
        except ValueError as error:
            raise PermanentError(f"unexpected answer: {response.text[:200]}") from error
        if not isinstance(body, dict):
            raise PermanentError(f"unexpected answer: {response.text[:200]}")
        return body


# A language's English name, as OpenAI's servers answer it ("spanish"), to its code.
LANGUAGE_CODES = {
    str(info["name"]).lower(): code
    for code, info in LANG_INFO.items()
    if "name" in info and "-" not in code
}
