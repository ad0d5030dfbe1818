"""Real processes for end-to-end and fault tests: Celery workers, gunicorn, a private Redis,
and a TCP proxy that can take a server away from them.

Each runs against the pytest test database (so tests must commit: ``transaction=True``)
and is stopped, with its whole process group, when the test ends.
"""

from __future__ import annotations

import contextlib
import os
import shutil
import signal
import socket
import subprocess
import threading
import time
import warnings
from collections.abc import Callable
from pathlib import Path

from django.db import connection

ROOT = Path(__file__).resolve().parent.parent
BIN = ROOT / ".venv" / "bin"


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def service_env(**overrides: str) -> dict[str, str]:
    """The environment of a service process that shares this test's database and Redis db."""
    db = connection.settings_dict
    env = {
        **os.environ,
        "DJANGO_SETTINGS_MODULE": "config.settings.test",
        "DATABASE_URL": f"postgres://{db['USER'] or 'postgres'}@{db['HOST'] or '127.0.0.1'}:{db['PORT'] or 5432}/{db['NAME']}",
        "SIMULATOR_TIME_SCALE": "0.001",
        "LOG_LEVEL": "WARNING",
        "PYTHONUNBUFFERED": "1",
    }
    env.update(overrides)
    return env


class Process:
    def __init__(self, args: list[str], env: dict[str, str], log: Path) -> None:
        self.args = args
        self.log = log
        self.handle = subprocess.Popen(
            args,
            cwd=ROOT,
            env=env,
            stdout=log.open("ab"),
            stderr=subprocess.STDOUT,
            start_new_session=True,
        )

    def kill(self, sig: int = signal.SIGKILL) -> None:
        if self.handle.poll() is None:
            os.killpg(self.handle.pid, sig)
            self.handle.wait(timeout=30)

    def stop(self) -> None:
        """Stop it as a supervisor does: SIGTERM, then SIGKILL for whatever still runs
        STOP_GRACE seconds later (a Celery warm shutdown that hangs: rare, and a known
        Celery fault). The kill is reported as a warning with the log's tail, not raised:
        the test's assertions are about the service's outcome, which the tasks' late
        acknowledgement and the sweeps keep whole whichever way a worker ends."""
        if self.handle.poll() is not None:
            return
        family = _descendants(self.handle.pid)  # a respawned command has its own group
        os.killpg(self.handle.pid, signal.SIGTERM)
        try:
            self.handle.wait(timeout=STOP_GRACE)
            return
        except subprocess.TimeoutExpired:
            pass
        family |= _descendants(self.handle.pid)
        with contextlib.suppress(ProcessLookupError):
            os.killpg(self.handle.pid, signal.SIGKILL)
        for pid in family:
            with contextlib.suppress(ProcessLookupError):
                os.kill(pid, signal.SIGKILL)
        self.handle.wait(timeout=30)
        tail = "\n".join(self.log.read_text(errors="replace").splitlines()[-40:])
        warnings.warn(
            f"{' '.join(self.args)}: still running {STOP_GRACE:g} s after SIGTERM; "
            f"killed. The last lines of its log:\n{tail}",
            stacklevel=2,
        )


# How long stop() waits after SIGTERM before it kills (systemd waits 90 s, `make serve`'s honcho 30 s).
STOP_GRACE = 45.0


def _descendants(pid: int) -> set[int]:
    """Every process below ``pid``, from /proc (children, their children, ...)."""
    parents: dict[int, list[int]] = {}
    for stat in Path("/proc").glob("[0-9]*/stat"):
        with contextlib.suppress(OSError, ValueError, IndexError):
            # "pid (comm) state ppid ...": comm may hold spaces, so split after its ")".
            fields = stat.read_text().rsplit(")", 1)[1].split()
            parents.setdefault(int(fields[1]), []).append(int(stat.parent.name))
    found: set[int] = set()
    todo = [pid]
    while todo:
        for child in parents.get(todo.pop(), []):
            if child not in found:
                found.add(child)
                todo.append(child)
    return found


