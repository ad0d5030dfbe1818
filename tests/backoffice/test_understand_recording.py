"""``manage.py understand_recording`` and ``manage.py insights_eval``: one recording (or
transcript) understood as the service understands a call, printed as JSON; a directory of
labelled calls scored. Through the commands, with the shipped model for the audio."""

from __future__ import annotations

import io
import json
from pathlib import Path

import numpy as np
import pytest
from django.core.management import call_command
from django.core.management.base import CommandError

from backoffice.evaluation import parse, summary_verdicts
from calls.audio import mulaw_wav_bytes, telephone
from calls.telephony.speech import RATE, say
from scoring.models import ScorecardCategory
from scoring.services import scorecard_create_default
from tests.accounts.factories import AccountFactory

pytestmark = pytest.mark.django_db

CONTEXT = {
    "agent_name": "Siobhan Kelly",
    "lead_first_name": "Wojciech",
    "lead_last_name": "Nowak",
    "dealer": "Lakeside Honda",
    "called_on": {"year": "2025", "make": "Honda", "model": "CR-V"},
    "current": {"year": "", "make": "", "model": ""},
    "received_at": "2026-03-10T15:01:00-06:00",
    "call_started_at": "2026-03-10T15:05:00-06:00",
    "timezone": "America/Chicago",
}
TRANSCRIPT = """\
agent: Hi, is this Wojciech? It's Siobhan from Lakeside Honda.
lead: Yes, hi. I asked about the CR-V.
agent: Great. Would you like to come in and drive it? Tomorrow at noon?
lead: Tomorrow at noon works for me.
agent: Perfect, I have you down for tomorrow at noon. Is this still the best number?
lead: It is. Thanks.
"""


def understood(tmp_path: Path, *args: str, **files: str) -> dict:
    paths = {}
    for name, text in {"context.json": json.dumps(CONTEXT), **files}.items():
        paths[name] = tmp_path / name
        paths[name].write_text(text)
    out = io.StringIO()
    call_command(
        "understand_recording",
        *args,
        "--context",
        str(paths["context.json"]),
        *(["--transcript", str(paths["lines.txt"])] if "lines.txt" in paths else []),
        stdout=out,
    )
    return json.loads(out.getvalue())


def test_a_transcript_is_understood_without_speech_to_text(tmp_path):
    said = understood(tmp_path, "-", **{"lines.txt": TRANSCRIPT})

    assert set(said) == {
        "transcription",
        "summary",
        "conversation",
        "language",
        "suggestions",
        "redactions",
        "engine",
    }
    assert said["conversation"] is True
    assert said["engine"] is None  # no speech-to-text ran
    assert said["transcription"].splitlines()[0].startswith("Siobhan Kelly (00:00-00:0")
    assert "Wojciech Nowak spoke with Siobhan Kelly about the" in said["summary"]
    # "Tomorrow" counts from the call's start, in the account's timezone.
    assert "Wednesday, March 11 at 12:00 PM" in said["summary"]
    suggestions = said["suggestions"]
    assert suggestions["appointment"] == {"date": "2026-03-11", "time": "12:00"}
    assert suggestions["call_end"] == "Appointment set"
    assert {"slot": 1, "name": "Greeted the customer by name"} in suggestions[
        "categories"
    ]
    assert suggestions["called_on"]["model"] == "CR-V"
    assert suggestions["current"] == {"make": "", "model": "", "year": ""}
    assert isinstance(suggestions["alerts"], list)


def test_a_lead_who_says_nothing_is_no_conversation(tmp_path):
    said = understood(
        tmp_path, "-", **{"lines.txt": "agent: Hello? Wojciech? Hello?\n"}
    )
    assert said["conversation"] is False
    assert said["summary"].startswith("No conversation")
    assert said["suggestions"]["appointment"] is None


def test_an_accounts_scorecard_names_its_categories(tmp_path):
    account = AccountFactory()
    scorecard = scorecard_create_default(account=account)
    ScorecardCategory.objects.filter(scorecard=scorecard, slot=1).update(
        name="Used the customer's name"
    )
    said = understood(
        tmp_path, "-", "--account", str(account.pk), **{"lines.txt": TRANSCRIPT}
    )
    assert {"slot": 1, "name": "Used the customer's name"} in said["suggestions"][
        "categories"
    ]


@pytest.mark.parametrize(
    ("files", "refused"),
    [
        ({"lines.txt": "customer: hi\n"}, "transcript line 1"),
        ({"context.json": json.dumps({**CONTEXT, "colour": "red"})}, "colour"),
        (
            {"context.json": json.dumps({**CONTEXT, "call_started_at": "2026-03-10"})},
            "call_started_at needs an offset",
        ),
        ({"context.json": "[1, 2]"}, "a JSON object is expected"),
    ],
)
def test_bad_input_is_refused_with_the_reason(tmp_path, files, refused):
    with pytest.raises(CommandError, match=refused):
        understood(tmp_path, "-", **{"lines.txt": TRANSCRIPT, **files})


def spoken_call(path: Path) -> None:
    """A short call spoken on two channels as a carrier records it: 8 kHz µ-law."""
    agent = say(
        "Hi Wojciech, this is Siobhan from Lakeside Honda about the CR-V.",
        voice="en-gb-scotland",
        words_per_minute=160,
    )
    lead = say(
        "Yes. Can I see it tomorrow at noon?", voice="en-us+f2", words_per_minute=160
    )
    pause = int(0.6 * RATE)
    channels = np.zeros((pause * 3 + len(agent) + len(lead), 2), np.float32)
    channels[pause : pause + len(agent), 0] = agent
    start = pause * 2 + len(agent)
    channels[start : start + len(lead), 1] = lead
    path.write_bytes(mulaw_wav_bytes(telephone(channels, RATE), 8000))


