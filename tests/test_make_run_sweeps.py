"""`make run`'s embedded default (SQLite, the filesystem broker, diskcache) runs every
sweep as PostgreSQL does: started as `make run` starts it, on the demo's data, with each
sweep every second or two, every sweep runs at least twice and the log shows no
traceback and no error (issue 35: recordings_sweep's DISTINCT ON raised every 10 s)."""

from __future__ import annotations

import os
import re
import signal
import subprocess
import sys

import pytest
from django.conf import settings

from tests.processes import ROOT, Process, free_port, wait_for
from tests.test_make_run import kill_tree

pytestmark = pytest.mark.slow

SWEEP_SECONDS = {
    "CALLS_SWEEP_SECONDS": "1",
    "LEADS_SWEEP_SECONDS": "1",
    "WEBHOOKS_SWEEP_SECONDS": "1",
    "TEXTS_SWEEP_SECONDS": "1",
    "MESSAGES_SWEEP_SECONDS": "1",
    "EFFECTS_SWEEP_SECONDS": "1",
    "ALERTS_SWEEP_SECONDS": "1",
    "HANDOFFS_SWEEP_SECONDS": "1",
    "INSIGHTS_SWEEP_SECONDS": "2",
    "ROLLUP_SWEEP_SECONDS": "2",
}
# Every sweep the scheduler sends, by its task's name.
SWEEPS = sorted(
    entry["task"]
    for name, entry in settings.CELERY_BEAT_SCHEDULE.items()
    if name.endswith("-sweep")
)


def embedded_env(var_dir) -> dict[str, str]:
    """`make run`'s environment on its own var/ folder: nothing of the tests' servers."""
    env = {
        key: value
        for key, value in os.environ.items()
        if key not in {"DATABASE_URL", "CELERY_BROKER_URL", "REDIS_URL", "MAKEFLAGS"}
        and not key.startswith(("PYTEST", "MAKELEVEL"))
    }
    env.update(
        DJANGO_SETTINGS_MODULE="config.settings.local",
        VAR_DIR=str(var_dir),
        CELERY_BEAT_SCHEDULE_FILE=str(var_dir / "beat-schedule"),
        LOG_LEVEL="INFO",
        PYTHONUNBUFFERED="1",
        **SWEEP_SECONDS,
    )
    return env


def runs(log: str, task: str) -> int:
    """How many runs of ``task`` a worker finished (Celery logs each at INFO)."""
    return len(re.findall(rf"Task {re.escape(task)}\[[^\]]+\] succeeded", log))


def test_every_sweep_runs_on_the_embedded_default_without_a_traceback(tmp_path):
    env = embedded_env(tmp_path)
    manage = [sys.executable, "manage.py"]
    for step in (["migrate", "--noinput"], ["seed_demo"]):
        subprocess.run(
            manage + step, cwd=ROOT, env=env, check=True, capture_output=True
        )
    port = free_port()
    make = Process(
        ["make", "--no-print-directory", "serve", f"PORT={port}"],
        env,
        tmp_path / "make-serve.log",
    )
    try:
        wait_for(
            lambda: all(runs(make.log.read_text(), task) >= 2 for task in SWEEPS),
            timeout=300,
            what="every sweep to run twice",
            process=make,
        )
        os.killpg(make.handle.pid, signal.SIGINT)
        make.handle.wait(timeout=60)
    finally:
        kill_tree({make.handle.pid})
    log = make.log.read_text()
    assert "Traceback" not in log, log[-5000:]
    # An item a sweep's guard caught (core.sweeps) is logged as a warning: none either.
    errors = [
        line
        for line in log.splitlines()
        if "level=ERROR" in line or "event=sweep.item_failed" in line
    ]
    assert not errors, "\n".join(errors)
    assert {task: runs(log, task) >= 2 for task in SWEEPS} == dict.fromkeys(
        SWEEPS, True
    )
