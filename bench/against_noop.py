"""Parts 11 and 12 of ``make bench`` time one path of a call's end (a text handed to the
provider, a write-back at the SMTP server) against a no-op task through the same queue
and worker: their rows are built the same way, here."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path
from typing import Any

from bench.load import percentile

ROOT = Path(__file__).resolve().parent.parent


def run_module(module: str, options: dict[str, Any], env: dict[str, str]) -> dict:
    """``python -m module '<options>'`` in the service's environment: its JSON result."""
    out = subprocess.run(
        [sys.executable, "-m", module, json.dumps(options)],
        cwd=ROOT, env=env, check=True, capture_output=True, text=True,
    ).stdout  # fmt: skip
    return dict(json.loads(out))


def rows_against_noop(
    result: dict[str, Any],
    *,
    count: int,
    measure: str,
    queue: str,
    aim_ms: float,
) -> list[tuple[Any, ...]]:
    """p50 and p99 of ``result["latencies"]`` beside the no-op round trips (a figure
    missing counts as never: the percentiles then say "> timeout")."""
    inf = float("inf")
    timed = result["latencies"] + [inf] * (count - len(result["latencies"]))
    noop = result["noop"] + [inf] * (count - len(result["noop"]))
    late = f"> {result['timeout']:.0f} s"
    rows: list[tuple[Any, ...]] = []
    for p in (50, 99):
        figure, base = percentile(timed, p), percentile(noop, p)
        rows.append(
            (
                f"{measure} p{p}",
                f"{figure:,.1f} ms" if figure < inf else late,
                f"no-op task round trip ({queue} queue) p{p} "
                + (f"{base:,.1f} ms" if base < inf else late),
                f"{figure / base:.1f}x" if figure < inf and base < inf else "-",
                f"< {aim_ms:,.0f} ms" if p == 99 else "",
                figure < aim_ms if p == 99 else None,
            )
        )
    return rows


def posted_line(result: dict[str, Any], *, part: str, rate: float) -> str:
    """The detail line's start: the leads posted and the calls they became."""
    return (
        f"  {part}: {result['posted']} leads accepted in {result['post_seconds']:.1f} s "
        f"({rate:g}/s, interleaved with as many no-op tasks), {result['calls']} calls "
        f"{result['call_statuses']}"
    )


def noop_line(result: dict[str, Any], *, count: int) -> str:
    """The detail line's end: the no-ops, the warm-up and the failed posts."""
    return (
        f"{len(result['noop'])} of {count} no-ops started; warm-up "
        f"{'ok' if result['warm_ok'] else 'INCOMPLETE'}; failed posts: "
        f"{result['post_errors'] or 'none'}"
    )
