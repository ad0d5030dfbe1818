"""`make run`'s processes (the Procfile under honcho, started by `make serve` exactly as
`make run` starts them) stop cleanly: one Ctrl-C or SIGTERM ends every process within a
bounded wait, with a few lines of output, no error and no crash."""

from __future__ import annotations

import base64
import contextlib
import json
import os
import re
import signal
import socket
import threading
import time
import urllib.error
import urllib.request
from pathlib import Path

import pytest
import redis
from django.conf import settings

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


STOPS = [
    ("terminal", signal.SIGINT),  # Ctrl-C: the terminal signals make and honcho
    ("honcho", signal.SIGINT),
    ("honcho", signal.SIGTERM),  # a process supervisor stopping it
]


def wait_until_serving(make: Process, port: int) -> None:
    workers = sum("celery" in c for c in procfile_commands().values())
    wait_for(lambda: web_answers(port), timeout=60, what="the web", process=make)
    wait_for(
        lambda: make.log.read_text().count(" ready.") >= workers,
        timeout=90,
        what="every worker",
        process=make,
    )


def stop_and_check(make: Process, seen: set[int], how: str, sig: int) -> str:
    """Stop `make serve` as ``how`` says and check that every process stopped cleanly;
    returns make's output."""
    workers = sum("celery" in c for c in procfile_commands().values())
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
    # A stop that was asked for is no error: make says nothing ("Error 130", "Interrupt").
    assert not [line for line in output.splitlines() if line.startswith("make")], (
        output[-5000:]
    )
    if (
        how == "honcho"
    ):  # make exits with honcho's status (a terminal's signal kills it)
        assert make.handle.returncode == 0, output[-5000:]
    # Each worker stops its own pool in order: no pool process is signalled mid-shutdown.
    errors = [line for line in output.splitlines() if "level=ERROR" in line]
    assert not errors, "\n".join(errors)
    # billiard: "Process 'ForkPoolWorker-1' pid:12 exited with 'signal 15 (SIGTERM)'".
    assert not re.search(r"exited with '?signal", output), output[-5000:]
    assert output.count("Warm shutdown") == workers, output[-5000:]
    received = re.search(r"\| SIG[A-Z]+ received", output)
    assert received, output[-5000:]
    shutdown = output[received.start() :]
    # A few lines a process (honcho's two, a worker's warm shutdown and goodbye).
    assert len(shutdown.splitlines()) <= 8 * len(procfile_commands()), shutdown
    return output


@pytest.mark.parametrize(("how", "sig"), STOPS)
def test_one_signal_stops_every_process_cleanly(make_serve, how, sig):
    make, port, seen = make_serve
    wait_until_serving(make, port)
    stop_and_check(make, seen, how, sig)


class SilentServer:
    """A speech-to-text server that takes requests and never answers: a transcription
    under way for as long as the test likes."""

    def __init__(self) -> None:
        self.socket = socket.create_server(("127.0.0.1", 0))
        self.port = self.socket.getsockname()[1]
        self.requests = 0
        self.held: list[socket.socket] = []
        threading.Thread(target=self.serve, daemon=True).start()

    def serve(self) -> None:
        with contextlib.suppress(OSError):
            while True:
                connection, _ = self.socket.accept()
                self.held.append(connection)
                connection.recv(65536)
                self.requests += 1

    def close(self) -> None:
        for connection in [*self.held, self.socket]:
            connection.close()


@pytest.mark.django_db(transaction=True)
@pytest.mark.parametrize(("how", "sig"), [STOPS[0], STOPS[2]])
def test_a_transcription_under_way_is_handed_back_not_waited_for(tmp_path, how, sig):
    """The transcription worker does not wait for its job (minutes): the job is
    interrupted, its claim handed back without counting a try, and a message for it put
    back on the queue, so the next worker runs it."""
    from insights.models import Transcription, TranscriptionStatus
    from insights.tasks import transcription_task
    from tests.insights.conftest import stored, wav_of
    from tests.scoring.factories import CallFactory

    server = SilentServer()
    port = free_port()
    env = service_env(
        CELERY_BEAT_SCHEDULE_FILE=str(tmp_path / "beat-schedule"),
        TRANSCRIPTION_BACKEND="remote",
        TRANSCRIPTION_REMOTE_URL=f"http://127.0.0.1:{server.port}",
    )
    env.pop("MAKEFLAGS", None)
    env.pop("MAKELEVEL", None)
    make = Process(
        ["make", "--no-print-directory", "serve", f"PORT={port}"],
        env,
        tmp_path / "make-serve.log",
    )
    seen: set[int] = {make.handle.pid}
    try:
        call = CallFactory()
        stored(call, seconds=4, wav=wav_of(4, agent=0.5, lead=0.5))
        Transcription.objects.create(call=call)
        wait_until_serving(make, port)
        transcription_task.apply_async(kwargs={"call_id": call.pk})
        wait_for(
            lambda: server.requests >= 1,
            timeout=60,
            what="the transcription under way",
            process=make,
        )

        output = stop_and_check(make, seen, how, sig)
    finally:
        kill_tree(seen)
        server.close()

    assert "transcription.handed_back" in output, output[-5000:]
    job = Transcription.objects.get(call=call)
    assert (job.status, job.tries, job.claimed_at) == (
        TranscriptionStatus.PENDING,
        0,
        None,
    )
    # A message for it waits for the next worker (on the queue, or held unacknowledged by
    # the broker until it is restored).
    broker = redis.Redis.from_url(settings.CELERY_BROKER_URL)
    waiting = [
        raw
        for key in broker.keys("transcription*")
        for raw in broker.lrange(key, 0, -1)
    ] + [json.dumps(json.loads(raw)[0]).encode() for raw in broker.hvals("unacked")]
    assert [
        message
        for message in map(json.loads, waiting)
        if message["headers"]["task"] == "insights.tasks.transcription_task"
        and json.loads(base64.b64decode(message["body"]))[1] == {"call_id": call.pk}
    ], waiting
