"""A transcription worker that cannot transcribe fails at start, not on the first call.

Before a worker consuming the ``transcription`` queue starts its pool, the configured
engine transcribes one second of audio in a process of its own (``manage.py
transcription_selftest``): a model that is missing, a GPU that is not there or a library
that does not load stops the worker with the reason, and its supervisor
(``config.respawn``, systemd) starts it again after a pause and says so each time, while
the recordings wait, pending, for a worker that can read them. In its own process because
the engine's threads must not be started in the worker's main process, which forks its
pool afterwards. A remote engine's server is not called (a server down is transient).
``TRANSCRIPTION_SELF_TEST=0`` turns it off.
"""

from __future__ import annotations

import logging
import subprocess
import sys
import time
from typing import Any

import numpy as np
from celery import signals
from django.conf import settings

from core.logging import log_event
from insights.engines import RATE, engine_for_settings
from insights.remote import RemoteEngine

log = logging.getLogger(__name__)

QUEUE = "transcription"
# Loading a large model from a slow disk, or onto a GPU, takes a while; more is a hang.
SELF_TEST_TIMEOUT = 600


def engine_self_test() -> str:
    """Load the configured engine and transcribe one second of audio (a 440 Hz tone): what
    it was, or "" when no engine is configured. Raises what the engine raises."""
    engine = engine_for_settings()
    if engine is None:
        return ""
    if isinstance(engine, RemoteEngine):
        # A server is not called at start: one that is down now is tried again by each
        # transcription (a transient error), and its address is checked at start-up
        # (providers.E002).
        return f"remote engine at {engine.url}: not called at start"
    second = np.arange(RATE, dtype=np.float32) / RATE
    started = time.monotonic()
    engine.transcribe((0.1 * np.sin(2 * np.pi * 440 * second)).astype(np.float32))
    return (
        f"{engine.name} engine, model {engine.model}, "
        f"read a second of audio in {time.monotonic() - started:.1f} s"
    )


def _consumes_transcription(worker: Any) -> bool:
    queues = getattr(getattr(worker.app, "amqp", None), "queues", None)
    consumed = getattr(queues, "consume_from", None) or {}
    return QUEUE in consumed


@signals.worker_init.connect
def _on_worker_init(sender: Any = None, **kwargs: Any) -> None:
    if (
        sender is None
        or not settings.TRANSCRIPTION_SELF_TEST
        or not _consumes_transcription(sender)
    ):
        return
    command = [sys.executable, "-m", "django", "transcription_selftest"]
    command += ["--settings", settings.SETTINGS_MODULE]
    try:
        done = subprocess.run(  # noqa: S603 (our own command line)
            command, capture_output=True, text=True, timeout=SELF_TEST_TIMEOUT
        )
    except subprocess.TimeoutExpired:
        reason = f"the engine did not read a second of audio in {SELF_TEST_TIMEOUT} s"
    else:
        if done.returncode == 0:
            log_event(log, "transcription.self_test", result=done.stdout.strip())
            return
        said = (done.stderr.strip() or done.stdout.strip()).splitlines()
        reason = said[-1] if said else f"exit status {done.returncode}"
    log_event(
        log, "transcription.self_test_failed", level=logging.CRITICAL, reason=reason
    )
    raise SystemExit(f"transcription worker: the engine cannot transcribe: {reason}")
