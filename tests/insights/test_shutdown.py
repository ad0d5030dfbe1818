"""A transcription never holds up its worker's stop (Ctrl-C on `make run`, a deploy): the
warm shutdown signals the pool process running it, the run hands its claim back without
counting a try, and the transcription is handed over again before the task's own
message is acknowledged (late): the next worker runs it. Outside the engine's block the signal waits for the next one."""

from __future__ import annotations

import os
import signal
import time
from types import SimpleNamespace

import pytest

from core import shutdown
from insights import engines
from insights.models import Transcription, TranscriptionStatus
from insights.services import transcription_run
from insights.tasks import transcription_task
from tests.insights.conftest import record

pytestmark = pytest.mark.django_db


@pytest.fixture
def pool_process(monkeypatch):
    """This process as a worker's pool process: the stop handler installed, as
    ``worker_process_init`` installs it; put back afterwards."""
    before = signal.getsignal(shutdown.STOP_SIGNAL)
    monkeypatch.setattr(shutdown, "_stopping", False)
    monkeypatch.setattr(shutdown, "_depth", 0)
    shutdown.install_stop_handler()
    yield
    signal.signal(shutdown.STOP_SIGNAL, before)


def test_a_stopping_worker_hands_the_running_transcription_back(
    whisper, call, monkeypatch, pool_process
):
    record(call)
    Transcription.objects.create(call=call)
    runs = []

    def stopped_midway(self, channel_audio, *, context=None, language="en"):
        runs.append(1)
        if len(runs) == 1:  # the worker's main process starts its warm shutdown
            os.kill(os.getpid(), shutdown.STOP_SIGNAL)
            time.sleep(30)  # an engine at work: the signal ends it
            raise AssertionError("the stop signal did not interrupt the engine")
        return [engines.Segment(0.5, 2.0, "Hello there.")]

    monkeypatch.setattr(engines.FasterWhisperEngine, "transcribe", stopped_midway)
    sent: list[int] = []
    monkeypatch.setattr(
        transcription_task,
        "apply_async",
        lambda *, kwargs, **options: sent.append(kwargs["call_id"]),
    )
    transcription_task(call_id=call.pk)  # ends: its worker can stop

    assert sent == [call.pk]  # handed over again, before this delivery is acknowledged

    job = Transcription.objects.get(call=call)
    assert job.status == TranscriptionStatus.PENDING
    assert job.tries == 0  # the interrupted run is not a try
    assert (job.claimed_at, job.claimed_until) == (None, None)
    assert job.dispatched_at  # marked: the sweep leaves it to the message sent

    # Delivered again, to a worker that is not stopping: it runs at once.
    monkeypatch.setattr(shutdown, "_stopping", False)
    again = transcription_run(call_id=call.pk)
    assert again is not None
    assert (again.status, again.tries) == (TranscriptionStatus.DONE, 1)


def test_the_stop_signal_outside_the_engine_block_ends_the_next_one(pool_process):
    os.kill(os.getpid(), shutdown.STOP_SIGNAL)  # writing an outcome: carries on
    time.sleep(0.01)
    with pytest.raises(shutdown.WorkerStopping), shutdown.interruptible():
        raise AssertionError("entered after the worker began stopping")


def test_the_warm_shutdown_signals_only_processes_running_interruptible_tasks(
    monkeypatch,
):
    from celery.worker import state

    sent = []
    monkeypatch.setattr(shutdown.os, "kill", lambda pid, sig: sent.append((pid, sig)))
    running = [
        SimpleNamespace(task=transcription_task, worker_pid=101),
        SimpleNamespace(task=SimpleNamespace(name="calls.setup"), worker_pid=102),
        SimpleNamespace(task=transcription_task, worker_pid=None),  # not started yet
    ]
    monkeypatch.setattr(state, "active_requests", running)

    shutdown.interrupt_running_tasks()

    assert sent == [(101, shutdown.STOP_SIGNAL)]
