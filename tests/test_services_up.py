"""`make test` starts (or installs) PostgreSQL and Redis itself: ``scripts/services-up``
leaves answering services alone, starts stopped ones, and says so and fails when it cannot.
The commands it runs are replaced by fakes on ``PATH``, so no real service is touched."""

from __future__ import annotations

import os
import subprocess
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
SCRIPT = ROOT / "scripts" / "services-up"


def fake(bin_dir: Path, name: str, body: str) -> None:
    path = bin_dir / name
    path.write_text(f"#!/bin/sh\n{body}\n")
    path.chmod(0o755)


def run(bin_dir: Path) -> subprocess.CompletedProcess[str]:
    env = {**os.environ, "PATH": f"{bin_dir}:{os.environ['PATH']}"}
    return subprocess.run(
        ["bash", str(SCRIPT)], env=env, capture_output=True, text=True, timeout=60
    )


def test_answering_services_are_left_alone(tmp_path):
    fake(tmp_path, "pg_isready", "exit 0")
    fake(tmp_path, "pg_ctlcluster", "echo started >&2; exit 99")

    done = run(tmp_path)

    # Redis answers on this machine's loopback (the suite needs it).
    assert (done.returncode, done.stdout, done.stderr) == (0, "", "")


def test_a_stopped_postgresql_is_started(tmp_path):
    started = tmp_path / "started"
    fake(tmp_path, "pg_isready", f"test -e {started}")
    fake(tmp_path, "pg_ctlcluster", f'echo "$@" > {started}')

    done = run(tmp_path)

    assert done.returncode == 0, done.stderr
    assert "PostgreSQL is not answering: starting it" in done.stdout
    assert started.read_text().split()[-2:] == ["main", "start"]


def test_one_that_cannot_be_started_is_said_and_fails(tmp_path):
    fake(tmp_path, "pg_isready", "exit 2")
    fake(tmp_path, "pg_ctlcluster", "exit 1")

    done = run(tmp_path)

    assert done.returncode == 1
    assert (
        "make test needs PostgreSQL on 127.0.0.1 and could not start it" in done.stderr
    )
