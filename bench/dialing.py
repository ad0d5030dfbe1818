"""``make bench`` part 4, the call pipeline's latencies, each next to the no-op task round
trip measured the same way through the same broker and worker, in one run:

(a) a burst of leads (as fast as the clients post) with more agents than leads:
    receipt -> first agent dial;
(b) leads arriving faster than the agents can take them: an agent's leg ended -> the next
    waiting call offered to that agent (the hand-over), and how many leads waited and
    how long, so capacity and latency are not confused;
(c) (a) and (b) again beside two CPU-bound processes.

The workers are the Procfile's: one on the ``events`` and ``calls`` queues,
one on ``default`` with the scheduler. Simulated calls run at ``BENCH_DIAL_SCALE`` (0.01:
a talk of 0.3 to 3 s), so in (b) agents are really busy. Used by ``bench/run.py`` (part 11
on the same workers).
"""

from __future__ import annotations

import json
import os
import statistics
import subprocess
import sys
from collections.abc import Callable
from typing import Any

from bench.load import percentile

BURST_LEADS = int(os.environ.get("BENCH_DIAL_LEADS", "200"))
BURST_CLIENTS = int(os.environ.get("BENCH_DIAL_CLIENTS", "4"))
# (a) needs an agent free for every lead.
BURST_AGENTS = BURST_LEADS + 20
QUEUE_LEADS = int(os.environ.get("BENCH_QUEUE_LEADS", "100"))
# (b) 4 agents take about 2.4 calls/s at the scale below; leads come at twice that.
QUEUE_AGENTS = int(os.environ.get("BENCH_QUEUE_AGENTS", "4"))
QUEUE_RATE = float(os.environ.get("BENCH_QUEUE_RATE", "5"))
SCALE = os.environ.get("BENCH_DIAL_SCALE", "0.01")
WAIT = float(os.environ.get("BENCH_DIAL_WAIT", "120"))
HOG = "while True: pass"

Row = (
    Any  # bench.run.Row: built by the caller's factory, to keep this module standalone
)


def worker_commands(app: str, venv_bin: str, schedule: str) -> dict[str, list[str]]:
    """The Procfile's two workers, on the bench's Celery app."""
    celery = [f"{venv_bin}/celery", "-A", app, "worker", "--without-gossip"]
    return {
        "worker-calls": [
            *celery,
            "-Q",
            # callbacks first, then dials, then texts to leads (the Procfile's `calls`)
            "events,calls",
            "-n",
            "calls@%h",
            "--loglevel=WARNING",
        ],
        "worker-default": [
            *celery,
            "-B",
            "--schedule",
            schedule,
            "-Q",
            "default",
            "-n",
            "default@%h",
            "--loglevel=WARNING",
        ],
    }


def run_part(env: dict[str, str], options: dict[str, Any]) -> dict[str, Any]:
    result = subprocess.run(
        [sys.executable, "-m", "bench.dial", json.dumps(options)],
        env=env,
        check=True,
        capture_output=True,
        text=True,
    )
    return dict(json.loads(result.stdout))


def base_options(port: int, seed: dict[str, Any], phone: str) -> dict[str, Any]:
    """What every part posting leads through ``bench.dial`` shares: the server, the seeded
    credential and the lead's phone."""
    return {
        "port": port,
        "api_user": seed["api_user"],
        "api_key": seed["key"],
        "phone": phone,
    }


def burst_options(base: dict[str, Any], seed: dict[str, Any]) -> dict[str, Any]:
    return {
        **base,
        "vendor_id": seed["dialing_vendor_id"],
        "count": BURST_LEADS,
        "rate": 0,
        "clients": BURST_CLIENTS,
        "timeout": WAIT,
    }


def queue_options(base: dict[str, Any], seed: dict[str, Any]) -> dict[str, Any]:
    return {
        **base,
        "vendor_id": seed["queue_vendor_id"],
        "count": QUEUE_LEADS,
        "rate": QUEUE_RATE,
        "clients": 2,
        "timeout": WAIT,
        "hand_over": True,
    }


