"""A call's summary from its transcript turns: 2 to 4 sentences for the dealer.

``builtin`` needs no model: it names who called about what (the lead's vehicle and trade-in
from the call), what was agreed (an appointment's day and time, a callback, information to
send) and what was left open (the lead's questions no one answered, a lead not interested).
``openai`` asks an OpenAI-compatible chat completions endpoint and falls back to the
builtin one when that fails: a summary never stops a transcription from being saved.
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

from core.logging import log_event
from providers import summariser

log = logging.getLogger(__name__)

SUMMARY_TIMEOUT = (5, 60)
WEEKDAY = r"(?:monday|tuesday|wednesday|thursday|friday|saturday|sunday|tomorrow|today)"
NUMBER = r"(?:one|two|three|four|five|six|seven|eight|nine|ten|eleven|twelve|noon)"
MINUTES = r"(?:\s+(?:fifteen|thirty|forty[- ]five|o'clock))"
CLOCK = rf"(?:\d{{1,2}}(?::\d{{2}})?\s*(?:[ap]\.?m\.?)?|{NUMBER}{MINUTES}?(?:\s+[ap]\.?m\.?)?)"
APPOINTMENT = re.compile(rf"\b({WEEKDAY})\b(?:\s+at\s+({CLOCK}))?", re.IGNORECASE)
CALLBACK = re.compile(r"\bcall (?:me |you )?back\b|\bcallback\b", re.IGNORECASE)
SEND_INFO = re.compile(r"\b(?:e-?mail|send|text) you\b", re.IGNORECASE)
NOT_INTERESTED = re.compile(r"\bnot interested\b", re.IGNORECASE)


def _joined(*parts: str) -> str:
    return " ".join(part.strip() for part in parts if part and part.strip())


def no_conversation_summary(reason: str) -> str:
    """The summary of a call with no conversation in it: that, and why; nothing else."""
    return f"No conversation: {reason}."


def _lead_spoke(turns: Sequence[dict[str, Any]]) -> bool:
    return any(t["side"] == "lead" and str(t["text"]).strip() for t in turns)


def builtin_summary(*, call: Any, turns: Sequence[dict[str, Any]]) -> str:
    """The summary written by rules over the call and its turns (2 to 4 sentences); a call
    in which the lead said nothing is "No conversation", never "spoke with"."""
    if not _lead_spoke(turns):
        return no_conversation_summary("nothing was heard from the lead")
    lead = _joined(call.first_name, call.last_name) or "The lead"
    vehicle = _joined(call.called_on_year, call.called_on_make, call.called_on_model)
    trade_in = _joined(call.current_year, call.current_make, call.current_model)
    about = f"the {vehicle}" if vehicle else "a vehicle"
    opening = f"{lead} spoke with {call.agent_shown or 'the dealership'} about {about}"
    if call.agent_id:
        opening = f"{lead} spoke with {call.agent.get_full_name()} about {about}"
    if trade_in:
        opening += f", with a {trade_in} to trade in"
    sentences = [opening + "."]

    ordered = sorted(turns, key=lambda turn: turn["start"])
    text = " ".join(str(turn["text"]) for turn in ordered)
    lead_text = " ".join(str(t["text"]) for t in ordered if t["side"] == "lead")
    appointment = _appointment(ordered)
    if appointment:
        sentences.append(f"An appointment was set for {appointment}.")
    elif CALLBACK.search(text):
        sentences.append("The lead asked to be called back.")
    elif SEND_INFO.search(text):
        sentences.append("The agent is sending the lead the details.")
    else:
        sentences.append("No appointment was set.")
    if NOT_INTERESTED.search(lead_text):
        sentences.append("The lead said they were not interested.")
    questions = _unanswered(ordered)
    if questions and len(sentences) < 4:
        sentences.append(f"Left open: {' '.join(questions[:2])}")
    return " ".join(sentences[:4])


def _appointment(turns: Sequence[dict[str, Any]]) -> str:
    """The first day named with a time ("Thursday at two thirty", "Friday at 2:30")."""
    for turn in turns:
        for match in APPOINTMENT.finditer(str(turn["text"])):
            if match.group(2):
                return f"{match.group(1).capitalize()} at {match.group(2).strip()}"
    return ""


def _unanswered(turns: Sequence[dict[str, Any]]) -> list[str]:
    """The lead's questions the agent's next turn did not answer (it asked another
    question, or the call ended)."""
    questions = []
    for index, turn in enumerate(turns):
        text = str(turn["text"]).strip()
        if turn["side"] != "lead" or not text.endswith("?"):
            continue
        reply = next((t for t in turns[index + 1 :] if t["side"] == "agent"), None)
        if reply is None or str(reply["text"]).strip().endswith("?"):
            question = re.split(r"(?<=[.!,])\s+", text)[-1]
            questions.append(question[0].upper() + question[1:])
    return questions


class BuiltinSummariser:
    """Rules over the transcript and the lead (``builtin_summary``): no model."""

    name = "builtin"

    @classmethod
    def from_settings(cls) -> Self:
        return cls()

    def summarise(
        self, *, call: Any, turns: Sequence[dict[str, Any]], transcript: str
    ) -> str:
        return builtin_summary(call=call, turns=turns)


class OpenAISummariser:
    """An OpenAI-compatible ``/v1/chat/completions`` endpoint writes the summary; the
    builtin rules do when no ``SUMMARY_URL`` is set, when the lead said nothing (a model
    asked to summarise nothing may make a story up), or when the endpoint fails."""

    name = "openai"

    PROMPT = (
        "Summarise this phone call between a car dealership's agent and a sales lead in "
        "2 to 4 sentences: who called about which vehicle (and trade-in), what was agreed "
        "(appointment day and time, callback), and what is still open. Plain text only."
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
    ) -> str:
        if self.url and _lead_spoke(turns):
            try:
                return self._asked(call=call, transcript=transcript)
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
        return builtin_summary(call=call, turns=turns)

    def _asked(self, *, call: Any, transcript: str) -> str:
        facts = (
            f"Lead: {_joined(call.first_name, call.last_name)}. "
            f"Vehicle: {_joined(call.called_on_year, call.called_on_make, call.called_on_model)}. "
            f"Trade-in: {_joined(call.current_year, call.current_make, call.current_model) or 'none'}."
        )
        response = requests.post(
            self.url,
            headers={"Authorization": f"Bearer {self.key}"} if self.key else {},
            json={
                "model": self.model,
                "temperature": 0,
                "messages": [
                    {"role": "system", "content": self.PROMPT},
                    {"role": "user", "content": f"{facts}\n\n{transcript}"},
                ],
            },
            timeout=SUMMARY_TIMEOUT,
        )
        response.raise_for_status()
        text = str(response.json()["choices"][0]["message"]["content"]).strip()
        if not text:
            raise ValueError("empty summary")
        return text


def summary_write(
    *, call: Any, turns: Sequence[dict[str, Any]], transcript: str
) -> str:
    """The call's summary by ``SUMMARY_BACKEND``; never fails (a summariser that needs a
    server falls back to the builtin rules)."""
    return summariser().summarise(call=call, turns=turns, transcript=transcript)
