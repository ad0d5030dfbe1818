"""`make run`'s processes (the Procfile under honcho, started by `make serve` exactly as
`make run` starts them) stop cleanly: one Ctrl-C or SIGTERM ends every process within a
bounded wait, with a few lines of output, no error and no crash."""

from __future__ import annotations

import contextlib
import json
import os
import re
import signal
import time
import urllib.error
import urllib.request
from pathlib import Path

import pytest

from tests.processes import (
    Process,
    free_port,
    procfile_commands,
    service_env,
    wait_for,
)

pytestmark = [pytest.mark.slow, pytest.mark.django_db]

CRASHES = ("Segmentation fault", "RecursionError", "Traceback")
OURS = ("make", "config.serve", "gunicorn", "celery")
# honcho as `make serve` runs it (config/serve.py: honcho with a longer stop wait).
HONCHO = "-m config.serve start"


def _stat(pid: int | str) -> list[str]:
    """The fields of /proc/PID/stat after the command name (state, ppid, ...); [] if gone."""
    try:
        stat = Path(f"/proc/{pid}/stat").read_text()
    except OSError:
        return []
    # The command name (2nd field) may hold spaces and parentheses: split after it.
    return stat[stat.rindex(")") + 2 :].split()


def ppid(pid: int) -> int:
    fields = _stat(pid)
    return int(fields[1]) if fields else 0


def alive(pid: int) -> bool:
    fields = _stat(pid)
    return bool(fields) and fields[0] != "Z"  # a zombie has exited


def descendants(pid: int) -> set[int]:
    children: dict[int, list[int]] = {}
    for entry in Path("/proc").iterdir():
        if entry.name.isdigit() and (fields := _stat(entry.name)):
            children.setdefault(int(fields[1]), []).append(int(entry.name))
    found, todo = set(), [pid]
    while todo:
        for child in children.get(todo.pop(), []):
            if child not in found:
                found.add(child)
                todo.append(child)
    return found


def cmdline(pid: int) -> str:
    try:
        return Path(f"/proc/{pid}/cmdline").read_bytes().replace(b"\0", b" ").decode()
    except OSError:
        return ""


def web_answers(port: int) -> bool:
    try:
        urllib.request.urlopen(f"http://127.0.0.1:{port}/api/nl", timeout=2)
    except urllib.error.HTTPError as answer:
        return answer.code == 404 and json.load(answer) == {
            "reason": "No POST data received. This endpoint expects POST data."
        }
    except OSError:
        return False
    return False


def kill_tree(pids: set[int]) -> None:
    """SIGKILL every process group of ``pids`` and of their descendants: honcho starts
    each Procfile process in a session of its own, which killing make's group misses."""
    groups = set()
    for pid in pids | {child for parent in pids for child in descendants(parent)}:
        if not any(name in cmdline(pid) for name in OURS):
            continue  # gone, and its number perhaps taken by another process since
        with contextlib.suppress(OSError):
            groups.add(os.getpgid(pid))
    for group in groups - {os.getpgid(0)}:
        with contextlib.suppress(OSError):
            os.killpg(group, signal.SIGKILL)


@pytest.fixture
def make_serve(tmp_path):
    """`make serve` on a free port, against this test's database and Redis db; whatever
    is left of it when the test ends (it failed) is killed, by process group."""
    port = free_port()
    env = service_env(CELERY_BEAT_SCHEDULE_FILE=str(tmp_path / "beat-schedule"))
    env.pop("MAKEFLAGS", None)
    env.pop("MAKELEVEL", None)
    process = Process(
        ["make", "--no-print-directory", "serve", f"PORT={port}"],
        env,
        tmp_path / "make-serve.log",
    )
    seen: set[int] = {process.handle.pid}
    yield process, port, seen
    kill_tree(seen)


@pytest.mark.parametrize(
    ("how", "sig"),
    [
        ("terminal", signal.SIGINT),  # Ctrl-C: the terminal signals make and honcho
        ("honcho", signal.SIGINT),
        ("honcho", signal.SIGTERM),  # a process supervisor stopping it
    ],
)
def test_one_signal_stops_every_process_cleanly(make_serve, how, sig):
    make, port, seen = make_serve
    workers = sum("celery" in c for c in procfile_commands().values())
    wait_for(lambda: web_answers(port), timeout=60, what="the web", process=make)
    wait_for(
        lambda: make.log.read_text().count(" ready.") >= workers,
        timeout=90,
        what="every worker",
        process=make,
    )
    processes = descendants(make.handle.pid)
    seen.update(processes)
    commands = " | ".join(cmdline(pid) for pid in processes)
    assert HONCHO in commands, commands
    assert "gunicorn" in commands, commands
    assert "celery -A config worker -B" in commands, commands
    # honcho forks a helper per Procfile line (same command line): take the parent.
    (honcho,) = [
        pid
        for pid in processes
        if HONCHO in cmdline(pid) and HONCHO not in cmdline(ppid(pid))
    ]

    if how == "terminal":
        os.killpg(make.handle.pid, sig)
    else:
        os.kill(honcho, sig)

    make.handle.wait(timeout=60)
    deadline = time.monotonic() + 30
    while time.monotonic() < deadline and any(alive(pid) for pid in processes):
        time.sleep(0.2)
    left = {pid: cmdline(pid) for pid in processes if alive(pid)}
    assert not left, left
    output = make.log.read_text()
    assert not [crash for crash in CRASHES if crash in output], output[-5000:]
    assert "SIGKILL" not in output, output[-5000:]  # honcho never had to force it
    # Each worker stops its own pool in order: no pool process is signalled mid-shutdown.
    errors = [line for line in output.splitlines() if "level=ERROR" in line]
    assert not errors, "\n".join(errors)
    # billiard: "Process 'ForkPoolWorker-1' pid:12 exited with 'signal 15 (SIGTERM)'".
    assert not re.search(r"exited with '?signal", output), output[-5000:]
    assert output.count("Warm shutdown") == workers, output[-5000:]
    shutdown = output[output.index(" received") :]
    # A few lines a process (honcho's two, a worker's warm shutdown and goodbye).
    assert len(shutdown.splitlines()) <= 8 * len(procfile_commands()), shutdown
