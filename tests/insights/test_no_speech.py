"""No speech, no story: a recording with nothing said on the lead's side (no audio, too
short, silent, or words the engine could not hear) is transcribed as "no conversation" with
its reason, and the summary says so; it never tells of a conversation that did not happen."""

from __future__ import annotations

import logging

import pytest

from insights import engines
from insights.models import Transcription, TranscriptionStatus
from insights.services import transcription_run
from insights.summaries import builtin_summary
from tests.accounts.factories import issue_scored_data_key
from tests.insights.conftest import stored, wav_of

pytestmark = pytest.mark.django_db


@pytest.fixture
def engine_runs(monkeypatch) -> list[int]:
    """How many channels the engine was asked to read (it reads them for real)."""
    runs: list[int] = []
    transcribe = engines.FasterWhisperEngine.transcribe

    def counted(self, channel_audio, *, context=None, language="en"):
        runs.append(len(channel_audio))
        return transcribe(self, channel_audio, context=context)

    monkeypatch.setattr(engines.FasterWhisperEngine, "transcribe", counted)
    return runs


@pytest.mark.parametrize(
    ("wav", "reason", "read"),
    [
        (wav_of(0), "the recording holds no audio", 0),
        (wav_of(0.4, agent=0.3, lead=0.3), "the recording is too short (0.4 s)", 0),
        (wav_of(5), "the lead's side is silent", 0),
        (wav_of(5, agent=0.3), "the lead's side is silent", 0),
        # A tone is sound but no speech: the engine reads both sides and hears no words.
        (wav_of(4, agent=0.3, lead=0.3), "no words were heard on the lead's side", 2),
    ],
    ids=["header-only", "too-short", "silence", "agent-alone", "no-words"],
)
def test_a_recording_with_no_speech_on_the_leads_side_is_no_conversation(
    whisper, call, client, caplog, engine_runs, wav, reason, read
):
    stored(call, seconds=0, wav=wav)
    Transcription.objects.create(call=call)
    key = issue_scored_data_key(call.account)

    with caplog.at_level(logging.INFO):
        job = transcription_run(call_id=call.pk)

    assert job is not None
    job.refresh_from_db()
    assert (job.status, job.reason, job.tries) == (
        TranscriptionStatus.NO_CONVERSATION,
        reason,
        1,
    )
    assert len(engine_runs) == read
    summary = f"No conversation: {reason}."
    call.refresh_from_db()
    assert (call.transcription, call.transcript_turns, call.summary) == (
        "",
        [],
        summary,
    )
    record = client.get("/api/scoreddata", {"apikey": key, "callId": call.pk}).json()
    assert (record["callTranscription"], record["callSummary"]) == ("", summary)
    assert "spoke with" not in record["callSummary"]
    lines = [
        r
        for r in caplog.records
        if getattr(r, "event", "").startswith("transcription.")
    ]
    assert [(r.event, r.event_fields["reason"]) for r in lines] == [
        ("transcription.no_conversation", reason)
    ]


def test_the_builtin_summary_of_turns_without_the_lead_tells_no_story(call):
    agent_alone = [{"side": "agent", "start": 0, "end": 2, "text": "Hello? Sam?"}]
    assert builtin_summary(call=call, turns=agent_alone) == (
        "No conversation: nothing was heard from the lead."
    )
    assert builtin_summary(call=call, turns=[]) == (
        "No conversation: nothing was heard from the lead."
    )
