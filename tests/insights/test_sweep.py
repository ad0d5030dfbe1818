"""Transcriptions: every hand-over marked, every retry bounded. The sweep sends a pending
transcription again only when its hand-over may have been lost, never because the worker
is stopped and the queue waits; a run that dies inside the engine counts as a try, and once
the maximum is reached the claim is refused and the transcription fails.

Counted in the test's real broker (Redis). Runs on PostgreSQL and, as the embedded default
does, on SQLite: ``DATABASE_URL=sqlite:///var/test-sqlite/db.sqlite3
TEST_DATABASE_NAME=var/test-sqlite/test.sqlite3 pytest --create-db`` on this module."""

from __future__ import annotations

import logging
from datetime import datetime, timedelta

import pytest
from django.utils import timezone

from calls import workers
from calls.models import Recording, WorkerBeat
from calls.signals import recording_stored
from core import handover
from core.models import SetAside
from insights import engines
from insights.models import Transcription, TranscriptionStatus
from insights.services import insights_sweep, transcription_run
from tests.calls.broker_queue import Message, emptied, taken, transcription_queue
from tests.insights.conftest import stored, wav_of
from tests.scoring.factories import CallFactory

pytestmark = pytest.mark.django_db
__all__ = ["transcription_queue"]  # the fixture, used by name

TRANSCRIBE = "insights.tasks.transcription_task"
VISIBILITY = timedelta(seconds=3600)  # the test settings' visibility timeout
NOTHING = {"pending": 0, "created": 0}


class Clock:
    """The service's clock (``django.utils.timezone.now``), moved on by the test."""

    def __init__(self) -> None:
        self.now = timezone.now()

    def __call__(self) -> datetime:
        return self.now

    def advance(self, **delta: float) -> datetime:
        self.now += timedelta(**delta)
        return self.now


@pytest.fixture
def clock(monkeypatch) -> Clock:
    clock = Clock()
    monkeypatch.setattr(timezone, "now", clock)
    return clock


@pytest.fixture(autouse=True)
def visibility(settings):
    settings.CELERY_BROKER_TRANSPORT_OPTIONS = {
        **settings.CELERY_BROKER_TRANSPORT_OPTIONS,
        "visibility_timeout": int(VISIBILITY.total_seconds()),
    }


def requested(capture, *seconds: float) -> list[int]:
    """Calls whose recordings (this long) are stored, their transcriptions requested and
    handed over as the media worker does (``recording_stored``, published on commit)."""
    calls = [CallFactory() for _ in seconds]
    for call, length in zip(calls, seconds, strict=True):
        stored(call, seconds=length)
    with capture(execute=True):
        for call in calls:
            recording_stored.send(sender=Recording, call_id=call.pk)
    return [call.pk for call in calls]


def transcribe(call_id: int, soft: int) -> Message:
    return Message(TRANSCRIBE, {"call_id": call_id}, (soft + 30, soft))


def by_call(messages: list[Message]) -> list[Message]:
    return sorted(messages, key=lambda message: message.kwargs["call_id"])


def test_a_stopped_worker_leaves_one_task_per_pending_transcription_however_many_sweeps(
    whisper, transcription_queue, django_capture_on_commit_callbacks
):
    calls = requested(django_capture_on_commit_callbacks, 30, 75, 900)
    start = timezone.now()
    # Nothing consumes the queue for 59 minutes; the sweep runs every minute.
    for minute in range(1, 60):
        assert insights_sweep(now=start + timedelta(minutes=minute)) == NOTHING

    assert [m.kwargs["call_id"] for m in by_call(transcription_queue())] == calls
    # Each with time limits sized to its recording: 3 s a second, 120 s to 1800 s.
    assert by_call(transcription_queue()) == [
        transcribe(calls[0], 120),
        transcribe(calls[1], 225),
        transcribe(calls[2], 1800),
    ]


def test_a_hand_over_is_sent_again_once_after_a_new_broker_or_the_visibility_timeout(
    whisper, transcription_queue, django_capture_on_commit_callbacks
):
    start = timezone.now()
    workers.losses_take(now=start)  # the broker's server, noted by the calls sweep
    (call_id,) = requested(django_capture_on_commit_callbacks, 30)

    # The broker restarted empty, as a new server: sent again, once.
    emptied()
    WorkerBeat.objects.filter(name=workers.BROKER).update(token="a-server-gone")
    assert workers.losses_take(now=start + timedelta(seconds=10)) is True
    assert insights_sweep(now=start + timedelta(seconds=20)) == {
        "pending": 1,
        "created": 0,
    }
    for minute in range(1, 30):
        assert insights_sweep(now=start + timedelta(minutes=minute)) == NOTHING
    assert transcription_queue() == [transcribe(call_id, 120)]

    # No outcome a visibility timeout after the hand-over: lost; sent again, once.
    later = start + timedelta(seconds=20) + VISIBILITY + timedelta(seconds=1)
    assert insights_sweep(now=later) == {"pending": 1, "created": 0}
    assert insights_sweep(now=later + timedelta(minutes=1)) == NOTHING
    assert transcription_queue() == [transcribe(call_id, 120)] * 2


