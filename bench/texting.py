"""Part 11 of ``make bench``: a call's final status -> its automatic text handed to the
provider (the simulator), p50 and p99 over BENCH_TEXTS calls, against a no-op task's round
trip through the same broker, the same ``calls`` queue and the same worker (the Procfile's
``calls`` worker, which consumes ``events,calls``).

``measure`` (called by ``bench/run.py`` once gunicorn and the Procfile's workers run)
seeds a dealer in its own organization that texts its leads (quiet hours 00:00-23:59, a
high limit per lead) and has no agents, with ``no_agent_policy="end"``: each lead posted
to ``/api/nl`` ends NOAGENT at its first setup and stores a ``no_agent`` text, so what is
timed is the text's path alone. The leads go at BENCH_TEXT_RATE a second, interleaved
with as many no-op tasks (bench/text.py).
"""

from __future__ import annotations

import json
import os
from collections.abc import Callable
from pathlib import Path
from typing import Any

from bench.against_noop import noop_line, posted_line, rows_against_noop, run_module
from bench.seeds import script
from bench.seeds import texting as texting_seed

ROOT = Path(__file__).resolve().parent.parent
COUNT = int(os.environ.get("BENCH_TEXTS", "200"))
# Leads (and no-op tasks) a second: a moderate pace, well within what the workers end.
RATE = float(os.environ.get("BENCH_TEXT_RATE", "5")) or 5.0
CLIENTS = 2
WAIT = float(os.environ.get("BENCH_TEXT_WAIT", "120"))
# The customer's number: no simulated reply to its texts (not 0001, 0002 or 0004).
LEAD_PHONE = "303-555-0147"
AIM_MS = 1000.0


def measure(
    port: int, env: dict[str, str], python: Callable[..., str]
) -> tuple[list[tuple[Any, ...]], list[str]]:
    """Part 11's rows (fields of bench/run.py's Row) and detail lines."""
    limit = min(32767, max(1000, 2 * (COUNT + 5)))
    seed = json.loads(python(env, script(texting_seed), str(limit)))
    options = {
        "port": port,
        "api_user": seed["api_user"],
        "api_key": seed["key"],
        "vendor_id": seed["vendor_id"],
        "phone": LEAD_PHONE,
        "count": COUNT,
        "rate": RATE,
        "clients": CLIENTS,
        "timeout": WAIT,
    }
    result = run_module("bench.text", options, env)
    rows = rows_against_noop(
        result,
        count=COUNT,
        measure="11 call final status -> text handed to provider",
        queue="calls",
        aim_ms=AIM_MS,
    )
    details = [
        f"{posted_line(result, part='11', rate=RATE)}, {result['texts']} no_agent texts "
        f"stored, {len(result['latencies'])} handed and timed, {result['never_handed']} "
        f"never handed within {result['timeout']:.0f} s; "
        + noop_line(result, count=COUNT)
    ]
    if result["latencies"]:
        details.append(
            f"  11 call final status -> text handed: max {max(result['latencies']):,.1f} ms"
        )
    return rows, details