def start_worker(
    tmp_path: Path,
    *,
    env: dict[str, str],
    beat: bool = False,
    name: str = "worker",
    queues: str = "",
) -> Process:
    args = [
        str(BIN / "celery"),
        "-A",
        "config",
        "worker",
        "--concurrency=1",
        "--without-gossip",
        "--without-mingle",
    ]
    args += ["-n", f"{name}-{os.getpid()}@%h", "--loglevel=INFO"]
    if (
        queues
    ):  # e.g. "events,calls,default,webhooks"; default: events, calls and default
        args += ["-Q", queues]
    if beat:
        args += ["-B", "--schedule", str(tmp_path / f"{name}-beat")]
    return Process(args, env, tmp_path / f"{name}.log")


def start_gunicorn(
    tmp_path: Path,
    *,
    env: dict[str, str],
    port: int,
    config: bool = True,
    workers: int = 1,
) -> Process:
    args = [str(BIN / "gunicorn")]
    if config:
        args += ["-c", "config/gunicorn.py"]
    args += ["--bind", f"127.0.0.1:{port}", "--workers", str(workers)]
    args += ["config.wsgi:application"]
    process = Process(
        args, {**env, "GUNICORN_ACCESSLOG": ""}, tmp_path / "gunicorn.log"
    )
    wait_for(
        lambda: _listening(port),
        normal=2,
        what=f"gunicorn on {port}",
        process=process,
    )
    return process


def start_redis(tmp_path: Path, port: int) -> Process:
    redis = shutil.which("redis-server") or "/usr/bin/redis-server"
    args = [
        redis,
        "--port",
        str(port),
        "--bind",
        "127.0.0.1",
        "--save",
        "",
        "--appendonly",
        "no",
    ]
    process = Process(args, dict(os.environ), tmp_path / f"redis-{port}.log")
    wait_for(
        lambda: _listening(port), normal=1, what=f"redis on {port}", process=process
    )
    return process


class TcpProxy:
    """A loopback TCP proxy to ``127.0.0.1:target_port`` that can fail like a server: ``down()``
    cuts every proxied connection and refuses new ones, ``up()`` accepts again on the same
    port. Points a process at a server (PostgreSQL) that other tests keep using untouched."""

    def __init__(
        self, target_port: int, *, address: str = "127.0.0.1", port: int = 0
    ) -> None:
        """``address``/``port``: where it listens (default: loopback, a free port); the
        multi-host test listens on its bridge's address, for the hosts behind it."""
        self.target = ("127.0.0.1", target_port)
        self.address = address
        self.port = port or free_port()
        self._lock = threading.Lock()
        self._sockets: set[socket.socket] = set()
        self._listener: socket.socket | None = None

    def up(self) -> None:
        listener = socket.socket()
        listener.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        listener.bind((self.address, self.port))
        listener.listen(128)
        self._listener = listener
        threading.Thread(target=self._accept, args=(listener,), daemon=True).start()

    def down(self) -> None:
        listener, self._listener = self._listener, None
        if listener is not None:
            _shut(listener)  # wakes the accept() below, which then ends
        with self._lock:
            cut, self._sockets = self._sockets, set()
        for sock in cut:
            _shut(sock)

    def _accept(self, listener: socket.socket) -> None:
        while True:
            try:
                client, _ = listener.accept()
            except OSError:
                return
            try:
                upstream = socket.create_connection(self.target, timeout=5)
            except OSError:
                _shut(client)
                continue
            upstream.settimeout(None)
            with self._lock:
                if self._listener is not listener:  # went down meanwhile
                    _shut(client)
                    _shut(upstream)
                    return
                self._sockets |= {client, upstream}
            for source, sink in ((client, upstream), (upstream, client)):
                threading.Thread(
                    target=self._pump, args=(source, sink), daemon=True
                ).start()

    @staticmethod
    def _pump(source: socket.socket, sink: socket.socket) -> None:
        try:
            while data := source.recv(65536):
                sink.sendall(data)
        except OSError:
            pass
        finally:
            with contextlib.suppress(OSError):
                sink.shutdown(socket.SHUT_WR)


def _shut(sock: socket.socket) -> None:
    with contextlib.suppress(OSError):
        sock.shutdown(socket.SHUT_RDWR)
    sock.close()


