"""A call's final status -> its automatic text handed to the provider, against a running
gunicorn and the Procfile's Celery workers (part 11 of ``make bench``).

Run by ``bench/texting.py`` as ``python -m bench.text '<json>'`` in the service's
environment. The account it posts to has no agents, ends a call NOAGENT when nobody can
take it and texts its leads, so every lead's call ends at its first setup and stores a
``no_agent`` text, which the ``calls`` worker sends from the ``calls`` queue. Leads and
``bench_noop`` tasks (on the ``calls`` queue, through the same worker) are sent
interleaved: ``count`` of each, ``rate`` of each a second, by ``clients`` threads.

Prints one JSON object: per call, ms from ``Call.ended_at`` to ``Text.handed_at`` (both
from the database), the no-op round trips (ms from send to start) and the counts of what
never got that far.
"""

from __future__ import annotations

import json
import secrets
import sys
import time
from pathlib import Path
from typing import Any, cast

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from bench.celery_noop import NOOP_STARTED, bench_noop, redis_client  # noqa: E402
from bench.dial import LeadPoster, paced  # noqa: E402  (sets Django up)
from calls.models import Call  # noqa: E402
from texting.models import Purpose, Text  # noqa: E402

POLL = 0.2


def interleaved(
    poster: LeadPoster, count: int, rate: float, clients: int, queue: str = "calls"
) -> tuple[dict[str, float], float]:
    """``count`` leads and ``count`` no-op tasks on ``queue``, alternately, ``rate`` of
    each a second. Returns when each no-op was sent (by key) and how long it all took."""
    run = secrets.token_hex(4)
    sent: dict[str, float] = {}

    def action(index: int) -> None:
        if index % 2:
            key = f"{run}-{index // 2}"
            sent[key] = time.time()
            bench_noop.apply_async(kwargs={"key": key}, queue=queue)
        else:
            poster.post(index // 2)

    started = time.perf_counter()
    paced(2 * count, 2 * rate, clients, action)
    return sent, time.perf_counter() - started


def noop_started(sent: dict[str, float], deadline: float) -> list[float]:
    client = redis_client()
    while True:
        started = {
            k.decode(): float(v)
            for k, v in cast(dict[bytes, bytes], client.hgetall(NOOP_STARTED)).items()
            if k.decode() in sent
        }
        if len(started) == len(sent) or time.monotonic() > deadline:
            break
        time.sleep(POLL)
    return [(started[key] - sent[key]) * 1000 for key in sent if key in started]


def _texts_handed(lead_ids: list[int], deadline: float) -> dict[str, Any]:
    """Once every lead's call has its text handed to the provider (or at the deadline):
    ms from the call's final status to the hand-over, per call, and what fell short."""
    calls = Call.objects.filter(lead__pk__in=lead_ids)
    texts = Text.objects.filter(call__in=calls, purpose=Purpose.NO_AGENT)
    while True:
        handed = texts.filter(handed_at__isnull=False).count()
        if handed >= len(lead_ids) or time.monotonic() > deadline:
            break
        time.sleep(POLL)
    rows = list(
        texts.filter(handed_at__isnull=False, call__ended_at__isnull=False).values_list(
            "handed_at", "call__ended_at"
        )
    )
    statuses: dict[str, int] = {}
    for status in calls.values_list("status", flat=True):
        statuses[status] = statuses.get(status, 0) + 1
    return {
        "latencies": [
            (h - e).total_seconds() * 1000
            for h, e in rows
            if h is not None and e is not None  # filtered so above
        ],
        "calls": calls.count(),
        "call_statuses": statuses,
        "texts": texts.count(),
        "never_handed": texts.filter(handed_at__isnull=True).count(),
    }


def main() -> None:
    options = json.loads(sys.argv[1])
    count, rate, clients = options["count"], options["rate"], options["clients"]
    timeout = float(options["timeout"])
    poster = LeadPoster(
        options["port"],
        options["api_user"],
        options["api_key"],
        options["vendor_id"],
        options["phone"],
    )
    # Warm up: the worker's first text and first no-op pay for imports and connections.
    sent, _ = interleaved(poster, 5, rate, 1)
    warm_noop = noop_started(sent, time.monotonic() + timeout)
    warm = _texts_handed(poster.lead_ids, time.monotonic() + timeout)
    poster.lead_ids.clear()
    poster.batch = secrets.token_hex(4)  # new prospect ids: none may be a duplicate
    sent, seconds = interleaved(poster, count, rate, clients)
    deadline = time.monotonic() + timeout
    noop = noop_started(sent, deadline)
    texts = _texts_handed(poster.lead_ids, deadline)
    print(
        json.dumps(
            {
                "warm_ok": len(warm_noop) == 5 and len(warm["latencies"]) == 5,
                "noop": noop,
                "posted": len(poster.lead_ids),
                "post_seconds": seconds,
                "post_errors": poster.errors[:5],
                "post_error_count": len(poster.errors),
                "timeout": timeout,
                **texts,
            }
        )
    )


if __name__ == "__main__":
    main()
