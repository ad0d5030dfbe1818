"""The recordings sweep: a hand-over is marked and sent again only when it may have been
lost, never because the transcription worker is stopped and the queue waits; each item is
handled alone; media tasks carry time limits sized to their audio.

Counted in the test's real broker (Redis). Runs on PostgreSQL and, as the embedded default
does, on SQLite: ``DATABASE_URL=sqlite:///var/test-sqlite/db.sqlite3
TEST_DATABASE_NAME=var/test-sqlite/test.sqlite3 pytest --create-db`` on this module."""

from __future__ import annotations

from datetime import timedelta

import pytest
from django.db import transaction
from django.utils import timezone

from calls import media, services, workers
from calls.models import (
    AttemptOutcome,
    Call,
    CallAttempt,
    CallStatus,
    Leg,
    Recording,
    RecordingStatus,
    WorkerBeat,
)
from core.handover import breaker
from core.models import SetAside
from tests.accounts.factories import AccountFactory
from tests.calls.broker_queue import Message, emptied, transcription_queue

pytestmark = pytest.mark.django_db
__all__ = ["transcription_queue"]  # the fixture, used by name

STORE = "calls.tasks.recording_store_task"
VISIBILITY = timedelta(seconds=3600)  # the test settings' visibility timeout


@pytest.fixture(autouse=True)
def speech(settings, tmp_path):
    settings.MEDIA_ROOT = tmp_path / "media"
    settings.SIMULATOR_SPEECH = True
    settings.CELERY_BROKER_TRANSPORT_OPTIONS = {
        **settings.CELERY_BROKER_TRANSPORT_OPTIONS,
        "visibility_timeout": int(VISIBILITY.total_seconds()),
    }


@pytest.fixture
def start():
    """Now, once the service has seen its broker (a calls worker notes it as it starts)."""
    now = timezone.now()
    workers.losses_take(now=now)
    assert WorkerBeat.objects.filter(name=workers.BROKER).exists()
    return now


def answered_leg(
    seconds: int = 60, *, ended_ago: timedelta = timedelta()
) -> CallAttempt:
    ended = timezone.now() - ended_ago
    call = Call.objects.create(
        account=AccountFactory(),
        status=CallStatus.ANSWER,
        received_at=ended - timedelta(seconds=seconds + 20),
        phone="+13035550123",
        duration=seconds,
        ended_at=ended,
    )
    return CallAttempt.objects.create(
        call=call,
        leg=Leg.LEAD,
        number=call.phone,
        provider="simulator",
        outcome=AttemptOutcome.ANSWERED,
        answered_at=ended - timedelta(seconds=seconds),
        ended_at=ended,
        duration=seconds,
    )


def recorded(capture, *seconds: int) -> list[int]:
    """Answered calls whose recordings are made and handed over as the pipeline does
    (``recording_make``, published once its transaction commits). Returns the call ids."""
    legs = [answered_leg(length) for length in seconds]
    with capture(execute=True), transaction.atomic():
        for leg in legs:
            assert media.recording_make(attempt_id=leg.pk) is not None
    return [leg.call_id for leg in legs]


def by_call(messages: list[Message]) -> list[Message]:
    return sorted(messages, key=lambda message: message.kwargs["call_id"])


def store(call_id: int, seconds: int) -> Message:
    soft = max(120, 3 * seconds)
    return Message(STORE, {"call_id": call_id}, (soft + 30, soft))


def test_a_stopped_worker_leaves_one_task_per_pending_recording_however_many_sweeps_run(
    start, transcription_queue, django_capture_on_commit_callbacks
):
    calls = recorded(django_capture_on_commit_callbacks, 60, 75, 90)
    assert [m.kwargs["call_id"] for m in by_call(transcription_queue())] == calls
    first = list(
        Recording.objects.order_by("pk").values_list("dispatched_at", flat=True)
    )

    # Nothing consumes the queue for 59 minutes; the calls sweep runs every minute.
    for minute in range(1, 60):
        counts = services.calls_sweep(now=start + timedelta(minutes=minute))
        assert counts["recordings"] == 0

    assert [m.kwargs["call_id"] for m in by_call(transcription_queue())] == calls
    assert by_call(transcription_queue()) == [
        store(calls[0], 60),
        store(calls[1], 75),
        store(calls[2], 90),
    ]
    marks = Recording.objects.order_by("pk").values_list("dispatched_at", flat=True)
    assert list(marks) == first  # handed over once, when made
    assert all(first)


def test_a_hand_over_older_than_the_visibility_timeout_is_sent_again_once(
    start, transcription_queue, django_capture_on_commit_callbacks
):
    (call_id,) = recorded(django_capture_on_commit_callbacks, 60)
    later = start + VISIBILITY + timedelta(seconds=1)
    assert services.calls_sweep(now=later)["recordings"] == 1
    assert Recording.objects.get(call_id=call_id).dispatched_at == later
    for minute in range(1, 30):
        assert (
            services.calls_sweep(now=later + timedelta(minutes=minute))["recordings"]
            == 0
        )
    assert transcription_queue() == [store(call_id, 60), store(call_id, 60)]


