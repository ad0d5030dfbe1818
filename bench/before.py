"""The yardstick of issue 22's aims: main as it was before the issue, run in the same bench
run.

Issue 22 asks for the pipeline's CPU per 1,000 leads to be halved. A figure measured once
(163 s, on the machine of the issue's first round) says nothing on a machine three times
slower or faster, and these machines drift within a day. So the bench checks out main's
last commit before the issue (``BEFORE_ISSUE_22``) in a git worktree, migrates and seeds a
database of its own, and measures that code as it measures today's, minutes apart: the
HTTP endpoints of parts 1 and 2 through its gunicorn (``Before.http``), and part 4a's burst
through its gunicorn and Procfile workers (``Before.burst``), on a Redis db of their own,
with the same seed, load generators, simulator scale and counters. The old code's
processes run only while they are measured; today's stay idle meanwhile and are not
counted. Its intake leads stay in its database, as today's stay in today's, so each burst
follows the same history.

That commit's requirements are today's (it predates none of them), so it runs on the
bench's own virtualenv. Where its history is missing (a shallow clone, an export without
``.git``), nothing is measured and the report says so. Only with ``BENCH_BEFORE=1``.
"""

from __future__ import annotations

import os
import subprocess
import tempfile
from collections.abc import Callable
from pathlib import Path
from typing import Any, TypeVar

from bench import dialing
from bench.harness import (
    DB_NAME,
    LEAD_PHONE,
    ROOT,
    Processes,
    burst_with_cpu,
    drop_database,
    flush_redis,
    free_port,
    prepare_database,
    seed_service,
    start_gunicorn,
    start_workers,
    step,
)

# main's last commit before issue 22's first change (c044fd8, the User API read).
BEFORE_ISSUE_22 = "efae47d72aac3cbcbc53fab1fab9f693202d5060"
# Off by default (it checks out, migrates and seeds a second service: minutes of a run);
# BENCH_BEFORE=1 sets parts 1, 2 and 4a against it.
WANTED = os.environ.get("BENCH_BEFORE", "0") == "1"
BEFORE_DB = f"{DB_NAME}_before"
BEFORE_REDIS_URL = os.environ.get("BENCH_BEFORE_REDIS_URL", "redis://127.0.0.1:6379/13")

T = TypeVar("T")


class Before:
    """main before issue 22 for one bench run: checked out, migrated and seeded on entering,
    removed (worktree, database, Redis db) on leaving. ``wanted`` False, or
    without ``BENCH_BEFORE=1``, measures nothing."""

    def __init__(self, env: dict[str, str], wanted: bool = True) -> None:
        # Why nothing is measured, if so.
        self.why: str | None = None
        if not WANTED:
            self.why = "skipped (BENCH_BEFORE=1 measures it)"
        elif not wanted:
            self.why = "not measured in this run"
        self.port = port = free_port()
        self.env = {
            **env,
            "DATABASE_URL": env["DATABASE_URL"].rsplit("/", 1)[0] + f"/{BEFORE_DB}",
            "REDIS_URL": BEFORE_REDIS_URL,
            "CELERY_BROKER_URL": BEFORE_REDIS_URL,
            "GUNICORN_BIND": f"127.0.0.1:{port}",
        }
        self.seed: dict[str, Any] = {}
        self.code: Path | None = None
        self._scratch: tempfile.TemporaryDirectory[str] | None = None

    def __enter__(self) -> Before:
        if self.why is not None:
            return self
        self._scratch = tempfile.TemporaryDirectory(prefix="leadcall-before-")
        code = Path(self._scratch.name) / "code"
        checkout = _git("worktree", "add", "--detach", str(code), BEFORE_ISSUE_22)
        if checkout.returncode:
            self.why = f"not measured: no worktree of {BEFORE_ISSUE_22[:7]} ({checkout.stderr.strip()})"
            return self
        self.code = code
        self.env["PYTHONPATH"] = str(code)
        step(f"main before issue 22, at {BEFORE_ISSUE_22[:7]}: migrating and seeding")
        try:
            flush_redis(BEFORE_REDIS_URL)
            prepare_database(self.env, BEFORE_DB, code)
            self.seed = seed_service(self.env, BEFORE_DB, code)
        except subprocess.CalledProcessError as error:
            self.why = f"not measured ({(error.stderr or str(error)).strip()[-300:]})"
        except BaseException:
            # Anything else stops the bench (its own database or Redis would fail too);
            # no worktree or database of the old code is left behind.
            self.__exit__()
            raise
        return self

    def __exit__(self, *exc: object) -> None:
        if self._scratch is None:
            return
        flush_redis(BEFORE_REDIS_URL)
        drop_database(BEFORE_DB)
        if self.code is not None:
            _git("worktree", "remove", "--force", str(self.code))
        self._scratch.cleanup()

    def http(self, measure: Callable[[int, dict[str, Any], int, str], T]) -> T | str:
        """``measure(port, seed, gunicorn's pid, database)`` run against the old code's
        gunicorn, or why it was not."""
        return self._running(
            lambda processes, gunicorn: measure(
                self.port, self.seed, gunicorn.pid, BEFORE_DB
            )
        )

    def burst(self) -> tuple[dict[str, Any], dict[str, float]] | str:
        """The old code's part 4a burst and its CPU by process (as ``burst_with_cpu``), or
        why it was not measured."""

        def run(
            processes: Processes, gunicorn: subprocess.Popen
        ) -> tuple[dict[str, Any], dict[str, float]]:
            assert self.code is not None
            start_workers(self.env, processes, self.code, BEFORE_REDIS_URL)
            step(f"4a before issue 22: burst of {dialing.BURST_LEADS} leads")
            # Today's load generator (bench.dial) reads only columns both versions have.
            base = dialing.base_options(self.port, self.seed, LEAD_PHONE)
            options = dialing.burst_options(base, self.seed)
            dial_env = {**self.env, "PYTHONPATH": str(ROOT)}
            return burst_with_cpu(dial_env, options, processes, BEFORE_DB)

        return self._running(run)

    def _running(self, run: Callable[[Processes, subprocess.Popen], T]) -> T | str:
        """``run(processes, gunicorn)`` with the old code's gunicorn started for it (and
        every process it started stopped after), or why it was not measured."""
        if self.why is not None:
            return self.why
        assert self.code is not None
        processes = Processes()
        try:
            gunicorn = start_gunicorn(processes, self.env, self.port, self.code)
            measured = run(processes, gunicorn)
        except (subprocess.CalledProcessError, SystemExit) as error:
            # Today's figures still count; the logs stay for the reason.
            failure = getattr(error, "stderr", None) or str(error)
            return f"not measured ({failure.strip()[-300:]}; logs in {processes.logs})"
        finally:
            processes.stop_all()
        processes.discard_logs()
        return measured


def _git(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        ["git", "-C", str(ROOT), *args], capture_output=True, text=True, check=False
    )
