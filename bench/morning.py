"""``make bench`` part 13: the morning report's build time for an account with 100,000 calls.

Seeds its own organization in the bench database (one account, America/Denver, 100,000
calls over 30 days: about 3,300 a day, three in four answered, half of those scored, a few
with alert tags, one agent leg per call, twenty agents and a manager; the dashboard's
rollup built up to yesterday, as its sweep keeps it), then times, in one
process, ``report_build`` of yesterday for the manager (p50 over BUILDS builds) against
``dashboard_figures`` of the same day for the same manager (the dashboard page's own work,
which the report does twice: the day and the same weekday a week before). Aim (issue 21):
under 1 s. Runs alone (``BENCH_PARTS=13``) or after the other parts.
"""

from __future__ import annotations

import json
import os
from collections.abc import Callable

from bench.seeds import morning as morning_script
from bench.seeds import script

CALLS = int(os.environ.get("BENCH_MORNING_CALLS", "100000"))
BUILDS = int(os.environ.get("BENCH_MORNING_BUILDS", "7"))
AIM_MS = 1000.0
# Part 13 runs by default too (the harness's default list of parts predates it).


def measure(python: Callable[..., str]) -> tuple[list[tuple], list[str]]:
    """Rows (measure, figure, baseline, ratio, aim, met) and detail lines of part 13."""
    found = json.loads(python(script(morning_script), str(CALLS), str(BUILDS)))
    build, slowest = found["build"]
    dashboard, _ = found["dashboard"]
    return [
        (
            f"13 morning report build p50 (an account with {CALLS:,} calls, one day)",
            f"{build:,.0f} ms",
            f"dashboard figures {dashboard:,.0f} ms",
            f"{build / dashboard:.1f}x",
            f"< {AIM_MS:g} ms",
            build < AIM_MS,
        )
    ], [
        f"  13 morning report: {found['leads']:,} leads that day, {found['queries']} queries, "
        f"slowest of {BUILDS} builds {slowest:,.0f} ms, HTML {found['html'] / 1000:,.0f} kB, "
        f"charts {found['images'] / 1000:,.0f} kB (base64), {found['coaching']} calls to coach"
    ]
