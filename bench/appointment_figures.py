"""``make bench`` part 16: the dashboard's appointment figures (set, show and no-show rates
by agent, source and account against the previous period), its two speed numbers and the
leaderboard ranked on the first human, for an account with 100,000 calls and 20,000
appointments; and the manager's appointments of its busiest day. In one process, through
Django's test client, against the dashboard's rollup figures alone (the page before the
appointment and speed figures) and the bare view (``/healthz``), measured the same way in
the same run. Aim: the dashboard's own (issue 22), under 300 ms at the median, for both
pages. Runs alone (``BENCH_PARTS=16``) or after the other parts.
"""

from __future__ import annotations

import json
import os
from collections.abc import Callable

from bench.seeds import appointments as appointments_script
from bench.seeds import script

CALLS = int(os.environ.get("BENCH_APPOINTMENT_CALLS", "100000"))
APPOINTMENTS = int(os.environ.get("BENCH_APPOINTMENTS", "20000"))
TIMES = int(os.environ.get("BENCH_APPOINTMENT_TIMES", "15"))
AIM_MS = 300.0


def measure(python: Callable[..., str]) -> tuple[list[tuple], list[str]]:
    """Rows (measure, figure, baseline, ratio, aim, met) and detail lines of part 16."""
    # Production settings serve static files through a manifest that collectstatic writes.
    python("manage.py", "collectstatic", "--noinput", "-v0")
    found = json.loads(
        python(script(appointments_script), str(CALLS), str(APPOINTMENTS), str(TIMES))
    )
    page, page_slowest = found["dashboard"]
    figures, _ = found["figures"]
    day, day_slowest = found["day"]
    bare, _ = found["bare"]
    scale = f"{CALLS:,} calls, {APPOINTMENTS:,} appointments"
    return [
        (
            f"16 dashboard with appointment figures p50 ({scale}, 30 days)",
            f"{page:,.0f} ms",
            f"rollup figures alone {figures:,.0f} ms",
            f"{page / figures:.1f}x",
            f"< {AIM_MS:g} ms",
            page < AIM_MS,
        ),
        (
            f"16 the day's appointments p50 ({found['listed']:,} that day)",
            f"{day:,.0f} ms",
            f"bare view {bare:,.1f} ms",
            f"{day / bare:.1f}x",
            f"< {AIM_MS:g} ms",
            day < AIM_MS,
        ),
    ], [
        f"  16 dashboard: {found['queries']} queries, slowest of {TIMES} "
        f"{page_slowest:,.0f} ms; day page ({found['busiest']}) slowest {day_slowest:,.0f} ms; "
        "in one process through Django's test client (no HTTP server)"
    ]
