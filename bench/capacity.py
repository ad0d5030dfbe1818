"""Part 17 of ``make bench``: the capacity curve (issue 40). For N calls-worker processes
(BENCH_CAPACITY_WORKERS, "1,2,4": the Procfile's ``calls`` command started N times with
distinct ``-n`` names, beside its ``worker`` with the scheduler and the gunicorn of the
run), leads are posted at each sustained rate of BENCH_CAPACITY_RATES in turn (leads/s,
"2,4,6,8,12,16") for BENCH_CAPACITY_WINDOW seconds (30) each, to more agents than calls
under way, with the simulator at BENCH_DIAL_SCALE like part 4. Each step is part 4's
measurement (``bench.dial`` through ``harness.burst_with_cpu``: receipt -> the first agent
leg's dial request, every call played out, the CPU of each process read from /proc), with
no no-op baseline of its own. The knee of N is the highest rate at which that and every
lower rate kept the first dial's p99 under 1 s; the steps above the first miss are not run.

The baseline is N=1 in the same run: N=2 and N=4 are printed as the ratio of their knee
to its. No aim: on 2 cores, N processes cannot scale linearly (each calls worker's pool
is already one process a core, and gunicorn, PostgreSQL and the default worker share the
same cores), so the curve is what is measured; the CPU seconds per lead by process kind
(gunicorn, calls workers, default worker, PostgreSQL's backends of the bench database) at
each N's knee say where the cores went.
"""

from __future__ import annotations

import math
import os
import signal
import statistics
import subprocess
from collections.abc import Callable
from typing import Any

from bench.dialing import BURST_AGENTS, SCALE, base_options, worker_commands
from bench.harness import (
    CELERY_APP,
    LEAD_PHONE,
    ROOT,
    Processes,
    burst_with_cpu,
    flush_redis,
    signal_group,
    step,
    wait_for_worker,
)
from bench.load import percentile
from bench.report import BENCH_DB_BACKENDS

WORKERS = [
    int(n) for n in os.environ.get("BENCH_CAPACITY_WORKERS", "1,2,4").split(",") if n
]
RATES = [
    float(r)
    for r in os.environ.get("BENCH_CAPACITY_RATES", "2,4,6,8,12,16").split(",")
    if r
]
WINDOW = float(os.environ.get("BENCH_CAPACITY_WINDOW", "30"))
# How long a step waits for its first dials (and then for its calls to end).
WAIT = float(os.environ.get("BENCH_CAPACITY_WAIT", "30"))
AIM_MS = 1000.0
# The process kinds the CPU is reported by, in the order printed.
KINDS = ("gunicorn", "calls workers", "default worker", "PostgreSQL")


def calls_worker_commands(n: int, schedule: str) -> dict[str, list[str]]:
    """The Procfile's ``worker`` (with the scheduler) and its ``calls`` command n times,
    each with its own node name."""
    commands = worker_commands(CELERY_APP, str(ROOT / ".venv/bin"), schedule)
    calls = commands.pop("worker-calls")
    for i in range(1, n + 1):
        commands[f"worker-calls-{i}"] = [
            f"calls{i}@%h" if arg == "calls@%h" else arg for arg in calls
        ]
    return commands


def start(n: int, env: dict[str, str], processes: Processes) -> list[str]:
    flush_redis()  # nothing of the step before may reach the new workers
    names = []
    for name, args in calls_worker_commands(n, str(processes.logs / "beat")).items():
        worker = processes.start(name, args, env)
        queue = "default" if name == "worker-default" else "calls"
        wait_for_worker(worker, processes, name, queue)
        names.append(name)
    return names


def stop(names: list[str], processes: Processes) -> None:
    for name, process in [p for p in processes.running if p[0] in names]:
        signal_group(process, signal.SIGTERM)
        try:
            process.wait(timeout=60)
        except subprocess.TimeoutExpired:
            signal_group(process, signal.SIGKILL)
            process.wait(timeout=10)
        processes.running.remove((name, process))


def by_kind(cpu: dict[str, float]) -> dict[str, float]:
    """``burst_with_cpu``'s seconds by process, summed by kind."""
    return {
        "gunicorn": cpu.get("gunicorn", 0.0),
        "calls workers": sum(v for k, v in cpu.items() if k.startswith("worker-calls")),
        "default worker": cpu.get("worker-default", 0.0),
        "PostgreSQL": cpu.get(BENCH_DB_BACKENDS, 0.0),
    }


def step_figures(result: dict[str, Any], count: int) -> dict[str, Any]:
    """p50 and p99 of receipt -> first dial over the ``count`` leads of a step (a lead
    never dialed, or refused, counts as endless)."""
    inf = float("inf")
    firsts = [
        inf if r["first_dial"] is None else r["first_dial"] for r in result["leads"]
    ]
    dialed = sum(f < inf for f in firsts)
    firsts += [inf] * (count - len(firsts))
    p50, p99 = percentile(firsts, 50), percentile(firsts, 99)
    return {"p50": p50, "p99": p99, "dialed": dialed, "ok": p99 < AIM_MS}


