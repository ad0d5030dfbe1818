"""The test harness stops a process as a supervisor does: SIGTERM, then after a grace
SIGKILL for the whole family, a respawned command's session included."""

import os
import re
import sys

import pytest

from tests import processes
from tests.processes import Process, wait_for
from tests.test_respawn import gone

pytestmark = pytest.mark.slow


def test_a_process_that_ignores_sigterm_is_killed_with_its_family_and_reported(
    tmp_path, monkeypatch
):
    monkeypatch.setattr(processes, "STOP_GRACE", 1.0)
    # respawn passes SIGTERM to its command alone; the shell ignores it, and its sleep
    # sits in the command's own session, out of reach of a signal to the wrapper's group.
    command = [
        sys.executable,
        "-m",
        "config.respawn",
        "sh",
        "-c",
        'trap "" TERM; echo "sleeping $$"; sleep 300; echo done',
    ]
    process = Process(command, dict(os.environ), tmp_path / "stubborn.log")
    # The shell's own line, with its pid (the command line respawn may log says
    # "sleeping $$": a look at "sleeping" alone could come before the shell ran).
    wait_for(
        lambda: re.search(r"sleeping (\d+)", process.log.read_text()) is not None,
        timeout=30,
        what="the command",
        process=process,
    )
    started = re.search(r"sleeping (\d+)", process.log.read_text())
    assert started is not None
    shell = int(started[1])
    family = processes._descendants(process.handle.pid)
    assert shell in family
    assert len(family) == 2  # the shell and its sleep

    with pytest.warns(
        UserWarning, match="still running 1 s after SIGTERM; killed"
    ) as said:
        process.stop()

    assert process.handle.returncode is not None
    wait_for(
        lambda: all(gone(pid) for pid in family), timeout=10, what="the family to die"
    )
    assert "sleeping" in str(said[0].message)  # the log's tail, for whoever reads it


def test_a_process_that_stops_on_sigterm_is_not_reported(tmp_path, recwarn):
    process = Process(["sleep", "300"], dict(os.environ), tmp_path / "sleep.log")
    process.stop()
    assert process.handle.returncode == -15
    assert not [w for w in recwarn if "after SIGTERM" in str(w.message)]
