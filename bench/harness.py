"""The bench's harness: its database, Redis, the service's processes (gunicorn and the
workers) started and stopped as production runs them, and the seed data."""

from __future__ import annotations

import contextlib
import json
import os
import resource
import secrets
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent

import psycopg  # noqa: E402
import redis  # noqa: E402

from bench.dialing import BURST_AGENTS, QUEUE_AGENTS, run_part, worker_commands  # noqa: E402
from bench.load import Request, Result, run  # noqa: E402
from bench.report import BENCH_DB_BACKENDS, HTTP_CPU  # noqa: E402
from bench.seeds import script  # noqa: E402
from bench.seeds import service as service_seed  # noqa: E402

# BENCH_DB_NAME: another database when two runs share one PostgreSQL.
DB_NAME = os.environ.get("BENCH_DB_NAME", "leadcall_bench")
ADMIN_DSN = "postgresql://postgres@127.0.0.1:5432/postgres"
# BENCH_REDIS_URL: another Redis (or db) when db 15 of the local one is in use.
REDIS_URL = os.environ.get("BENCH_REDIS_URL", "redis://127.0.0.1:6379/15")
SECONDS = float(os.environ.get("BENCH_SECONDS", "5"))
SAMPLES = ROOT.parent / "shared" / "adf-samples"
# The workers' Celery app: the service's app plus the no-op task (see bench/celery_noop.py).
CELERY_APP = os.environ.get("BENCH_CELERY_APP", "bench.celery_noop")
# Part 7's lead rate (leads/s): slow enough that every call ends within the run (a
# simulated call is a dozen pipeline tasks; two shared cores play a few calls a second).
WEBHOOK_RATE = float(os.environ.get("BENCH_WEBHOOK_RATE", "3")) or 3.0
# Which parts to run, e.g. BENCH_PARTS=4 while working on dialing. By default every part
# but 9 (the fault tests and the overload, about fifteen minutes), 15 (due rows, twice
# its ten-minute window) and 17 (the capacity curve, up to 18 windows of 30 s), so a default run ends within about half an hour here;
# BENCH_PARTS=all runs them too.
ALL_PARTS = "1,2,3,4,5,6,7,8,9,10,11,12,13,14,15,16,17"
DEFAULT_PARTS = "1,2,3,4,5,6,7,8,10,11,12,13,14,16"
_WANTED_PARTS = os.environ.get("BENCH_PARTS", DEFAULT_PARTS).replace(" ", "")
PARTS = set((ALL_PARTS if _WANTED_PARTS == "all" else _WANTED_PARTS).split(","))
# The service's web process, as the Procfile runs it.
GUNICORN = [
    str(ROOT / ".venv/bin/gunicorn"),
    "-c",
    "config/gunicorn.py",
    "config.wsgi:application",
]
# The customer's number: the simulator answers it (not 0000-0003) and the call ends fast.
LEAD_PHONE = "303-555-0147"


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def environment(port: int) -> dict[str, str]:
    return {
        **os.environ,
        "PYTHONPATH": os.pathsep.join(
            filter(None, [str(ROOT), os.environ.get("PYTHONPATH")])
        ),
        "DJANGO_SETTINGS_MODULE": "config.settings.production",
        "DJANGO_SECRET_KEY": secrets.token_urlsafe(60),
        "DJANGO_SECURE_SSL_REDIRECT": "0",
        "DJANGO_ALLOWED_HOSTS": "127.0.0.1,localhost",
        "DATABASE_URL": f"postgres://postgres@127.0.0.1:5432/{DB_NAME}",
        "REDIS_URL": REDIS_URL,
        "CELERY_BROKER_URL": REDIS_URL,
        # Limits are not what is measured here.
        "API_RATE_LIMITS": "users=10000000/min,leads=10000000/min,clicktocall=10000000/min,scoreddata=10000000/min",
        # Simulated calls end within milliseconds, so agents are free again at once.
        "SIMULATOR_TIME_SCALE": "0.0001",
        "TELEPHONY_PROVIDER": "simulator",
        "GUNICORN_BIND": f"127.0.0.1:{port}",
        "GUNICORN_WORKERS": os.environ.get("BENCH_WORKERS", "4"),
        "GUNICORN_ACCESSLOG": "/dev/null",
        "LOG_LEVEL": "WARNING",
    }


def python(env: dict[str, str], *args: str, cwd: Path = ROOT) -> str:
    return subprocess.run(
        [sys.executable, *args],
        cwd=cwd,
        env=env,
        check=True,
        capture_output=True,
        text=True,
    ).stdout


def drop_database(name: str = DB_NAME) -> None:
    with psycopg.connect(ADMIN_DSN, autocommit=True) as conn:
        conn.execute(f"DROP DATABASE IF EXISTS {name} WITH (FORCE)")


def prepare_database(
    env: dict[str, str], name: str = DB_NAME, code: Path = ROOT
) -> None:
    """``name`` created afresh and migrated by the service's code at ``code``."""
    drop_database(name)
    with psycopg.connect(ADMIN_DSN, autocommit=True) as conn:
        conn.execute(f"CREATE DATABASE {name}")
    python(env, "manage.py", "migrate", "--noinput", "-v0", cwd=code)