def test_a_new_broker_server_has_every_pending_recording_sent_again_once(
    start, transcription_queue, django_capture_on_commit_callbacks
):
    calls = recorded(django_capture_on_commit_callbacks, 60, 75)
    # The broker restarted empty: a new server (its run id differs from the one noted).
    emptied()
    WorkerBeat.objects.filter(name=workers.BROKER).update(token="a-server-gone")
    for minute in range(1, 10):
        services.calls_sweep(now=start + timedelta(minutes=minute))
    assert by_call(transcription_queue()) == [
        store(calls[0], 60),
        store(calls[1], 75),
    ]


def test_a_hand_over_the_broker_refused_is_sent_by_the_next_sweep(
    start, transcription_queue, django_capture_on_commit_callbacks
):
    breaker.failed()  # the broker failed moments ago: publishing gives up at once
    (call_id,) = recorded(django_capture_on_commit_callbacks, 60)
    assert transcription_queue() == []
    assert Recording.objects.get(call_id=call_id).dispatched_at is None

    breaker.succeeded()
    assert services.calls_sweep(now=start + timedelta(seconds=10))["recordings"] == 1
    assert services.calls_sweep(now=start + timedelta(seconds=20))["recordings"] == 0
    assert transcription_queue() == [store(call_id, 60)]


def test_one_poisoned_recording_does_not_stop_the_ten_others(
    start, transcription_queue, monkeypatch
):
    legs = [answered_leg(60) for _ in range(11)]
    # Pending and never handed over (their publish failed): the sweep hands them over.
    Recording.objects.bulk_create(
        [Recording(call_id=leg.call_id, attempt=leg) for leg in legs]
    )
    poisoned = legs[0].call_id  # the first the sweep meets
    store_later = media._store_later

    def poisoning(call_id, *hand_over):
        if call_id == poisoned:
            raise ValueError("Ctl\x01char")
        store_later(call_id, *hand_over)

    monkeypatch.setattr(media, "_store_later", poisoning)
    assert media.recordings_sweep(now=start + timedelta(seconds=10)) == 10

    assert sorted(m.kwargs["call_id"] for m in transcription_queue()) == [
        leg.call_id for leg in legs[1:]
    ]
    aside = SetAside.objects.get()
    assert (aside.sweep, aside.item, aside.failures, aside.set_aside) == (
        "recordings",
        str(poisoned),
        1,
        False,
    )
    assert aside.error == "ValueError: Ctl\x01char"
    # Not handed over: left unmarked for the next sweep to try again.
    assert Recording.objects.get(call_id=poisoned).dispatched_at is None


def test_the_missing_recording_is_made_for_the_last_answered_lead_leg(
    start, transcription_queue, django_capture_on_commit_callbacks
):
    """The embedded default's SQLite has no DISTINCT ON: the sweep that makes missing
    recordings must run there too."""
    first = answered_leg(30, ended_ago=timedelta(seconds=60))
    redialed = timezone.now() - timedelta(seconds=30)
    last = CallAttempt.objects.create(
        call=first.call,
        leg=Leg.LEAD,
        number=first.number,
        provider="simulator",
        outcome=AttemptOutcome.ANSWERED,
        answered_at=redialed,
        ended_at=redialed + timedelta(seconds=30),
        duration=30,
    )
    with django_capture_on_commit_callbacks(execute=True):
        assert media.recordings_sweep(now=timezone.now()) == 1
    with django_capture_on_commit_callbacks(execute=True):
        assert media.recordings_sweep(now=timezone.now()) == 0
    recording = Recording.objects.get()
    assert (recording.call_id, recording.attempt_id, recording.status) == (
        first.call_id,
        last.pk,
        RecordingStatus.PENDING,
    )
    assert transcription_queue() == [store(first.call_id, 30)]


@pytest.mark.parametrize(
    ("seconds", "soft", "hard"),
    [(None, 120, 150), (10, 120, 150), (100, 300, 330), (7200, 1800, 1830)],
)
def test_media_time_limits_are_sized_to_the_audio_with_a_floor_and_a_cap(
    seconds, soft, hard
):
    assert media.media_time_limits(seconds) == {
        "soft_time_limit": soft,
        "time_limit": hard,
    }


def test_settings_of_the_same_names_size_the_media_time_limits(settings):
    settings.MEDIA_TIME_LIMIT_PER_AUDIO_SECOND = 0.5  # a GPU
    settings.MEDIA_TIME_LIMIT_FLOOR_SECONDS = 20
    settings.MEDIA_TIME_LIMIT_CAP_SECONDS = 600
    assert [media.media_time_limits(s)["soft_time_limit"] for s in (10, 101, 7200)] == [
        20,
        51,
        600,
    ]
