"""``make bench`` part 9: recovery after each fault, from the fault tests themselves
(tests/calls/test_faults.py and test_procfile_faults.py: real processes, the shipped
defaults, the simulator at 0.05), and the figures those tests write beside: intake's p99
and the first dial with the broker down, and an overload's setups a call, NOAGENT calls
and late callbacks.

Each test writes how long its calls took to reach a final status after its fault ended
(``FAULT_RECOVERY_LOG``); this runs them with the test settings (their own database and
Redis, as ``make test``) and reports each time against the aim (60 s), next to the same
burst settling with no fault at all. The time includes the calls' own talk (1.5 to 15 s
at this scale) and, for the overload, the backlog the agents work through.
Used by ``bench/run.py``.
"""

from __future__ import annotations

import json
import os
import subprocess
import tempfile
from collections.abc import Callable
from pathlib import Path
from typing import Any

AIM_SECONDS = 60.0
# The overload of tests/calls/test_procfile_faults.py at bench size: a minute of leads at
# about twice what the Procfile's processes end on two cores (about 3 calls a second), with
# agents to spare. The test's own default is a shorter run.
OVERLOAD = {
    "OVERLOAD_RATE": os.environ.get("BENCH_OVERLOAD_RATE", "6"),
    "OVERLOAD_SECONDS": os.environ.get("BENCH_OVERLOAD_SECONDS", "60"),
    "OVERLOAD_AGENTS": os.environ.get("BENCH_OVERLOAD_AGENTS", "300"),
}
CONTROL = "no fault"


def measure(root: Path, make_row: Callable[..., Any]) -> tuple[list[Any], list[str]]:
    with tempfile.TemporaryDirectory(prefix="leadcall-faults-") as folder:
        log = Path(folder) / "recovery.jsonl"
        env = {**os.environ, "FAULT_RECOVERY_LOG": str(log)}
        env.pop("DJANGO_SETTINGS_MODULE", None)  # pytest's own (config.settings.test)
        result = subprocess.run(
            [
                str(root / ".venv/bin/pytest"),
                "-p",
                "no:xdist",
                "-q",
                "-p",
                "no:cacheprovider",
                str(root / "tests/calls/test_faults.py"),
                str(root / "tests/calls/test_procfile_faults.py"),
            ],
            cwd=root,
            env={**env, **OVERLOAD},
            capture_output=True,
            text=True,
        )
        times = (
            [json.loads(line) for line in log.read_text().splitlines()]
            if log.exists()
            else []
        )
    measures = [t for t in times if "measure" in t]
    times = [t for t in times if "fault" in t]
    control = next(
        (t["seconds"] for t in times if t["fault"].startswith(CONTROL)), None
    )
    baseline = (
        f"no fault {control:,.1f} s" if control is not None else "no fault: not run"
    )
    rows = [
        make_row(
            f"9 recovery: {t['fault']}",
            f"{t['seconds']:,.1f} s",
            baseline,
            f"{t['seconds'] / control:.1f}x" if control else "-",
            f"<= {AIM_SECONDS:g} s",
            t["seconds"] <= AIM_SECONDS,
        )
        for t in times
        if not t["fault"].startswith(CONTROL)
    ]
    rows += [
        make_row(
            f"9 {m['measure']}",
            m["figure"],
            m["baseline"],
            m["ratio"],
            m["aim"],
            m["met"],
        )
        for m in measures
    ]
    summary = result.stdout.strip().splitlines()[-1:] if result.stdout else []
    details = [f"  9: fault tests: {' '.join(summary) or 'no output'}"]
    if result.returncode != 0:
        details.append(f"  9: the fault tests failed:\n{result.stdout[-3000:]}")
    return rows, details
