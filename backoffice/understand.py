"""One recording understood as the service understands a call, outside its flow: for
support (why did this call get that summary?) and for evaluation (``insights_eval``).

``understand_recording`` runs the same steps as a transcription run and the suggestions
that follow it (``insights.services``, ``scoring.services.call_suggestions_make``): the
recording's two channels read (PCM 16-bit or µ-law, 8 or 16 kHz), each transcribed by the
configured engine with the call's names and vehicles as hints, card and identity numbers
taken out, the turns read into facts (``understanding``), the builtin summary written from
them, and the scorecard's suggestions (the account's, or the default scorecard). Each
channel is transcribed in the language the engine hears on it; a call in a language the
rules do not read gets no facts and no suggestions, and its summary says so. Given a
transcript instead of audio, speech-to-text is skipped (the transcript is read as English),
so extraction can be judged alone.

The answer is one JSON document; its members are described in README "Transcription"
and docs/transcription.md.
"""

from __future__ import annotations

import datetime as dt
import re
from collections.abc import Mapping
from typing import Any

from django.conf import settings

from accounts.models import Account
from calls.models import Call
from insights.engines import hear, read_wav, speech_context, turns_from
from insights.redaction import redact_segments
from insights.summaries import no_conversation_summary, other_language_summary
from providers.speech import PermanentError, SpeechToText
from scoring.learnt import learnt_suggestions_apply
from scoring.models import Scorecard
from scoring.services import scorecard_create_default, scorecard_default_parts
from scoring.suggestions import VEHICLE_PARTS, rules_of, suggest
from understanding import LANGUAGES, Context, summary_sentences, understand

# "agent: text" / "lead: text" (the evaluation set's lines), or the interface's transcript
# line "Name (mm:ss-mm:ss): text" with the context's agent or lead name (or Agent, Lead).
_SIDE_LINE = re.compile(r"^(?P<side>agent|lead)\+?\s*:\s*(?P<text>.*)$", re.IGNORECASE)
# The evaluation set's pauses and tones: seconds with no words ("hold: 8", "tone: 0.6").
_PAUSE_LINE = re.compile(r"^(?:hold|tone)\s*:\s*(?P<seconds>\d+(?:\.\d+)?)$", re.I)
_NAMED_LINE = re.compile(
    r"^(?P<name>.+?) \((?P<start>\d+):(?P<s>\d\d)-(?P<end>\d+):(?P<e>\d\d)\): (?P<text>.*)$"
)
# A transcript given without times: each line lasts as long as its words take to say.
SECONDS_PER_WORD = 0.4
GAP_SECONDS = 0.5
CONTEXT_KEYS = {
    "agent_name",
    "lead_first_name",
    "lead_last_name",
    "dealer",
    "called_on",
    "current",
    "received_at",
    "call_started_at",
    "timezone",
}


class NotUnderstood(ValueError):
    """The input cannot be read: a context, a transcript line or audio the reader
    refuses (the reason says which)."""


def context_from(values: Mapping[str, Any]) -> Context:
    """The reading's context from its JSON document: names, dealer, the form's vehicles
    (``{"year", "make", "model"}``), ``received_at`` and ``call_started_at`` (ISO 8601
    with an offset) and the account's ``timezone``."""
    unknown = set(values) - CONTEXT_KEYS
    if unknown:
        raise NotUnderstood(f"unknown context members: {', '.join(sorted(unknown))}")
    fields = dict(values)
    for key in ("received_at", "call_started_at"):
        if fields.get(key):
            try:
                moment = dt.datetime.fromisoformat(str(fields[key]))
            except ValueError as error:
                raise NotUnderstood(f"{key}: {error}") from error
            if moment.tzinfo is None:
                raise NotUnderstood(
                    f"{key} needs an offset, e.g. 2026-03-11T14:20-07:00"
                )
            fields[key] = moment
        else:
            fields[key] = None
    return Context.of(fields)


def transcript_turns(text: str, context: Context) -> list[dict[str, Any]]:
    """The turns of a transcript given as text (see ``_SIDE_LINE``, ``_NAMED_LINE``).
    Blank lines and ``#`` comments are skipped; a file with a ``---`` line (the
    evaluation set's) is read from after it."""
    lines = text.splitlines()
    if "---" in (line.strip() for line in lines):
        lines = lines[[line.strip() for line in lines].index("---") + 1 :]
    agent_names = {"agent", context.agent_name.lower()}
    turns: list[dict[str, Any]] = []
    at = 0.5
    for number, raw in enumerate(lines, start=1):
        line = raw.strip()
        if not line or line.startswith("#"):
            continue
        if pause := _PAUSE_LINE.match(line):
            at += float(pause["seconds"])
            continue
        if side_line := _SIDE_LINE.match(line):
            side, said = side_line["side"].lower(), side_line["text"].strip()
            start = at
            end = start + max(1, len(said.split())) * SECONDS_PER_WORD
        elif named := _NAMED_LINE.match(line):
            side = "agent" if named["name"].strip().lower() in agent_names else "lead"
            said = named["text"].strip()
            start = int(named["start"]) * 60 + int(named["s"])
            end = int(named["end"]) * 60 + int(named["e"])
        else:
            raise NotUnderstood(
                f"transcript line {number}: not 'agent: ...', 'lead: ...' or "
                f"'Name (mm:ss-mm:ss): ...': {line[:80]}"
            )
        turns.append({"side": side, "start": start, "end": end, "text": said})
        at = end + GAP_SECONDS
    return turns


