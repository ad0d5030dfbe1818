"""A call's summary from its transcript turns: 1 to 4 sentences for the dealer.

``builtin`` needs no model: ``understanding`` reads the call into facts (the kind of call,
the vehicle and trade-in as said, the last agreed appointment, a callback, information to
send, the questions nothing answered) and writes one sentence per fact, each with the
transcript lines it came from. ``openai`` asks an OpenAI-compatible chat completions
endpoint to word those facts, and nothing else; its text is used only when it states no
day, time or appointment the facts do not hold, and the builtin one is used otherwise or
when the endpoint fails: a summary never stops a transcription from being saved.
``SUMMARY_BACKEND`` picks one through ``providers.summariser`` (the interface is
``providers.summaries``).
"""

from __future__ import annotations

import logging
import re
from collections.abc import Sequence
from typing import Any, Self

import requests
from django.conf import settings

from calls.transcripts import language_name, reading_context
from core.logging import log_event
from providers import summariser
from providers.summaries import Summary
from understanding import Context, Facts, Sentence, summary_sentences, understand

log = logging.getLogger(__name__)

SUMMARY_TIMEOUT = (5, 60)
# Words a summary may only use when the facts hold them: days, months and clock times.
_DAYS = (
    r"monday|tuesday|wednesday|thursday|friday|saturday|sunday|today|tomorrow|"
    r"january|february|march|april|may|june|july|august|september|october|november|december"
)
_DATED = re.compile(
    rf"\b(?:{_DAYS})\b|\b\d{{1,2}}(?::\d{{2}})?\s*(?:[ap]\.?m\b|noon)|\bnoon\b", re.I
)
_SET = re.compile(r"\b(?:appointment|test drive|booked|scheduled)\b", re.I)
_NO_SET = re.compile(r"\bno appointment\b", re.I)


def no_conversation_summary(reason: str) -> str:
    """The summary of a call with no conversation in it: that, and why; nothing else."""
    return f"No conversation: {reason}."


def other_language_summary(language: str) -> str:
    """The summary of a call in a language the rules do not read (``understanding.
    LANGUAGES``): that, in the dealer's language, and nothing the rules would guess."""
    return (
        f"The call was in {language_name(language)}. Summaries are written from calls "
        "in English only: read the transcript."
    )


def call_facts(*, call: Any, turns: Sequence[dict[str, Any]]) -> tuple[Facts, Context]:
    """What the call established, read from its turns (``understanding``)."""
    context = Context.of(reading_context(call))
    return understand(turns, context), context


def _written(sentences: Sequence[Sentence]) -> Summary:
    return Summary(
        text=" ".join(sentence.text for sentence in sentences),
        evidence=[sentence.as_dict() for sentence in sentences],
    )


def builtin_written(*, call: Any, turns: Sequence[dict[str, Any]]) -> Summary:
    """The summary written from the call's facts alone (1 to 4 sentences; one when there
    was no conversation), with each sentence's lines: a call in which the lead said
    nothing is "No conversation" or a voicemail, never "spoke with"."""
    facts, context = call_facts(call=call, turns=turns)
    return _written(summary_sentences(facts, context))


def builtin_summary(*, call: Any, turns: Sequence[dict[str, Any]]) -> str:
    """The builtin summary's text (``builtin_written``)."""
    return builtin_written(call=call, turns=turns).text


class BuiltinSummariser:
    """The summary from the call's facts (``builtin_written``): no model."""

    name = "builtin"

    @classmethod
    def from_settings(cls) -> Self:
        return cls()

    def summarise(
        self, *, call: Any, turns: Sequence[dict[str, Any]], transcript: str
    ) -> Summary:
        return builtin_written(call=call, turns=turns)


