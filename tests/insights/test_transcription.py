"""Speech-to-text end to end: a call's real spoken recording (espeak-ng) is transcribed by
faster-whisper (the shipped tiny.en, CPU, deterministic) on the worker's path, and the
integrator reads the transcript and the summary through GET /api/scoreddata."""

import json
import logging
import re

import pytest
from lxml import etree

from calls.models import Call, Recording
from calls.signals import recording_stored
from insights import engines
from insights.models import Transcription, TranscriptionStatus
from insights.services import _context, insights_sweep, transcription_run
from insights.tasks import transcription_task
from tests.accounts.factories import issue_scored_data_key
from tests.insights.conftest import record
from webhooks.models import WebhookEvent
from webhooks.services import webhook_endpoint_create

pytestmark = pytest.mark.django_db

LINE = re.compile(
    r"^(?P<speaker>.+) \((?P<start>\d\d:\d\d)-(?P<end>\d\d:\d\d)\): (?P<text>.+)$"
)


@pytest.fixture
def published(monkeypatch):
    """The transcriptions handed to the broker (call ids), instead of publishing them."""
    sent: list[int] = []
    monkeypatch.setattr(
        transcription_task,
        "apply_async",
        lambda *, kwargs, **options: sent.append(kwargs["call_id"]),
    )
    return sent


def stored(call, capture) -> None:
    """The recording is stored: the other helper's code sends this in its transaction."""
    record(call)
    with capture(execute=True):
        recording_stored.send(sender=Recording, call_id=call.pk)


def test_a_stored_recording_is_transcribed_and_read_through_the_scored_data_api(
    whisper, call, client, published, settings, django_capture_on_commit_callbacks
):
    settings.WEBHOOK_ALLOWED_ADDRESSES = ["127.0.0.1"]
    webhook_endpoint_create(
        organization=call.account.organization, url="https://127.0.0.1:9/hook"
    )
    key = issue_scored_data_key(call.account)
    status, ended_at = call.status, call.ended_at

    stored(call, django_capture_on_commit_callbacks)
    job = Transcription.objects.get(call=call)
    assert job.status == TranscriptionStatus.PENDING
    assert job.dispatched_at
    assert published == [
        call.pk
    ]  # handed over once the recording's transaction committed

    transcription_task(call_id=call.pk)  # the worker, in this process

    job.refresh_from_db()
    assert job.status == TranscriptionStatus.DONE
    assert job.tries == 1
    assert job.engine == "faster_whisper"
    assert job.model.endswith("model")
    assert job.audio_seconds == pytest.approx(75, abs=0.1)
    assert job.took_seconds is not None  # recorded; how long is for make bench to say
    call.refresh_from_db()
    assert (call.status, call.ended_at) == (status, ended_at)

    response = client.get("/api/scoreddata", {"apikey": key, "callId": call.pk})
    assert response.status_code == 200
    record_ = response.json()
    lines = record_["callTranscription"].split("\n")
    assert len(lines) >= 6
    parsed = [m for line in lines if (m := LINE.match(line))]
    assert len(parsed) == len(lines), lines
    assert {m["speaker"] for m in parsed} == {"Alex Kim", "Sam Rivera"}
    starts = [m["start"] for m in parsed]
    assert starts == sorted(starts)
    assert parsed[0]["speaker"] == "Alex Kim"  # the agent opens the call
    text = record_["callTranscription"]
    assert "Sam" in text
    assert "Toyota" in text
    summary = record_["callSummary"]
    sentences = re.findall(r"[^.!?]+[.!?]", summary)
    assert 2 <= len(sentences) <= 4, summary
    assert summary.startswith("Sam Rivera spoke with Alex Kim"), summary
    # The vehicle named is the one heard on the call (the engine may mishear the model),
    # never the lead form's.
    about = re.match(r"[^.]* about the ([^,.]+)", summary)
    assert about is None or all(word in text for word in about.group(1).split())

    xml = client.get(
        "/api/scoreddata", {"apikey": key, "callId": call.pk, "returnType": "xml"}
    )
    root = etree.fromstring(xml.content)
    assert root.findtext("callInfo/callTranscription") == text
    assert root.findtext("callInfo/callSummary") == summary

    event = json.loads(WebhookEvent.objects.get(type="transcription_ready").body)
    assert event["transcription"] == {"text": text, "summary": summary}
    assert event["call"]["id"] == call.pk

    # Delivered twice, run once.
    assert transcription_run(call_id=call.pk) is None


def test_the_same_audio_gives_the_same_transcript(whisper, call):
    record(call)
    Transcription.objects.create(call=call)
    transcription_run(call_id=call.pk)
    first = Call.objects.get(pk=call.pk).transcription
    again = engines.turns_from(*_both(call))
    assert first
    assert [t["text"] for t in again] == [
        t["text"] for t in Call.objects.get(pk=call.pk).transcript_turns
    ]


def _both(call):
    with call.recording.audio.open("rb") as audio:
        channels = engines.read_wav(audio.read())
    engine = engines.engine_for_settings()
    assert engine is not None
    assert channels.agent is not None  # the fixture's recording is in stereo
    context = _context(call.pk)  # what the service tells the engine
    return (
        engine.transcribe(channels.agent, context=context),
        engine.transcribe(channels.lead, context=context),
    )


