"""``make bench`` parts 1 and 2: ``GET /api/users/{id}`` and lead intake (``POST /api/nl``)
through gunicorn, each against the bare view (``/healthz``) in the same run, and against
main before issue 22 played the same way just before (bench/before.py). Every endpoint's
CPU per request is read from ``/proc`` (``harness.run_with_cpu``)."""

from __future__ import annotations

import json

from bench import before
from bench.adfdoc import PROSPECT_PLACEHOLDER, lead_form
from bench.harness import (
    DB_NAME,
    LEAD_PHONE,
    PARTS,
    SECONDS,
    Processes,
    python,
    run_with_cpu,
    step,
)
from bench.load import Request, Result, run
from bench.report import Row, before_rows, http_cpu_line, throughput_rows
from bench.seeds import outcomes as outcomes_script
from bench.seeds import script


def http_requests(seed: dict) -> dict[str, Request]:
    """The bare view and parts 1 and 2's requests, for the service seeded with ``seed``."""
    auth = {"apiuser": seed["api_user"], "apikey": seed["key"]}
    return {
        "bare": Request("GET", "/healthz", {}),
        "users": Request("GET", f"/api/users/{seed['user']}", auth),
        "intake": Request(
            "POST",
            "/api/nl",
            {"Content-Type": "application/x-www-form-urlencoded"},
            lead_form(
                api_user=seed["api_user"],
                api_key=seed["key"],
                prospect_id=PROSPECT_PLACEHOLDER,
                vendor_id=seed["vendor_id"],
                phone=LEAD_PHONE,
            ),
            unique=PROSPECT_PLACEHOLDER.encode(),
        ),
    }


HttpRuns = dict[str, tuple[Result, dict[str, float]]]


def run_endpoints(
    port: int, seed: dict, gunicorn: int, database: str = DB_NAME
) -> HttpRuns:
    """The bare view and the endpoints of the parts asked for, each with its CPU per
    request (``run_with_cpu``), after a warm-up of every worker."""
    requests = http_requests(seed)
    names = ["bare"] + [
        n for n, part in (("users", "1"), ("intake", "2")) if part in PARTS
    ]
    for name in names:
        run(port, requests[name], seconds=1)  # warm up every worker
    return {
        name: run_with_cpu(port, requests[name], gunicorn, database) for name in names
    }


def measure(
    port: int,
    env: dict[str, str],
    seed: dict,
    processes: Processes,
    old_code: before.Before,
) -> tuple[list[Row], list[str]]:
    step(
        f"HTTP: gunicorn {env['GUNICORN_WORKERS']} workers x {env.get('GUNICORN_THREADS', '4')} threads;"
        f" {SECONDS:.0f} s per endpoint, 2x4 clients, a connection per request"
    )
    then = old_code.http(run_endpoints)
    if not isinstance(then, str):
        step("HTTP: today's code")
    gunicorn = next(p.pid for name, p in processes.running if name == "gunicorn")
    now = run_endpoints(port, seed, gunicorn)
    baseline, bare_cpu = now["bare"]
    rows: list[Row] = []
    errors = [f"bare view {baseline.errors}"]
    cpu = [http_cpu_line("bare view", bare_cpu)]
    for name, part, label, aim in (
        ("users", "1", "1 GET /api/users/{id}", 0.5),
        ("intake", "2", "2 POST /api/nl (lead intake)", 0.3),
    ):
        if name not in now:
            continue
        result, used = now[name]
        rows += throughput_rows(label, result, baseline, aim)
        rows += before_rows(label, now[name], then, name)
        errors.append(f"{name} {result.errors}")
        if name == "intake":
            outcomes = json.loads(
                python(env, script(outcomes_script), str(seed["account"]))
            )
            errors[-1] += f"; intake lead outcomes (warm-up included): {outcomes}"
        cpu.append(http_cpu_line(f"{part} {name}", used, bare_cpu, aim))
    if isinstance(then, str):
        cpu.append(f"    before issue 22: {then}")
    else:
        cpu += [
            http_cpu_line(f"{name} before issue 22", used)
            for name, (_, used) in then.items()
        ]
        errors += [
            f"{name} before issue 22 {result.errors}"
            for name, (result, _) in then.items()
        ]
    return rows, [
        f"  HTTP errors: {', '.join(errors)}",
        "  HTTP CPU per request, ms, read from /proc (gunicorn's workers, the bench"
        " database's backends, Redis, the load generator; all): the two cores are"
        " saturated, so a ratio r against the bare view leaves an endpoint the bare"
        " view's CPU / r in all",
        *cpu,
    ]