class OpenAISummariser:
    """An OpenAI-compatible ``/v1/chat/completions`` endpoint words the call's facts (the
    builtin summary's sentences, with their lines) as the summary. The builtin summary is
    used when no ``SUMMARY_URL`` is set, when there was no conversation (a voicemail, a
    wrong number, silence: a model asked to summarise nothing may make a story up), when
    the endpoint fails, or when its text names a day, a time or an appointment the facts do
    not hold (``supported``)."""

    name = "openai"

    PROMPT = (
        "You write the summary of a phone call between a car dealership's agent and a "
        "sales lead, in 2 to 4 sentences of plain text. State only the facts listed: they "
        "were read from the transcript, and each names the transcript lines that support "
        "it. Add nothing else: no vehicle, trade-in, day, time, appointment, callback or "
        "question that is not among the facts. If a fact says no appointment was set, say "
        "so. The transcript is given for wording only."
    )

    def __init__(self, *, url: str, model: str, key: str) -> None:
        self.url = f"{url.rstrip('/')}/v1/chat/completions" if url else ""
        self.model, self.key = model, key

    @classmethod
    def from_settings(cls) -> Self:
        return cls(
            url=settings.SUMMARY_URL,
            model=settings.SUMMARY_MODEL,
            key=settings.SUMMARY_KEY,
        )

    def summarise(
        self, *, call: Any, turns: Sequence[dict[str, Any]], transcript: str
    ) -> Summary:
        facts, context = call_facts(call=call, turns=turns)
        sentences = summary_sentences(facts, context)
        if not (self.url and facts.conversation):
            return _written(sentences)
        try:
            text = self._asked(sentences=sentences, transcript=transcript)
        except (
            requests.RequestException,
            ValueError,
            KeyError,
            IndexError,
            TypeError,
        ) as error:
            log_event(
                log,
                "summary.fallback",
                level=logging.WARNING,
                call_id=call.pk,
                error=f"{type(error).__name__}: {error}",
            )
            return _written(sentences)
        return Summary(text=text, evidence=_evidence_of(text, sentences))

    def _asked(self, *, sentences: Sequence[Sentence], transcript: str) -> str:
        listed = "\n".join(
            f"- {sentence.text}"
            + (
                f" (lines {', '.join(str(line + 1) for line in sentence.lines)})"
                if sentence.lines
                else ""
            )
            for sentence in sentences
        )
        response = requests.post(
            self.url,
            headers={"Authorization": f"Bearer {self.key}"} if self.key else {},
            json={
                "model": self.model,
                "temperature": 0,
                "messages": [
                    {"role": "system", "content": self.PROMPT},
                    {
                        "role": "user",
                        "content": f"Facts:\n{listed}\n\nTranscript:\n{transcript}",
                    },
                ],
            },
            timeout=SUMMARY_TIMEOUT,
        )
        response.raise_for_status()
        text = str(response.json()["choices"][0]["message"]["content"]).strip()
        if not text:
            raise ValueError("empty summary")
        if not supported(text, sentences):
            raise ValueError(f"states what the facts do not hold: {text[:200]}")
        return text


def _said(pattern: re.Pattern[str], text: str) -> set[str]:
    return {re.sub(r"[\s.]", "", found.lower()) for found in pattern.findall(text)}


def supported(text: str, sentences: Sequence[Sentence]) -> bool:
    """Whether a written summary keeps to the facts: at most four sentences, every day,
    month and clock time it names among the facts', an appointment only when the facts
    hold one, and "no appointment" only when they say so."""
    facts = " ".join(sentence.text for sentence in sentences)
    if len(re.findall(r"[.!?](?:\s|$)", text)) > 4:
        return False
    if not _said(_DATED, text) <= _said(_DATED, facts):
        return False
    if _NO_SET.search(text):
        return bool(_NO_SET.search(facts))
    return not (_SET.search(text) and not _SET.search(facts))


_COMMON = {
    "with",
    "that",
    "this",
    "were",
    "from",
    "lead",
    "agent",
    "they",
    "their",
    "said",
}


def _words(text: str) -> set[str]:
    return {
        word
        for word in re.findall(r"[a-z0-9]+", text.lower())
        if len(word) > 3 and word not in _COMMON
    }


def _evidence_of(text: str, sentences: Sequence[Sentence]) -> list[dict[str, Any]]:
    """Each written sentence with the lines of the facts it shares words with (two or
    more; else the one it shares most with)."""
    evidence = []
    for written in re.findall(r"[^.!?]+[.!?]*", text):
        written = written.strip()
        if not written:
            continue
        shared = [(len(_words(s.text) & _words(written)), s) for s in sentences]
        used = [sentence for count, sentence in shared if count >= 2]
        if not used:
            best = max(shared, key=lambda pair: pair[0], default=(0, None))
            used = [best[1]] if best[0] and best[1] is not None else []
        lines = sorted({line for sentence in used for line in sentence.lines})
        evidence.append({"sentence": written, "lines": lines})
    return evidence


def summary_write(
    *, call: Any, turns: Sequence[dict[str, Any]], transcript: str
) -> Summary:
    """The call's summary by ``SUMMARY_BACKEND``, with its evidence; never fails (a
    summariser that needs a server falls back to the builtin one)."""
    return summariser().summarise(call=call, turns=turns, transcript=transcript)
