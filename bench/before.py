"""Part 4a's yardstick: main as it was before issue 22, run in the same bench run.

Issue 22 asks for the pipeline's CPU per 1,000 leads to be halved. A figure measured once
(163 s, on the machine of the issue's first round) says nothing on a machine three times
slower or faster, and these machines drift within a day. So the bench checks out main's
last commit before the issue (``BEFORE_ISSUE_22``) in a git worktree, migrates and seeds a
database of its own, starts that code's gunicorn and Procfile workers on a Redis db of
their own, and plays part 4a's burst through them as through today's code: the same seed,
load generator, simulator scale and counters, minutes apart. Today's processes stay idle
meanwhile and are not counted.

That commit's requirements are today's (it predates none of them), so it runs on the
bench's own virtualenv. Where its history is missing (a shallow clone, an export without
``.git``), nothing is measured and the report says so. ``BENCH_BEFORE=0`` skips it.
"""

from __future__ import annotations

import os
import subprocess
import tempfile
from pathlib import Path
from typing import Any

from bench import dialing
from bench.harness import (
    DB_NAME,
    GUNICORN,
    LEAD_PHONE,
    ROOT,
    Processes,
    burst_with_cpu,
    drop_database,
    flush_redis,
    prepare_database,
    seed_service,
    start_workers,
    step,
    wait_until_up,
)

# main's last commit before issue 22's first change (c044fd8, the User API read).
BEFORE_ISSUE_22 = "efae47d72aac3cbcbc53fab1fab9f693202d5060"
WANTED = os.environ.get("BENCH_BEFORE", "1") != "0"
BEFORE_DB = f"{DB_NAME}_before"
BEFORE_REDIS_URL = os.environ.get("BENCH_BEFORE_REDIS_URL", "redis://127.0.0.1:6379/13")


def measure(
    env: dict[str, str], port: int
) -> tuple[dict[str, Any], dict[str, float]] | str:
    """The old code's part 4a burst and its CPU by process (as ``burst_with_cpu``), or why
    it was not measured. ``env`` is today's; ``port`` a free one for the old gunicorn."""
    if not WANTED:
        return "skipped (BENCH_BEFORE=0)"
    with tempfile.TemporaryDirectory(prefix="leadcall-before-") as scratch:
        code = Path(scratch) / "code"
        checkout = _git("worktree", "add", "--detach", str(code), BEFORE_ISSUE_22)
        if checkout.returncode:
            return f"not measured: no worktree of {BEFORE_ISSUE_22[:7]} ({checkout.stderr.strip()})"
        processes = Processes()
        try:
            measured = _burst(code, env, port, processes)
        except (subprocess.CalledProcessError, SystemExit) as error:
            # Today's figures still count; the logs stay for the reason.
            failure = getattr(error, "stderr", None) or str(error)
            return f"not measured ({failure.strip()[-300:]}; logs in {processes.logs})"
        finally:
            processes.stop_all()
            flush_redis(BEFORE_REDIS_URL)
            drop_database(BEFORE_DB)
            _git("worktree", "remove", "--force", str(code))
        processes.discard_logs()
        return measured


def _burst(
    code: Path,
    env: dict[str, str],
    port: int,
    processes: Processes,
) -> tuple[dict[str, Any], dict[str, float]]:
    step(
        f"4a before issue 22: main at {BEFORE_ISSUE_22[:7]} (migrated, seeded, started)"
    )
    env = {
        **env,
        "PYTHONPATH": str(code),
        "DATABASE_URL": env["DATABASE_URL"].rsplit("/", 1)[0] + f"/{BEFORE_DB}",
        "REDIS_URL": BEFORE_REDIS_URL,
        "CELERY_BROKER_URL": BEFORE_REDIS_URL,
        "GUNICORN_BIND": f"127.0.0.1:{port}",
    }
    flush_redis(BEFORE_REDIS_URL)
    prepare_database(env, BEFORE_DB, code)
    seed = seed_service(env, BEFORE_DB, code)
    wait_until_up(port, processes.start("gunicorn", GUNICORN, env, code), processes)
    start_workers(env, processes, code, BEFORE_REDIS_URL)
    step(f"4a before issue 22: burst of {dialing.BURST_LEADS} leads")
    # Today's load generator (bench.dial) reads only columns both versions have.
    options = dialing.burst_options(dialing.base_options(port, seed, LEAD_PHONE), seed)
    dial_env = {**env, "PYTHONPATH": str(ROOT)}
    return burst_with_cpu(dial_env, options, processes, BEFORE_DB)


def _git(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        ["git", "-C", str(ROOT), *args], capture_output=True, text=True, check=False
    )