def analyze_database(name: str = DB_NAME) -> None:
    """Fresh statistics, as a live database has (autovacuum): a table just filled is
    planned as if it were empty, and the agent queries of part 4 are then badly planned."""
    with psycopg.connect(
        ADMIN_DSN.rsplit("/", 1)[0] + f"/{name}", autocommit=True
    ) as conn:
        conn.execute("ANALYZE")


def flush_redis(url: str = REDIS_URL) -> None:
    redis.Redis.from_url(url).flushdb()


def seed_service(env: dict[str, str], name: str = DB_NAME, code: Path = ROOT) -> dict:
    """bench/seeds/service.py run by the service's code at ``code`` into database
    ``name``, then fresh statistics; what it printed (the keys, ids and vendor ids the parts
    post with)."""
    agents = [str(BURST_AGENTS), str(QUEUE_AGENTS)]
    seed = json.loads(python(env, script(service_seed), *agents, cwd=code))
    analyze_database(name)
    return dict(seed)


def cpu_seconds(sessions: dict[str, int]) -> dict[str, float]:
    """CPU seconds (user and system) used so far by the processes of each session (a
    process started by ``Processes`` leads its own), and by PostgreSQL's server processes
    (``postgresql``), read from /proc: the processes' own counters."""
    tick = os.sysconf("SC_CLK_TCK")
    used = dict.fromkeys([*sessions, "postgresql"], 0.0)
    by_session = {sid: name for name, sid in sessions.items()}
    for stat in Path("/proc").glob("[0-9]*/stat"):
        try:
            text = stat.read_text()
        except OSError:
            continue  # ended meanwhile
        comm, _, rest = text.rpartition(")")
        fields = rest.split()
        # After the name: state, ppid, pgrp, session, ... utime (14th field), stime,
        # and the same of its children that ended (a PostgreSQL backend whose connection
        # closed, a recycled worker: counted in the parent that reaped them).
        seconds = sum(int(field) for field in fields[11:15]) / tick
        name = by_session.get(int(fields[3]))
        if name is None and comm.endswith("(postgres"):
            name = "postgresql"
        if name is not None:
            used[name] += seconds
    return used


def database_cpu_seconds(database: str) -> dict[int, float]:
    """CPU seconds (user and system) used so far by each PostgreSQL backend serving
    ``database`` (its process title names it), by process id: the server's share of a run
    on a machine whose PostgreSQL serves others too (``cpu_seconds`` counts every backend).
    A backend that exits is no longer counted: the service keeps its connections open."""
    tick = os.sysconf("SC_CLK_TCK")
    used: dict[int, float] = {}
    for proc in Path("/proc").glob("[0-9]*"):
        try:
            title = (proc / "cmdline").read_bytes().replace(b"\0", b" ").split()
            if title[:1] != [b"postgres:"] or database.encode() not in title:
                continue
            fields = (proc / "stat").read_text().rpartition(")")[2].split()
        except OSError:
            continue  # ended meanwhile
        used[int(proc.name)] = sum(int(field) for field in fields[11:13]) / tick
    return used


def redis_cpu_seconds() -> float:
    """CPU seconds (user and system) used so far by this machine's Redis servers."""
    tick = os.sysconf("SC_CLK_TCK")
    used = 0.0
    for stat in Path("/proc").glob("[0-9]*/stat"):
        try:
            text = stat.read_text()
        except OSError:
            continue  # ended meanwhile
        if "(redis-server)" in text:
            used += sum(int(f) for f in text.rpartition(")")[2].split()[11:13]) / tick
    return used


class BackendsSampler(threading.Thread):
    """The CPU seconds the backends serving ``database`` use while the block runs, read
    twice a second: a backend that exits meanwhile (the service's connections are replaced
    after CONN_MAX_AGE) keeps what it used until its last reading."""

    def __init__(self, database: str) -> None:
        super().__init__(daemon=True)
        self.database = database
        self.first = database_cpu_seconds(database)
        self.last = dict(self.first)
        self.done = threading.Event()

    def run(self) -> None:
        while not self.done.wait(0.5):
            self.last.update(database_cpu_seconds(self.database))

    def __enter__(self) -> BackendsSampler:
        self.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self.done.set()
        self.join()
        self.last.update(database_cpu_seconds(self.database))

    def used(self) -> float:
        return sum(s - self.first.get(pid, 0.0) for pid, s in self.last.items())


def burst_with_cpu(
    env: dict[str, str],
    options: dict,
    processes: Processes,
    database: str = DB_NAME,
) -> tuple[dict, dict[str, float]]:
    """A burst of ``bench.dial`` (its ``options``), played out to the end of every call,
    and the CPU seconds each of ``processes`` (gunicorn, the workers) and PostgreSQL used
    meanwhile; with ``BENCH_DB_BACKENDS``, those of the backends serving ``database`` alone."""
    sessions = {name: process.pid for name, process in processes.running}
    before = cpu_seconds(sessions)
    with BackendsSampler(database) as backends:
        burst = run_part(env, {**options, "settle": True})
    after = cpu_seconds(sessions)
    cpu = {name: after[name] - before[name] for name in after}
    cpu[BENCH_DB_BACKENDS] = backends.used()
    return burst, cpu


