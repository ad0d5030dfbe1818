"""Long jobs that give their work back when their worker stops, instead of holding it up.

A Celery worker asked to stop (SIGTERM, Ctrl-C: a warm shutdown) waits for the tasks it is
running. A transcription runs for a minute or more, so one Ctrl-C on ``make run`` waited
for it, and a supervisor's grace period ran out and killed the worker. A task declared
with ``interrupt_on_shutdown=True`` is told instead: when the worker starts its warm
shutdown (``worker_shutting_down``, in the main process) each pool process running such a
task gets ``STOP_SIGNAL``; inside an ``interruptible()`` block that raises
``WorkerStopping`` at once (a block entered later raises it on entry). The task then
hands its work back (its claim released, the try not counted) and hands it over again
before its own message is acknowledged (late), or leaves it to its sweep when the broker
is down: the next worker runs it, and nothing is lost. Outside such blocks (writing an
outcome, in a transaction) the signal changes nothing.
"""

from __future__ import annotations

import contextlib
import os
import signal
from collections.abc import Iterator
from types import FrameType
from typing import Any

STOP_SIGNAL = signal.SIGUSR2

_stopping = False
_depth = 0


class WorkerStopping(BaseException):
    """The worker is stopping: hand the work back. A ``BaseException``, so that the
    ``except Exception`` around an engine never takes it for the engine's failure."""


def install_stop_handler() -> None:
    """In a worker's pool process, once started: ``STOP_SIGNAL`` interrupts the job."""
    signal.signal(STOP_SIGNAL, _on_stop)


def _on_stop(_signum: int, _frame: FrameType | None) -> None:
    global _stopping
    _stopping = True
    if _depth:
        raise WorkerStopping


@contextlib.contextmanager
def interruptible() -> Iterator[None]:
    """A block the worker's stop may end with ``WorkerStopping`` (nothing in it to undo
    but what the caller hands back)."""
    global _depth
    if _stopping:
        raise WorkerStopping
    _depth += 1
    try:
        yield
    finally:
        _depth -= 1


def interrupt_running_tasks(**_kwargs: Any) -> None:
    """In the worker's main process, as it starts stopping: signal the pool processes
    that run a task declared ``interrupt_on_shutdown``."""
    from celery.worker import state

    for request in tuple(state.active_requests):
        if getattr(request.task, "interrupt_on_shutdown", False) and request.worker_pid:
            with contextlib.suppress(ProcessLookupError):
                os.kill(request.worker_pid, STOP_SIGNAL)