@pytest.mark.slow
def test_a_telephone_recording_is_transcribed_and_understood(tmp_path, settings):
    settings.TRANSCRIPTION_BACKEND = "faster_whisper"
    spoken_call(tmp_path / "call.wav")

    said = understood(tmp_path, str(tmp_path / "call.wav"))

    assert said["conversation"] is True
    assert said["engine"]["name"] == "faster_whisper"
    assert set(said["engine"]) == {"name", "model", "seconds"}  # timed, not judged here
    lines = said["transcription"].splitlines()
    assert lines[0].startswith("Siobhan Kelly (")
    assert lines[-1].startswith("Wojciech Nowak (")
    assert "tomorrow" in said["transcription"].lower()
    assert said["redactions"] == []


def test_an_unreadable_recording_is_refused(tmp_path, settings):
    settings.TRANSCRIPTION_BACKEND = "faster_whisper"
    (tmp_path / "call.wav").write_bytes(b"RIFF....not a wave")
    with pytest.raises(CommandError, match="unreadable audio: not a RIFF WAVE file"):
        understood(tmp_path, str(tmp_path / "call.wav"))


LABELLED = (
    """\
agent_name: Siobhan Kelly
lead_name: Wojciech Nowak
dealer: Lakeside Honda
vehicle: 2025 Honda CR-V
trade_in:
called_at: 2026-03-10 15:05
timezone: America/Chicago
kind: conversation
appointment: 2026-03-11 12:00
call_end: Appointment set
vehicle_discussed: CR-V
trade_in_said:
met: 1, 2, 3, 8, 9, 10
---
"""
    + TRANSCRIPT
)
VOICEMAIL = """\
agent_name: Siobhan Kelly
lead_name: Declan Byrne
dealer: Lakeside Honda
vehicle: 2024 Toyota Tacoma
trade_in:
called_at: 2026-03-10 16:00
timezone: America/Chicago
kind: voicemail
appointment: none
call_end: Voicemail
vehicle_discussed:
trade_in_said:
met: 2
---
lead: Hi, you've reached Declan. Leave a message after the tone.
tone: 0.6
agent: Hi Declan, it's Siobhan from Lakeside Honda. Call me back when you can.
"""


def test_insights_eval_scores_labelled_calls_from_their_transcripts(tmp_path):
    (tmp_path / "01-wojciech.txt").write_text(LABELLED)
    (tmp_path / "02-declan.txt").write_text(VOICEMAIL)
    out = io.StringIO()

    call_command(
        "insights_eval", str(tmp_path), "--transcripts-only", "--json", stdout=out
    )

    (figures,) = json.loads(out.getvalue())
    assert figures["form"] == "transcript"
    assert figures["calls"] == 2
    assert figures["appointments"] == {"right": 1, "wrong": 0, "missed": 0}
    assert figures["call_end_accuracy"] == 1.0
    assert figures["false_statements"] == []
    assert figures["summary"]["right"] >= 3
    assert figures["models_heard"] == "1/1"
    assert figures["wer"]["merged"] is None  # no recording: no word error rate
    # Each category met or suggested, by its slot: introduced self (2) on both calls.
    assert figures["by_category"]["2"] == {"precision": 1.0, "recall": 1.0}
    assert set(figures["by_category"]) >= {"2", "3", "8", "9", "10"}


def test_insights_eval_lists_a_false_statement(tmp_path):
    # Labelled as no appointment: the summary's appointment is then a false statement.
    (tmp_path / "01-wojciech.txt").write_text(
        LABELLED.replace("appointment: 2026-03-11 12:00", "appointment: none")
    )
    out = io.StringIO()
    call_command(
        "insights_eval", str(tmp_path), "--transcripts-only", "--json", stdout=out
    )
    (figures,) = json.loads(out.getvalue())
    assert figures["false_statements"] == [
        "01-wojciech (transcript): an appointment was set for Wednesday, March 11 at "
        "12:00 PM"
    ]
    assert figures["appointments"]["wrong"] == 1


@pytest.mark.slow
def test_insights_eval_scores_a_recording_beside_its_labels(tmp_path, settings):
    settings.TRANSCRIPTION_BACKEND = "faster_whisper"
    (tmp_path / "01-wojciech.txt").write_text(LABELLED)
    spoken_call(tmp_path / "01-wojciech.8k.wav")
    out = io.StringIO()
    call_command(
        "insights_eval", str(tmp_path), "--json", stdout=out, stderr=io.StringIO()
    )
    transcript, eight = json.loads(out.getvalue())
    assert (transcript["form"], eight["form"]) == ("transcript", "8k")
    assert eight["wer"]["merged"] is not None  # scored against the labelled words
    assert eight["real_time_factor"] is not None  # reported; make bench judges speed


def test_insights_eval_refuses_a_directory_without_labelled_calls(tmp_path):
    with pytest.raises(CommandError, match="no labelled calls"):
        call_command("insights_eval", str(tmp_path), "--transcripts-only")


@pytest.mark.parametrize(
    ("summary", "verdict"),
    [
        ("Wojciech Nowak spoke with Siobhan Kelly about the Honda CR-V.", "right"),
        ("Wojciech Nowak spoke with Siobhan Kelly about the Honda.", "right"),
        ("Wojciech Nowak spoke with Siobhan Kelly about the Honda Pilot.", "false"),
        ("Wojciech Nowak spoke with Siobhan Kelly about the Dodge Charger.", "false"),
    ],
)
def test_a_summary_naming_only_the_make_discussed_is_incomplete_not_false(
    summary, verdict
):
    call = parse("01-wojciech", LABELLED)
    (said,) = [v for fact, v in summary_verdicts(call, summary) if "vehicle" in fact]
    assert said == verdict