def test_a_failing_engine_fails_after_max_tries_and_leaves_the_call_alone(
    whisper, call, monkeypatch, published, caplog, django_capture_on_commit_callbacks
):
    record(call)
    Transcription.objects.create(call=call)
    status, ended_at = call.status, call.ended_at

    def broken(self, channel_audio, *, context=None, language="en"):
        raise engines.TransientError("the GPU is busy")

    monkeypatch.setattr(engines.FasterWhisperEngine, "transcribe", broken)
    with caplog.at_level(logging.WARNING):
        for attempt in (1, 2):
            with django_capture_on_commit_callbacks(execute=True):
                job = transcription_run(call_id=call.pk)
                assert job is not None
            assert (job.status, job.tries) == (TranscriptionStatus.PENDING, attempt)
            assert job.reason == "the GPU is busy"
        assert published == [call.pk, call.pk]  # retried later, with a backoff
        with django_capture_on_commit_callbacks(execute=True):
            job = transcription_run(call_id=call.pk)
            assert job is not None

    job.refresh_from_db()
    assert job.status == TranscriptionStatus.FAILED
    assert job.tries == 3
    assert job.reason == "gave up after 3 tries: the GPU is busy"
    assert published == [call.pk, call.pk]
    failures = [
        r for r in caplog.records if getattr(r, "event", "") == "transcription.failed"
    ]
    assert [r.levelno for r in failures] == [logging.ERROR]
    assert failures[0].event_fields["call_id"] == call.pk
    call.refresh_from_db()
    assert (call.status, call.ended_at, call.transcription) == (status, ended_at, "")
    assert transcription_run(call_id=call.pk) is None  # failed is left alone


def test_unreadable_audio_fails_at_once(whisper, call, caplog):
    record(call, wav=b"RIFF not a wav")
    Transcription.objects.create(call=call)
    with caplog.at_level(logging.ERROR):
        job = transcription_run(call_id=call.pk)
        assert job is not None
    assert job.status == TranscriptionStatus.FAILED
    assert job.tries == 1
    assert job.reason.startswith("unreadable audio")
    assert any(
        getattr(r, "event", "") == "transcription.failed" for r in caplog.records
    )


def test_the_sweep_hands_over_a_lost_pending_transcription(
    whisper, call, published, django_capture_on_commit_callbacks
):
    from datetime import timedelta

    from django.utils import timezone

    record(call)
    handed = timezone.now() - timedelta(minutes=30)
    job = Transcription.objects.create(call=call, dispatched_at=handed)
    assert insights_sweep() == {"pending": 0, "created": 0}  # waiting in a queue
    Transcription.objects.filter(pk=job.pk).update(
        dispatched_at=timezone.now() - timedelta(hours=2)
    )  # past the broker's visibility timeout: lost
    assert insights_sweep() == {"pending": 1, "created": 0}
    assert published == [call.pk]
    assert insights_sweep() == {"pending": 0, "created": 0}  # once

    transcription_task(call_id=call.pk)
    job.refresh_from_db()
    assert job.status == TranscriptionStatus.DONE


def test_the_sweep_makes_the_missing_transcription_of_a_stored_recording(
    whisper, call, published
):
    record(call)
    assert insights_sweep() == {"pending": 0, "created": 1}
    assert Transcription.objects.get(call=call).status == TranscriptionStatus.PENDING
    assert published == [call.pk]


def test_with_no_backend_a_stored_recording_is_skipped(
    settings, call, published, django_capture_on_commit_callbacks
):
    settings.TRANSCRIPTION_BACKEND = "none"
    stored(call, django_capture_on_commit_callbacks)
    job = Transcription.objects.get(call=call)
    assert job.status == TranscriptionStatus.SKIPPED
    assert published == []
    assert insights_sweep() == {"pending": 0, "created": 0}


def test_the_engine_runs_outside_any_transaction_under_a_lease(
    whisper, call, monkeypatch
):
    """A transcription takes seconds to minutes: no transaction (nor SQLite's write lock)
    is held meanwhile. A second delivery while it runs leaves it alone; one after the lease
    ran out (the first worker died) runs it, and the first one's late outcome is ignored."""
    from datetime import timedelta

    from django.db import connection
    from django.utils import timezone

    record(call)
    Transcription.objects.create(call=call)
    seen = []
    # The test runs in a transaction of its own; the service's would be savepoints in it.
    outer = len(connection.savepoint_ids)

    def listening(self, channel_audio, *, context=None, language="en"):
        seen.append(len(connection.savepoint_ids) - outer)
        # Delivered again meanwhile: the claim holds.
        assert transcription_run(call_id=call.pk) is None
        return [engines.Segment(0.5, 2.0, "Hello there.")]

    monkeypatch.setattr(engines.FasterWhisperEngine, "transcribe", listening)
    job = transcription_run(call_id=call.pk)
    assert job is not None
    assert job.status == TranscriptionStatus.DONE
    assert job.tries == 1
    assert seen
    assert not any(seen)

    # A worker that died mid-run: its claim's lease is over; another takes it over.
    other = Call.objects.get(pk=call.pk)
    Transcription.objects.filter(call=other).update(
        status=TranscriptionStatus.PENDING,
        claimed_at=timezone.now() - timedelta(minutes=5),
        claimed_until=timezone.now() - timedelta(seconds=1),
    )
    again = transcription_run(call_id=call.pk)
    assert again is not None
    assert again.status == TranscriptionStatus.DONE
    assert again.tries == 2