def _listening(port: int) -> bool:
    try:
        socket.create_connection(("127.0.0.1", port), timeout=0.2).close()
    except OSError:
        return False
    return True


# Every wait in these tests is a condition polled until it holds, and it returns the moment
# it does. Its limit only guards against a hang: HANG_GUARD times what the wait takes on a
# quiet machine (its ``normal`` seconds: docs/architecture.md, "Recovery", and the tests' own runs), so a
# loaded machine (a load of 8-14 on 2 cores runs everything several times slower) passes
# where a deadline sized to a quiet one failed at random.
HANG_GUARD = 10


def wait_for(
    condition: Callable[[], bool],
    *,
    what: str,
    normal: float | None = None,
    timeout: float | None = None,
    process: Process | None = None,
    every: float = 0.1,
) -> None:
    """Poll ``condition`` until it holds. It fails only past its hang guard: ``normal`` (the
    seconds the wait takes on a quiet machine) times HANG_GUARD, or ``timeout`` where a
    caller gives its guard itself; or when ``process`` exits meanwhile."""
    if timeout is None:
        assert normal is not None, "a wait needs its normal time or a timeout"
        timeout = HANG_GUARD * normal
    started = time.monotonic()
    while time.monotonic() - started < timeout:
        if condition():
            return
        if process is not None and process.handle.poll() is not None:
            raise AssertionError(
                f"{what}: the process exited\n{process.log.read_text()[-3000:]}"
            )
        time.sleep(every)
    if condition():  # a last look: the machine may have been too slow to poll in time
        return
    log = process.log.read_text()[-3000:] if process else ""
    guard = f" ({HANG_GUARD} times the {normal:g} s it takes)" if normal else ""
    raise AssertionError(f"hung: waited {timeout:g} s{guard} for {what}\n{log}")


def procfile_commands() -> dict[str, str]:
    """The Procfile's processes, name to command, as written."""
    commands = {}
    for line in (ROOT / "Procfile").read_text().splitlines():
        if line.strip() and not line.lstrip().startswith("#"):
            name, command = line.split(":", 1)
            commands[name.strip()] = command.strip()
    return commands


class Procfile:
    """The Procfile's processes started as a process manager starts them (each command by
    ``sh -c``, in the project folder, with the venv first on PATH), at their default
    concurrency and timeouts. ``web_port`` is gunicorn's."""

    def __init__(self, tmp_path: Path, env: dict[str, str]) -> None:
        self.web_port = free_port()
        env = {
            **env,
            "PATH": f"{BIN}:{env.get('PATH', os.environ['PATH'])}",
            "GUNICORN_BIND": f"127.0.0.1:{self.web_port}",
            "GUNICORN_ACCESSLOG": "",
            "CELERY_BEAT_SCHEDULE_FILE": str(tmp_path / "celerybeat-schedule"),
        }
        self.env, self.tmp_path = env, tmp_path
        self.processes = {
            name: Process(["sh", "-c", command], env, tmp_path / f"{name}.log")
            for name, command in procfile_commands().items()
        }
        wait_for(
            lambda: _listening(self.web_port),
            normal=3,
            what="the Procfile's web process",
            process=self.processes["web"],
        )
        for name, process in self.processes.items():
            if name != "web":

                def ready(process: Process = process) -> bool:
                    return " ready." in process.log.read_text()

                wait_for(
                    ready,
                    normal=6,
                    what=f"the Procfile's {name} process",
                    process=process,
                )

    def __getitem__(self, name: str) -> Process:
        return self.processes[name]

    def restart(self, name: str) -> Process:
        """Start the Procfile's ``name`` process again (stopped by the test), appending to
        its log, and wait until its worker is ready."""
        log = self.tmp_path / f"{name}.log"
        readies = log.read_text().count(" ready.")
        process = Process(["sh", "-c", procfile_commands()[name]], self.env, log)
        self.processes[name] = process
        wait_for(
            lambda: log.read_text().count(" ready.") > readies,
            normal=6,
            what=f"the Procfile's {name} process, started again",
            process=process,
        )
        return process

    def log(self) -> str:
        return "".join(p.log.read_text() for p in self.processes.values())

    def stop(self) -> None:
        for process in self.processes.values():
            process.stop()
