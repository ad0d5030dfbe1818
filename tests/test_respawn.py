"""The Procfile's workers run under ``config.respawn``: a worker that dies is started again,
and one signal still stops everything cleanly."""

import os
import re
import signal
import sys

import pytest

from tests.processes import Process, service_env, wait_for

pytestmark = [pytest.mark.slow, pytest.mark.django_db(transaction=True)]


def started_pids(process):
    return [
        int(pid)
        for pid in re.findall(r"respawn: started pid (\d+)", process.log.read_text())
    ]


def alive(pid):
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    return True


def gone(pid):
    """Dead: no such process, or a zombie waiting for whoever adopted it to reap it."""
    try:
        stat = open(f"/proc/{pid}/stat").read()  # noqa: SIM115
    except OSError:
        return True
    return stat[stat.rindex(")") + 2] == "Z"


def test_a_killed_worker_is_started_again_and_a_signal_stops_it_for_good(tmp_path):
    command = [
        sys.executable,
        "-m",
        "config.respawn",
        "celery",
        "-A",
        "config",
        "worker",
        "--concurrency=1",
        "--without-gossip",
        "--without-mingle",
        "-n",
        f"respawned-{os.getpid()}@%h",
        "--loglevel=INFO",
    ]
    env = service_env()
    env["PATH"] = f"{os.path.dirname(sys.executable)}:{env['PATH']}"
    supervisor = Process(command, env, tmp_path / "respawn.log")
    try:
        wait_for(
            lambda: supervisor.log.read_text().count(" ready.") == 1,
            timeout=60,
            what="the worker",
            process=supervisor,
        )
        (first,) = started_pids(supervisor)

        os.kill(first, signal.SIGKILL)

        wait_for(
            lambda: supervisor.log.read_text().count(" ready.") == 2,
            timeout=60,
            what="the worker started again",
            process=supervisor,
        )
        first_again, second = started_pids(supervisor)
        assert first_again == first
        assert second != first
        assert alive(second)
        assert "exited with -9" in supervisor.log.read_text()

        os.kill(supervisor.handle.pid, signal.SIGTERM)
        supervisor.handle.wait(timeout=60)
    finally:
        supervisor.kill()

    assert supervisor.handle.returncode == 0
    assert not alive(second)
    assert supervisor.log.read_text().count(" ready.") == 2  # not started a third time


def test_the_command_dies_with_the_wrapper_even_when_it_is_killed(tmp_path):
    """A Procfile manager whose grace period ran out SIGKILLs the wrapper: the command, in a
    session of its own, must not outlive it (it would hold the manager's output pipe)."""
    command = [sys.executable, "-m", "config.respawn", "sleep", "300"]
    supervisor = Process(command, dict(os.environ), tmp_path / "respawn.log")
    try:
        wait_for(
            lambda: started_pids(supervisor),
            timeout=30,
            what="the command",
            process=supervisor,
        )
        (child,) = started_pids(supervisor)
        assert alive(child)

        os.kill(supervisor.handle.pid, signal.SIGKILL)
        supervisor.handle.wait(timeout=30)

        wait_for(lambda: gone(child), timeout=30, what="the command to die")
    finally:
        supervisor.kill()
