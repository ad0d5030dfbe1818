"""Run a command and start it again whenever it dies: ``python -m config.respawn CMD ...``.

The Procfile runs the Celery worker under it. A Procfile manager (honcho, foreman) stops
every process once one exits, and a worker that dies (killed, out of memory, a bug in a
library) would otherwise leave the service with no one making calls. In production run
the worker under systemd (``Restart=always``) or the platform's supervisor instead, which
do the same (docs/operations.md, "Processes").

The command runs in a process group of its own, and the whole group is killed once it
exits, so nothing it started (pool processes, an embedded scheduler) outlives it and
runs twice beside its successor. SIGTERM and SIGINT are passed on to the command alone
(it stops its own children, as Celery's main process stops its pool) and end the loop.
"""

from __future__ import annotations

import contextlib
import ctypes
import os
import signal
import subprocess
import sys
import time
from types import FrameType

# A command that dies again within this many seconds waits longer before each restart,
# up to MAX_PAUSE, so a crash loop does not spin.
STEADY_AFTER = 30.0
FIRST_PAUSE = 1.0
MAX_PAUSE = 30.0
# linux/prctl.h
PR_SET_PDEATHSIG = 1


def _say(text: str) -> None:
    print(f"respawn: {text}", file=sys.stderr, flush=True)


def _die_with_parent() -> None:
    """In the child: be killed when this wrapper dies, even by SIGKILL (a Procfile manager
    whose grace period ran out). The child's own session puts it out of reach of the
    manager's signals, so without this it would outlive the wrapper, still holding the
    manager's output pipe, and the manager would never see the process stop."""
    libc = ctypes.CDLL(None, use_errno=True)
    libc.prctl(PR_SET_PDEATHSIG, signal.SIGKILL)


def main(command: list[str]) -> int:
    stopping: list[int] = []
    child: subprocess.Popen[bytes] | None = None

    def stop(signum: int, _frame: FrameType | None) -> None:
        stopping.append(signum)
        if child is not None and child.poll() is None:
            # The child alone: a Celery worker then stops its pool in order, where a
            # signal to the whole group would reach the pool processes mid-shutdown.
            with contextlib.suppress(ProcessLookupError):
                child.send_signal(signum)

    signal.signal(signal.SIGTERM, stop)
    signal.signal(signal.SIGINT, stop)
    pause = FIRST_PAUSE
    while True:
        started = time.monotonic()
        child = subprocess.Popen(  # noqa: S603 (our own command line)
            command, start_new_session=True, preexec_fn=_die_with_parent
        )
        _say(f"started pid {child.pid}: {' '.join(command)}")
        code = child.wait()
        with contextlib.suppress(ProcessLookupError):
            os.killpg(child.pid, signal.SIGKILL)  # whatever it left behind
        if stopping:
            return code if code >= 0 else 0
        pause = (
            FIRST_PAUSE
            if time.monotonic() - started > STEADY_AFTER
            else min(pause * 2, MAX_PAUSE)
        )
        _say(f"pid {child.pid} exited with {code}; starting it again in {pause:.0f} s")
        deadline = time.monotonic() + pause
        while time.monotonic() < deadline:  # in steps: a stop signal ends the wait
            if stopping:
                return 0
            time.sleep(0.1)


if __name__ == "__main__":
    if len(sys.argv) < 2:
        sys.exit("usage: python -m config.respawn COMMAND [ARG ...]")
    sys.exit(main(sys.argv[1:]))
