"""``make bench`` part 8: the pages over 100,000 calls. The call browser's first page and the
speed-to-lead dashboard (a 30-day range holding every call), signed in as a global manager,
against the bare Django view (``/healthz``) measured the same way in the same run.

One client at a time (no queueing behind other requests), so a request's latency on
loopback is the server's time for it. Aims: call browser under 150 ms (issue 10), dashboard
under 300 ms (issue 22), at the median.
"""

from __future__ import annotations

import json
import os
from collections.abc import Callable

from bench.load import Request, Result, run
from bench.seeds import pages as pages_seed
from bench.seeds import script

CALLS = int(os.environ.get("BENCH_PAGE_CALLS", "100000"))
SECONDS = float(os.environ.get("BENCH_PAGE_SECONDS", "5"))
AIMS_MS = {"call browser": 150.0, "dashboard": 300.0}


def _row(label: str, result: Result, bare: Result, aim: float | None) -> tuple:
    return (
        f"8 {label} p50 (server time, {CALLS:,} calls)",
        f"{result.median:,.1f} ms",
        f"bare view {bare.median:,.1f} ms",
        f"{result.median / bare.median:.1f}x",
        f"< {aim:g} ms" if aim else "",
        None if aim is None else result.median < aim,
    )


def measure(port: int, python: Callable[..., str]) -> tuple[list[tuple], list[str]]:
    """Rows (measure, figure, baseline, ratio, aim, met) and detail lines of part 8."""
    # Production settings serve static files through a manifest that collectstatic writes.
    python("manage.py", "collectstatic", "--noinput", "-v0")
    # Two accounts' calls, the dashboard's rollup and a global manager's session.
    seed = json.loads(python(script(pages_seed), str(CALLS)))
    cookie = {"Cookie": f"sessionid={seed['session']}"}
    requests = {
        "bare view": Request("GET", "/healthz", {}),
        "call browser": Request("GET", "/calls/", cookie),
        "dashboard": Request(
            "GET",
            f"/dashboard/?date_from={seed['first']}&date_to={seed['last']}",
            cookie,
        ),
    }
    results: dict[str, Result] = {}
    for name, request in requests.items():
        run(port, request, seconds=1, processes=1, threads=1)  # warm up
        results[name] = run(port, request, seconds=SECONDS, processes=1, threads=1)
    bare = results["bare view"]
    rows = []
    for name, aim in AIMS_MS.items():
        rows.append(_row(name, results[name], bare, aim))
        result = results[name]
        rows.append(
            (
                f"8 {name} p90",
                f"{result.percentile(90):,.1f} ms",
                f"bare view {bare.percentile(90):,.1f} ms",
                f"{result.percentile(90) / bare.percentile(90):.1f}x",
                "",
                None,
            )
        )
    errors = ", ".join(f"{name} {result.errors}" for name, result in results.items())
    return rows, [
        f"  pages: one client at a time, {SECONDS:g} s each; errors: {errors}",
        f"  8 dashboard rollup of the {CALLS:,} calls built by rebuild_rollup in "
        f"{seed['rollup']:,.1f} s (the seed's bulk inserts bypass the services that keep it)",
    ]