def understand_recording(
    *,
    context: Context,
    audio: bytes | None = None,
    transcript: str | None = None,
    engine: SpeechToText | None = None,
    account: Account | None = None,
) -> dict[str, Any]:
    """What the service understands of one recording (or of ``transcript``, skipping
    speech-to-text), as the command prints it."""
    redactions: list[dict[str, Any]] = []
    engine_said: dict[str, Any] | None = None
    silence = ""
    language = "en"  # a transcript given is read as English
    if transcript is not None:
        turns = transcript_turns(transcript, context)
        if not any(t["side"] == "lead" and t["text"].strip() for t in turns):
            silence = "nothing was said on the lead's side"
    else:
        if engine is None:
            raise NotUnderstood("no speech-to-text engine is configured")
        try:
            agent, lead, silence, language, took = hear(
                engine,
                read_wav(audio or b""),
                context=speech_context(context),
                languages=settings.TRANSCRIPTION_LANGUAGES,
            )
        except PermanentError as error:
            raise NotUnderstood(str(error)) from error
        if account is None or account.redact_numbers:
            agent, lead, spans = redact_segments(agent, lead)
            redactions = [span.as_dict() for span in spans]
        turns = turns_from(agent, lead)
        engine_said = {
            "name": engine.name,
            "model": engine.model,
            "seconds": round(took, 2),
        }
    names = {
        "agent": context.agent_name or "Agent",
        "lead": context.lead_name or "Lead",
    }
    read = language in LANGUAGES
    facts = understand(turns if read else [], context)
    if silence:
        summary = no_conversation_summary(silence)
    elif not read:
        summary = other_language_summary(language)
    else:
        summary = " ".join(s.text for s in summary_sentences(facts, context))
    return {
        "transcription": _rendered(turns, names),
        "summary": summary,
        "conversation": not silence,
        "language": language,
        "suggestions": _suggestions(
            turns if read else [], context, names, facts, account
        ),
        "redactions": redactions,
        "engine": engine_said,
    }


def _rendered(turns: list[dict[str, Any]], names: Mapping[str, str]) -> str:
    from calls.transcripts import render

    return render(turns, names)


def _suggestions(
    turns: list[dict[str, Any]],
    context: Context,
    names: Mapping[str, str],
    facts: Any,
    account: Account | None,
) -> dict[str, Any]:
    """The scorecard's suggestions in the command's shape."""
    categories: list[Any]
    choices: list[Any]
    if account is not None:
        scorecard = scorecard_create_default(account=account)
        categories, choices = (
            list(scorecard.categories.all()),
            list(scorecard.choices.all()),
        )
    else:
        categories, choices = scorecard_default_parts(scorecard=Scorecard())
    members = suggest(
        turns=turns,
        rules=rules_of(categories, choices),
        names=names,
        first_name=context.lead_first_name,
        facts=facts,
        call_ends={c.name for c in choices if c.kind == "call_end"},
    )
    if account is not None and turns:
        # The learnt models read a call: an unsaved one, named as the context names them
        # (a call with no agent shows its vendor's agent id).
        unsaved = Call(
            account=account,
            transcript_turns=turns,
            first_name=context.lead_first_name,
            last_name=context.lead_last_name,
            vendor_agent_id=context.agent_name,
        )
        members = learnt_suggestions_apply(call=unsaved, members=members)
    slots = {category.slot: category.name for category in categories}
    date = members.get("appointment_date", {}).get("value")
    alert = str(members.get("alert", {}).get("value") or "")
    return {
        "categories": [
            {"slot": slot, "name": slots[slot]}
            for slot in sorted(slots)
            if members.get(f"cat{slot}", {}).get("value")
        ],
        "call_end": members.get("call_end", {}).get("value"),
        "alerts": [tag.strip() for tag in alert.split(",") if tag.strip()],
        "appointment": (
            {"date": date, "time": members.get("appointment_time", {}).get("value")}
            if date
            else None
        ),
        "called_on": {
            part: members.get(f"called_on_{part}", {}).get("value") or ""
            for part in VEHICLE_PARTS
        },
        "current": {
            part: members.get(f"current_{part}", {}).get("value") or ""
            for part in VEHICLE_PARTS
        },
    }