class Processes:
    """Servers started here, each in its own session so a stop reaches its whole group."""

    def __init__(self) -> None:
        self.running: list[tuple[str, subprocess.Popen]] = []
        self.logs = Path(tempfile.mkdtemp(prefix="leadcall-bench-"))

    def start(
        self, name: str, args: list[str], env: dict[str, str], cwd: Path = ROOT
    ) -> subprocess.Popen:
        log = (self.logs / f"{name}.log").open("wb")
        process = subprocess.Popen(
            args,
            cwd=cwd,
            env=env,
            stdout=log,
            stderr=subprocess.STDOUT,
            start_new_session=True,
        )
        self.running.append((name, process))
        return process

    def log_tail(self, name: str, lines: int = 30) -> str:
        path = self.logs / f"{name}.log"
        text = path.read_text(errors="replace") if path.exists() else ""
        return "\n".join(text.splitlines()[-lines:])

    def stop_all(self) -> None:
        for _, process in reversed(self.running):
            if process.poll() is None:
                signal_group(process, signal.SIGTERM)
        for _, process in reversed(self.running):
            try:
                process.wait(timeout=20)
            except subprocess.TimeoutExpired:
                signal_group(process, signal.SIGKILL)
                process.wait(timeout=10)
            # Children a stopped master left behind (its session is its pid).
            signal_group(process, signal.SIGKILL)
        self.running.clear()

    def discard_logs(self) -> None:
        shutil.rmtree(self.logs, ignore_errors=True)


def signal_group(process: subprocess.Popen, sig: int) -> None:
    with contextlib.suppress(ProcessLookupError):
        os.killpg(process.pid, sig)


def start_workers(
    env: dict[str, str],
    processes: Processes,
    code: Path = ROOT,
    broker: str = REDIS_URL,
) -> dict[str, list[str]]:
    """The Procfile's two Celery workers of the service's code at ``code``, on a broker
    flushed first: the dispatches of a run before (intake's) must not reach them."""
    flush_redis(broker)
    commands = worker_commands(
        CELERY_APP, str(ROOT / ".venv/bin"), str(processes.logs / "beat")
    )
    for name, args in commands.items():
        worker = processes.start(name, args, env, code)
        wait_for_worker(worker, processes, name, name.removeprefix("worker-"), broker)
    return commands


def start_gunicorn(
    processes: Processes, env: dict[str, str], port: int, code: Path = ROOT
) -> subprocess.Popen:
    """The service's gunicorn (of the code at ``code``), started with ``env`` (which binds
    it to ``port``) and answering there."""
    server = processes.start("gunicorn", GUNICORN, env, code)
    wait_until_up(port, server, processes)
    return server


def wait_until_up(port: int, process: subprocess.Popen, processes: Processes) -> None:
    for _ in range(300):
        if process.poll() is not None:
            raise SystemExit(
                f"gunicorn exited during start-up:\n{processes.log_tail('gunicorn')}"
            )
        try:
            socket.create_connection(("127.0.0.1", port), timeout=0.2).close()
            return
        except OSError:
            time.sleep(0.1)
    raise SystemExit("gunicorn did not start")


def wait_for_worker(
    process: subprocess.Popen,
    processes: Processes,
    name: str,
    queue: str,
    broker: str = REDIS_URL,
) -> None:
    """Until the worker has declared its queue on the broker (it is consuming then)."""
    client = redis.Redis.from_url(broker)
    for _ in range(600):
        if process.poll() is not None:
            raise SystemExit(
                f"the Celery worker exited during start-up:\n{processes.log_tail(name)}"
            )
        if client.exists(f"_kombu.binding.{queue}"):
            return
        time.sleep(0.1)
    raise SystemExit("the Celery worker did not start")


def step(text: str) -> None:
    print(f"... {text}", flush=True)


def run_with_cpu(
    port: int, request: Request, gunicorn: int, database: str = DB_NAME
) -> tuple[Result, dict[str, float]]:
    """One endpoint's run, with the CPU milliseconds per request that gunicorn (every
    worker), the backends serving ``database``, Redis and the load generator (this
    process's children, once they end) used meanwhile."""
    children = resource.getrusage(resource.RUSAGE_CHILDREN)
    before = cpu_seconds({"gunicorn": gunicorn})["gunicorn"], redis_cpu_seconds()
    with BackendsSampler(database) as backends:
        result = run(port, request, seconds=SECONDS)
    after = cpu_seconds({"gunicorn": gunicorn})["gunicorn"], redis_cpu_seconds()
    ended = resource.getrusage(resource.RUSAGE_CHILDREN)
    generator = (ended.ru_utime + ended.ru_stime) - (
        children.ru_utime + children.ru_stime
    )
    seconds = (after[0] - before[0], backends.used(), after[1] - before[1], generator)
    per = 1000 / max(result.requests, 1)
    return result, {
        name: used * per for name, used in zip(HTTP_CPU, seconds, strict=True)
    }