def curve(
    n: int, port: int, env: dict[str, str], seed: dict, processes: Processes
) -> list[dict[str, Any]]:
    """The steps run with n calls workers, each with its figures and CPU by kind."""
    names = start(n, env, processes)
    steps = []
    try:
        for rate in RATES:
            count = max(1, round(rate * WINDOW))
            step(f"17 {n} calls worker(s): {rate:g} leads/s for {WINDOW:g} s")
            options = {
                **base_options(port, seed, LEAD_PHONE),
                "vendor_id": seed["dialing_vendor_id"],
                "count": count,
                "rate": rate,
                "clients": max(2, math.ceil(rate / 2)),
                "timeout": WAIT,
                "noop": False,
            }
            result, cpu = burst_with_cpu(env, options, processes)
            figures = step_figures(result, count)
            # The 5 warm-up leads of bench.dial are in the CPU, and counted as leads.
            leads = result["posted"] + 5
            steps.append(
                {
                    "rate": rate,
                    "count": count,
                    "posted": result["posted"],
                    "post_errors": result["post_error_count"],
                    "cpu": {k: v / leads for k, v in by_kind(cpu).items()},
                    **figures,
                }
            )
            if not figures["ok"]:
                break
        for name in names:
            process = next(p for m, p in processes.running if m == name)
            if process.poll() is not None:
                steps[-1]["died"] = f"{name}:\n{processes.log_tail(name)}"
    finally:
        stop(names, processes)
    return steps


def knee(steps: list[dict[str, Any]]) -> dict[str, Any] | None:
    """The step of the highest rate that, with every lower one, kept p99 under the aim."""
    passed = None
    for s in steps:
        if not s["ok"]:
            break
        passed = s
    return passed


def _ms(value: float) -> str:
    return f"{value:,.0f} ms" if value < float("inf") else "not dialed"


def curve_lines(n: int, steps: list[dict[str, Any]]) -> list[str]:
    lines = [f"  17 curve, {n} calls worker(s): rate -> first dial p50 / p99"]
    lines += [
        f"    {s['rate']:>5g} leads/s: {_ms(s['p50']):>10} / {_ms(s['p99']):>10}"
        f"  ({s['dialed']} of {s['count']} dialed, {s['post_errors']} failed posts)"
        + ("" if s["ok"] else "  <- p99 over 1 s")
        for s in steps
    ]
    run = {s["rate"] for s in steps}
    skipped = [f"{r:g}" for r in RATES if r not in run]
    if skipped:
        lines.append(f"    not run (a lower rate missed): {', '.join(skipped)} leads/s")
    lines += [f"    a worker died: {s['died']}" for s in steps if "died" in s]
    return lines


def cpu_line(n: int, s: dict[str, Any] | None) -> str:
    if s is None:
        return f"  17 CPU per lead, {n} calls worker(s): no rate met the aim"
    figures = ", ".join(f"{kind} {s['cpu'][kind] * 1000:,.1f} ms" for kind in KINDS)
    total = sum(s["cpu"].values()) * 1000
    return (
        f"  17 CPU per lead at {s['rate']:g} leads/s, {n} calls worker(s): {figures}; "
        f"{total:,.1f} ms in all"
    )


def measure(
    port: int,
    env: dict[str, str],
    seed: dict,
    processes: Processes,
    row: Callable[..., Any],
) -> tuple[list[Any], list[str]]:
    """Part 17's rows (each N's knee, N>1 against N=1) and details (the curves, the CPU
    per lead by kind); gunicorn is the caller's, the workers are started and stopped here
    (any others are stopped first)."""
    for name in [m for m, _ in processes.running if m.startswith("worker-")]:
        stop([name], processes)
    workers_env = {**env, "SIMULATOR_TIME_SCALE": SCALE}
    curves = {}
    loads = []
    for n in WORKERS:
        curves[n] = curve(n, port, workers_env, seed, processes)
        loads.append(f"{n}: {os.getloadavg()[0]:.1f}")
    rows, details = [], []
    knees = {n: knee(steps) for n, steps in curves.items()}
    base_n = WORKERS[0]
    base = knees[base_n]
    for n in WORKERS:
        k = knees[n]
        if k is None:
            figure = f"< {RATES[0]:g} leads/s"
        elif k is curves[n][-1] and k["rate"] == RATES[-1]:
            figure = f">= {k['rate']:g} leads/s (every rate met)"
        else:
            figure = f"{k['rate']:g} leads/s"
        if n == base_n:
            baseline, ratio = f"the baseline; {WINDOW:g} s a rate", ""
        else:
            baseline = f"{base_n} calls worker(s) " + (
                f"{base['rate']:g} leads/s" if base else f"< {RATES[0]:g} leads/s"
            )
            ratio = f"{k['rate'] / base['rate']:.2f}x" if k and base else "-"
        rows.append(
            row(
                f"17 sustained leads/s, first dial p99 < 1 s, {n} calls worker(s)",
                figure,
                baseline,
                ratio,
            )
        )
    for n in WORKERS:
        details += curve_lines(n, curves[n])
    for n in WORKERS:
        details.append(cpu_line(n, knees[n]))
    details.append(f"  17 load average (1 min) after each N: {'; '.join(loads)}")
    p50s = [s["p50"] for steps in curves.values() for s in steps if s["ok"]]
    if p50s:
        details.append(
            f"  17 first dial p50 over the steps met: {_ms(statistics.median(p50s))}"
        )
    details.append(
        f"  17 notes: {BURST_AGENTS} agents; simulator scale {SCALE}; a step's p99 over "
        f"{round(RATES[0] * WINDOW)}+ leads. This machine has 2 cores shared by gunicorn, "
        "PostgreSQL, Redis, the default worker and every calls worker (each a pool of one "
        "process a core): 2 and 4 calls processes cannot scale linearly here (more "
        "processes add pool slots, not cores); the knee lies between the rate met and "
        "the next one run."
    )
    return rows, details