class Killed(BaseException):
    """The worker's process dies here (a library aborting it, the OOM killer): nothing
    after this point runs in it, no handler, no ``finally``."""


def test_a_worker_killed_inside_the_engine_fails_the_transcription_after_the_max_tries(
    whisper,
    clock,
    transcription_queue,
    monkeypatch,
    caplog,
    django_capture_on_commit_callbacks,
):
    call = CallFactory()
    stored(call, seconds=2.0, wav=wav_of(2.0, agent=0.3, lead=0.3))
    with django_capture_on_commit_callbacks(execute=True):
        recording_stored.send(sender=Recording, call_id=call.pk)
    runs = []

    def dies(self, channel_audio, *, context=None, language="en"):
        runs.append(clock.now)
        raise Killed

    monkeypatch.setattr(engines.FasterWhisperEngine, "transcribe", dies)
    # 2 s of audio: limits of 120 s (soft) and 150 s (hard); the lease 30 s more.
    lease = timedelta(seconds=180)
    for tries in (1, 2, 3):
        assert taken() == transcribe(call.pk, 120)  # a worker takes the task
        assert transcription_queue() == []
        claimed = clock.now
        with pytest.raises(Killed):
            transcription_run(call_id=call.pk)
        job = Transcription.objects.get(call=call)
        assert (job.status, job.tries, job.claimed_until) == (
            TranscriptionStatus.PENDING,
            tries,
            claimed + lease,
        )
        # While the lease holds, a delivery leaves it and the sweep sends nothing.
        for _ in range(5):
            assert insights_sweep(now=clock.advance(seconds=30)) == NOTHING
        assert transcription_run(call_id=call.pk) is None
        # The lease is over with no outcome: the run is gone; sent again, once.
        assert insights_sweep(now=clock.advance(seconds=31)) == {
            "pending": 1,
            "created": 0,
        }
        assert insights_sweep(now=clock.advance(seconds=10)) == NOTHING
        assert transcription_queue() == [transcribe(call.pk, 120)]

    assert taken() == transcribe(call.pk, 120)
    with caplog.at_level(logging.WARNING):
        assert transcription_run(call_id=call.pk) is None  # refused: the max is reached

    job.refresh_from_db()
    assert (job.status, job.tries, job.reason) == (
        TranscriptionStatus.FAILED,
        3,
        "gave up after 3 tries: its runs ended with no outcome (the worker stopped "
        "inside the engine)",
    )
    assert (job.claimed_at, job.claimed_until) == (None, None)
    failures = [
        r for r in caplog.records if getattr(r, "event", "") == "transcription.failed"
    ]
    assert [(r.levelno, r.event_fields["call_id"]) for r in failures] == [
        (logging.ERROR, call.pk)
    ]
    assert len(runs) == 3
    assert insights_sweep(now=clock.advance(hours=2)) == NOTHING
    assert transcription_queue() == []
    call.refresh_from_db()
    assert (call.transcription, call.summary) == ("", "")


def test_one_poisoned_transcription_does_not_stop_the_ten_others(
    whisper, transcription_queue, monkeypatch
):
    calls = [CallFactory() for _ in range(11)]
    for call in calls:
        stored(call, seconds=30)
    # Pending and never handed over (their publish failed): the sweep hands them over.
    Transcription.objects.bulk_create(
        [Transcription(call=call, dispatched_at=None) for call in calls]
    )
    poisoned = calls[0].pk  # the first the sweep meets
    hand_over = handover.hand_over

    def poisoning(task, *, kwargs, **options):
        if kwargs == {"call_id": poisoned}:
            raise ValueError("Ctl\x01char")
        return hand_over(task, kwargs=kwargs, **options)

    monkeypatch.setattr(handover, "hand_over", poisoning)
    assert insights_sweep() == {"pending": 10, "created": 0}

    assert by_call(transcription_queue()) == [
        transcribe(call.pk, 120) for call in calls[1:]
    ]
    aside = SetAside.objects.get()
    assert (aside.sweep, aside.item, aside.failures, aside.error) == (
        "transcriptions",
        str(poisoned),
        1,
        "ValueError: Ctl\x01char",
    )
    # Not handed over: left unmarked for the next sweep to try again.
    assert Transcription.objects.get(call_id=poisoned).dispatched_at is None