def _p(values: list[float], p: int) -> float:
    return percentile(values, p) if values else float("nan")


def first_dials_ms(burst: dict[str, Any]) -> tuple[float, float]:
    """A burst's receipt -> first agent dial, p50 and p99 (a lead never dialed counts as
    endless)."""
    inf = float("inf")
    firsts = [
        r["first_dial"] if r["first_dial"] is not None else inf for r in burst["leads"]
    ]
    firsts += [inf] * (BURST_LEADS - len(firsts))
    return _p(firsts, 50), _p(firsts, 99)


def rows_for(
    names: tuple[str, str],
    suffix: str,
    burst: dict[str, Any],
    queued: dict[str, Any],
    make_row: Callable[..., Row],
    ms: Callable[[float], str],
) -> tuple[list[Row], list[str]]:
    """The table rows and details of one (a)+(b) measurement."""
    inf = float("inf")
    firsts = [
        r["first_dial"] if r["first_dial"] is not None else inf for r in burst["leads"]
    ]
    firsts += [inf] * (BURST_LEADS - len(firsts))
    noop = burst["noop"] + [inf] * (BURST_LEADS - len(burst["noop"]))
    q_noop = queued["noop"] or [inf]
    rows = []
    for p in (50, 99):
        figure, base = _p(firsts, p), _p(noop, p)
        rows.append(
            make_row(
                f"{names[0]} burst: receipt -> first agent dial p{p}{suffix}",
                ms(figure) if figure < inf else "not dialed",
                f"no-op p{p} {ms(base)}",
                f"{figure / base:.1f}x" if figure < inf and base < inf else "-",
                "<= 2x no-op" if p == 99 else "",
                figure <= 2 * base if p == 99 else None,
            )
        )
    gaps = queued.get("hand_overs", [])
    for p in (50, 99):
        figure = _p(gaps, p)
        rows.append(
            make_row(
                f"{names[1]} queue: agent free -> next call offered p{p}{suffix}",
                ms(figure) if gaps else "none seen",
                f"no-op p{p} {ms(_p(q_noop, p))}",
                f"{figure / _p(q_noop, p):.1f}x" if gaps else "-",
                "< 1,000 ms" if p == 99 else "",
                (figure < 1000) if p == 99 and gaps else (False if p == 99 else None),
            )
        )
    waits = queued.get("waits", [])
    details = [
        f"  {names[0]}{suffix}: burst of {burst['posted']} leads posted in {burst['post_seconds']:.1f} s "
        f"({burst['posted'] / max(burst['post_seconds'], 1e-9):.0f} leads/s) to {BURST_AGENTS} agents, "
        f"{len([f for f in firsts if f < inf])} first dials seen; {burst['post_error_count']} failed posts",
        f"  {names[1]}{suffix}: queue of {queued['posted']} leads at {QUEUE_RATE:g}/s to {QUEUE_AGENTS} agents "
        f"(simulator scale {SCALE}): {len(waits)} waited for an agent"
        + (
            f", receipt -> first dial p50 {ms(statistics.median(waits))}, "
            f"p99 {ms(_p(waits, 99))}, max {ms(max(waits))}"
            if waits
            else ""
        )
        + f"; {queued.get('unfinished', 0)} calls not ended within {WAIT:.0f} s",
    ]
    for key, text in (
        ("intake", "request: receipt -> lead processed"),
        ("to_setup", "broker + worker pick-up + call_setup -> agent leg created"),
        ("dial", "agent leg created -> dial requested"),
    ):
        values = [r[key] for r in burst["leads"] if r[key] is not None]
        if values:
            details.append(
                f"    burst {text:<58} p50 {ms(statistics.median(values)):>10}  p99 {ms(_p(values, 99)):>10}"
            )
    return rows, details
