"""A transcription worker whose engine cannot transcribe fails at start with the reason,
before it takes a single recording; one whose engine works starts and says so."""

from __future__ import annotations

import subprocess
import sys

import pytest

from tests.processes import ROOT, service_env, start_worker, wait_for

pytestmark = [pytest.mark.slow, pytest.mark.django_db(transaction=True)]


def test_a_worker_whose_model_cannot_load_fails_at_start_with_the_reason(tmp_path):
    env = service_env(
        TRANSCRIPTION_BACKEND="faster_whisper",
        TRANSCRIPTION_MODEL=str(tmp_path / "no-such-model"),
        LOG_LEVEL="INFO",
    )
    worker = start_worker(tmp_path, env=env, queues="transcription")
    try:
        status = worker.handle.wait(timeout=120)
    finally:
        worker.kill()
    log = worker.log.read_text()
    assert status != 0
    assert "transcription.self_test_failed" in log
    assert "no-such-model" in log
    assert "could not be loaded" in log
    assert "ready." not in log  # never consumed a task


def test_a_worker_whose_engine_works_starts_after_checking_it(tmp_path):
    env = service_env(TRANSCRIPTION_BACKEND="faster_whisper", LOG_LEVEL="INFO")
    worker = start_worker(tmp_path, env=env, queues="transcription")
    try:
        wait_for(
            lambda: "ready." in worker.log.read_text(),
            timeout=120,
            what="the transcription worker to start",
            process=worker,
        )
        log = worker.log.read_text()
        assert "transcription.self_test" in log
        assert "read a second of audio" in log
    finally:
        worker.stop()


def test_a_worker_of_other_queues_does_not_check_the_engine(tmp_path):
    env = service_env(
        TRANSCRIPTION_BACKEND="faster_whisper",
        TRANSCRIPTION_MODEL=str(tmp_path / "no-such-model"),
        LOG_LEVEL="INFO",
    )
    worker = start_worker(tmp_path, env=env, queues="webhooks")
    try:
        wait_for(
            lambda: "ready." in worker.log.read_text(),
            timeout=120,
            what="the webhooks worker to start",
            process=worker,
        )
        assert "self_test" not in worker.log.read_text()
    finally:
        worker.stop()


def test_the_command_says_what_the_engine_is_or_why_it_cannot_transcribe(tmp_path):
    env = service_env(TRANSCRIPTION_BACKEND="faster_whisper")
    command = [sys.executable, "manage.py", "transcription_selftest"]
    ok = subprocess.run(command, cwd=ROOT, env=env, capture_output=True, text=True)
    assert ok.returncode == 0, ok.stderr
    assert "faster_whisper engine" in ok.stdout
    env["TRANSCRIPTION_MODEL"] = str(tmp_path / "missing")
    broken = subprocess.run(command, cwd=ROOT, env=env, capture_output=True, text=True)
    assert broken.returncode == 1
    assert "the engine cannot transcribe" in broken.stderr


def test_a_remote_engine_is_not_called_at_start(tmp_path):
    env = service_env(
        TRANSCRIPTION_BACKEND="remote", TRANSCRIPTION_REMOTE_URL="http://127.0.0.1:9"
    )
    command = [sys.executable, "manage.py", "transcription_selftest"]
    said = subprocess.run(command, cwd=ROOT, env=env, capture_output=True, text=True)
    assert said.returncode == 0, said.stderr
    assert "remote engine at http://127.0.0.1:9/v1/audio/transcriptions" in said.stdout
    assert "not called at start" in said.stdout
