"""Part 14 of ``make bench``: fair queues per dealer and the carrier's pace (issue 40),
on gunicorn and the Procfile's two Celery workers, each figure against a baseline of the
same run:

(a) fairness: the busy dealer posts BENCH_FAIR_BURST leads at once (2,000; it has no
    agents, so each call's setup is all it costs, ending NOAGENT) while the quiet dealer
    posts BENCH_FAIR_QUIET leads at one a second: the quiet dealer's receipt -> first dial
    p99 against the same leads with the busy dealer silent. Aim: within 2x.
(b) the carrier's pace: the workers again with TELEPHONY_CALLS_PER_SECOND=BENCH_PACE (5);
    the busy dealer posts BENCH_PACE_BURST leads at once to its BENCH_PACE_AGENTS agents
    while the quiet dealer posts as in (a): the most agent dials in any one second (aim:
    at most the pace), the quiet dealer's share of the dials while both dealers had calls
    waiting, and its first-dial p99 against (b)'s own baseline with the busy dealer
    silent (every dial waits for a token there too).

The simulator plays its calls at BENCH_DIAL_SCALE like part 4.
"""

from __future__ import annotations

import json
import os
import signal
from collections.abc import Callable
from typing import Any

from bench.against_noop import run_module
from bench.dialing import SCALE
from bench.harness import Processes, signal_group, start_workers, step
from bench.load import percentile
from bench.seeds import fairness as fairness_seed
from bench.seeds import script

BURST = int(os.environ.get("BENCH_FAIR_BURST", "2000"))
QUIET = int(os.environ.get("BENCH_FAIR_QUIET", "60"))
QUIET_RATE = 1.0
PACE = int(os.environ.get("BENCH_PACE", "5"))
PACE_BURST = int(os.environ.get("BENCH_PACE_BURST", "200"))
PACE_AGENTS = int(os.environ.get("BENCH_PACE_AGENTS", "20"))
CLIENTS = 4
WAIT = float(os.environ.get("BENCH_FAIR_WAIT", "300"))
AIM_RATIO = 2.0


def _stop_workers(processes: Processes) -> None:
    for name, process in list(processes.running):
        if name.startswith("worker-"):
            signal_group(process, signal.SIGTERM)
            process.wait(timeout=60)
            processes.running.remove((name, process))


def _run(
    port: int, env: dict[str, str], busy: dict, quiet: dict, burst: int
) -> dict[str, Any]:
    options = {
        "port": port,
        "busy_dealer": busy,
        "quiet_dealer": quiet,
        "burst": burst,
        "quiet_leads": QUIET,
        "quiet_rate": QUIET_RATE,
        "clients": CLIENTS,
        "timeout": WAIT,
    }
    return run_module("bench.fair", options, env)


def _p99(result: dict[str, Any]) -> float:
    inf = float("inf")
    timed = [inf if v is None else v for v in result["quiet_first_dials"]]
    return percentile(timed, 99)


def _max_in_a_second(dials: list[list[Any]]) -> int:
    times = [at for at, _ in dials]
    most, start = 0, 0
    for end, at in enumerate(times):
        while at - times[start] >= 1.0:
            start += 1
        most = max(most, end - start + 1)
    return most


def _quiet_share(result: dict[str, Any]) -> tuple[int, int]:
    """The quiet dealer's dials and all dials, between its first dial and its last (when
    both dealers had calls waiting)."""
    dials, quiet = result["dials"], result["quiet_account"]
    mine = [at for at, account in dials if account == quiet]
    if not mine:
        return 0, len(dials)
    during = [d for d in dials if mine[0] <= d[0] <= mine[-1]]
    return len(mine), len(during)


def measure(
    port: int,
    env: dict[str, str],
    python: Callable[..., str],
    processes: Processes,
    row: Callable[..., Any],
) -> tuple[list[Any], list[str]]:
    """Part 14's rows and detail lines; the Procfile's workers are started (and left
    running with the pace of (b)) here."""
    seed = json.loads(
        python(env, script(fairness_seed), str(PACE_AGENTS), str(QUIET + 10))
    )
    busy, quiet = seed["busy"], seed["quiet"]
    workers_env = {**env, "SIMULATOR_TIME_SCALE": SCALE}
    _stop_workers(processes)
    start_workers(workers_env, processes)
    rows, details = [], []

    step(f"14a the quiet dealer alone: {QUIET} leads at {QUIET_RATE:g}/s")
    alone = _run(port, env, busy, quiet, 0)
    step(f"14a the quiet dealer beside a burst of {BURST} leads of the busy dealer")
    loaded = _run(port, env, busy, quiet, BURST)
    p_alone, p_loaded = _p99(alone), _p99(loaded)
    rows.append(
        row(
            "14a quiet dealer's receipt -> first dial p99, beside a burst",
            f"{p_loaded:,.1f} ms",
            f"quiet dealer alone {p_alone:,.1f} ms",
            f"{p_loaded / p_alone:.2f}x",
            f"<= {AIM_RATIO:g}x",
            p_loaded <= AIM_RATIO * p_alone,
        )
    )
    details.append(
        f"  14a: burst posted {loaded['posted']['busy']} leads, quiet "
        f"{loaded['posted']['quiet']} in {loaded['post_seconds']:.1f} s; unfinished "
        f"calls {loaded['unfinished']}; failed posts {loaded['post_errors'] or 'none'}"
    )

    # (b): the busy dealer with agents, and the workers with the pace.
    busy = seed["busy_paced"]
    _stop_workers(processes)
    start_workers({**workers_env, "TELEPHONY_CALLS_PER_SECOND": str(PACE)}, processes)
    step(f"14b pace {PACE}/s: the quiet dealer alone")
    paced_alone = _run(port, env, busy, quiet, 0)
    step(
        f"14b pace {PACE}/s: beside a burst of {PACE_BURST} leads to {PACE_AGENTS} agents"
    )
    paced = _run(port, env, busy, quiet, PACE_BURST)
    most = _max_in_a_second(paced["dials"])
    rows.append(
        row(
            "14b most agent dials in any one second",
            str(most),
            f"the pace, {PACE}/s",
            f"{most / PACE:.2f}x",
            f"<= {PACE}",
            most <= PACE,
        )
    )
    pa, pl = _p99(paced_alone), _p99(paced)
    rows.append(
        row(
            "14b quiet dealer's receipt -> first dial p99, paced, beside a burst",
            f"{pl:,.1f} ms",
            f"quiet dealer alone, paced {pa:,.1f} ms",
            f"{pl / pa:.2f}x",
            f"<= {AIM_RATIO:g}x",
            pl <= AIM_RATIO * pa,
        )
    )
    mine, during = _quiet_share(paced)
    details.append(
        f"  14b: the quiet dealer had {mine} of the {during} dials placed between its "
        f"first and its last; {len(paced['dials'])} dials in all; unfinished calls "
        f"{paced['unfinished']}; failed posts {paced['post_errors'] or 'none'}"
    )
    return rows, details
