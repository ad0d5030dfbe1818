"""Part 15 of ``make bench``: due rows handed to the provider at their time. BENCH_DUE_LEADS
leads (2,000), each with an appointment reminder and a follow-up text step, all falling
due within BENCH_DUE_WINDOW seconds (600) of real time, on the Procfile's two workers
(the ``default`` one running the scheduler, -B) with the simulator provider: p50 and p99
of (handed to the provider - due time), for the reminders and the steps, with the
scheduler's one-second tick (the figure) against the same rows with the 10 s sweep only
(``DUE_SCHEDULER=false``: the baseline, each run on fresh workers and its own dealer).
Aim: p99 <= 1 s. BENCH_DUE_WINDOW=60 BENCH_DUE_LEADS=200 runs it in about four minutes.
"""

from __future__ import annotations

import json
import os
import time
from collections.abc import Callable
from typing import Any

from bench.load import percentile
from bench.seeds import due as due_seed
from bench.seeds import script

COUNT = int(os.environ.get("BENCH_DUE_LEADS", "2000"))
WINDOW = float(os.environ.get("BENCH_DUE_WINDOW", "600"))
# The first rows fall due this long after seeding: the workers are up by then.
START = 20.0
# After the last row's due time: the baseline's sweep runs every 10 s.
SLACK = 20.0
AIM_MS = 1000.0


def _run(
    *,
    scheduler: bool,
    sender: str,
    env: dict[str, str],
    python: Callable[..., str],
    start_workers: Callable[[dict[str, str]], Any],
    stop_workers: Callable[[], None],
) -> dict[str, Any]:
    mode = {**env, "DUE_SCHEDULER": "true" if scheduler else "false"}
    start_workers(mode)
    try:
        seeded = json.loads(
            python(
                mode,
                script(due_seed),
                "seed",
                str(COUNT),
                str(START),
                str(WINDOW),
                sender,
            )
        )
        deadline = time.monotonic() + START + WINDOW + SLACK
        collect = ["collect", str(seeded["account_id"])]
        while True:
            result: dict[str, Any] = json.loads(
                python(mode, script(due_seed), *collect)
            )
            done = len(result["reminders"]) + len(result["steps"]) >= 2 * COUNT
            if done or time.monotonic() > deadline:
                return result
            time.sleep(5)
    finally:
        stop_workers()


def _cells(values: list[float], count: int, p: float) -> str:
    timed = values + [float("inf")] * (count - len(values))
    value = percentile(timed, p)
    return "never" if value == float("inf") else f"{value:,.1f} ms"


def measure(
    env: dict[str, str],
    python: Callable[..., str],
    start_workers: Callable[[dict[str, str]], Any],
    stop_workers: Callable[[], None],
) -> tuple[list[tuple[Any, ...]], list[str]]:
    """Part 15's rows (fields of bench/run.py's Row) and detail lines."""
    runs = {
        scheduler: _run(
            scheduler=scheduler,
            sender="+17205559901" if scheduler else "+17205559902",
            env=env,
            python=python,
            start_workers=start_workers,
            stop_workers=stop_workers,
        )
        for scheduler in (True, False)
    }
    rows: list[tuple[Any, ...]] = []
    for kind, label in (("reminders", "reminder"), ("steps", "follow-up step")):
        for p in (50, 99):
            figure = runs[True][kind] + [float("inf")] * (COUNT - len(runs[True][kind]))
            base = runs[False][kind] + [float("inf")] * (COUNT - len(runs[False][kind]))
            mine, theirs = percentile(figure, p), percentile(base, p)
            ratio = f"{mine / theirs:.2f}x" if theirs not in (0, float("inf")) else "-"
            aim = f"<= {AIM_MS:,.0f} ms" if p == 99 else ""
            rows.append(
                (
                    f"15 {label} due -> handed to provider p{p}",
                    _cells(runs[True][kind], COUNT, p),
                    _cells(runs[False][kind], COUNT, p),
                    ratio,
                    aim,
                    (mine <= AIM_MS) if p == 99 else None,
                )
            )
    details = [
        f"  15 {COUNT} leads, a reminder and a follow-up step each, due over {WINDOW:g} s; "
        f"handed: {len(runs[True]['reminders'])} reminders and "
        f"{len(runs[True]['steps'])} steps (scheduler), "
        f"{len(runs[False]['reminders'])} and {len(runs[False]['steps'])} (10 s sweep only)"
    ]
    for scheduler, name in ((True, "scheduler"), (False, "sweep only")):
        both = runs[scheduler]["reminders"] + runs[scheduler]["steps"]
        if both:
            details.append(
                f"  15 {name}: earliest {min(both):,.1f} ms, latest {max(both):,.1f} ms"
            )
    return rows, details
