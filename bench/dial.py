"""Lead receipt -> first agent dial, and agent free -> next waiting call offered, against
a running gunicorn and the Procfile's Celery workers.

Run by ``bench/dialing.py`` as ``python -m bench.dial '<json>'`` in the service's
environment (Django is set up here, to send ``bench_noop`` and to read the calls back).
Prints one JSON object: the latencies, in ms, of the no-op task baseline and of the leads,
a breakdown of where each lead's time went and, with ``"hand_over": true``, the hand-overs
(an agent's leg ended while calls waited -> that agent's next leg dialed) and the waits.

Both are sent the same way: ``count`` of them, the i-th not before ``i / rate`` seconds
after the start (rate 0: as fast as the clients go), by ``clients`` threads.
"""

from __future__ import annotations

import http.client
import itertools
import json
import secrets
import sys
import threading
import time
from collections.abc import Callable
from datetime import datetime
from pathlib import Path
from typing import Any, cast

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

import django  # noqa: E402

django.setup()

from bench.adfdoc import lead_form  # noqa: E402
from bench.celery_noop import NOOP_STARTED, bench_noop, redis_client  # noqa: E402
from calls.models import Call, CallAttempt, Leg  # noqa: E402
from leads.models import Lead  # noqa: E402

POLL = 0.2


def paced(count: int, rate: float, clients: int, action: Callable[[int], None]) -> None:
    """``action(i)`` for every i < count, the i-th not before start + i / rate."""
    lock = threading.Lock()
    following = iter(range(count))
    start = time.perf_counter() + 0.05

    def loop() -> None:
        while True:
            with lock:
                index = next(following, None)
            if index is None:
                return
            if rate:
                delay = start + index / rate - time.perf_counter()
                if delay > 0:
                    time.sleep(delay)
            action(index)

    threads = [threading.Thread(target=loop) for _ in range(clients)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()


def noop_latencies(
    count: int, rate: float, clients: int, timeout: float
) -> list[float]:
    """ms from ``apply_async`` to the worker starting ``bench_noop``, for each of ``count``."""
    run = secrets.token_hex(4)
    sent: dict[str, float] = {}

    def send(index: int) -> None:
        key = f"{run}-{index}"
        sent[key] = time.time()
        # On the queue call setup uses, through the same worker.
        bench_noop.apply_async(kwargs={"key": key}, queue="calls")

    paced(count, rate, clients, send)
    client = redis_client()
    deadline = time.monotonic() + timeout
    while True:
        started = {
            k.decode(): float(v)
            for k, v in cast(dict[bytes, bytes], client.hgetall(NOOP_STARTED)).items()
            if k.decode() in sent
        }
        if len(started) == count or time.monotonic() > deadline:
            break
        time.sleep(POLL)
    return [(started[key] - sent[key]) * 1000 for key in sent if key in started]


class LeadPoster:
    def __init__(
        self, port: int, api_user: str, api_key: str, vendor_id: str, phone: str
    ):
        self.port, self.api_user, self.api_key = port, api_user, api_key
        self.vendor_id, self.phone = vendor_id, phone
        self.batch = secrets.token_hex(4)
        self.lead_ids: list[int] = []
        self.errors: list[str] = []
        self.lock = threading.Lock()

    def post(self, index: int) -> None:
        body = lead_form(
            api_user=self.api_user,
            api_key=self.api_key,
            prospect_id=f"D{self.batch}-{index}",
            vendor_id=self.vendor_id,
            phone=self.phone,
        )
        conn = http.client.HTTPConnection("127.0.0.1", self.port, timeout=30)
        try:
            conn.request(
                "POST",
                "/api/nl",
                body=body,
                headers={"Content-Type": "application/x-www-form-urlencoded"},
            )
            response = conn.getresponse()
            answer = response.read()
        except OSError as error:
            with self.lock:
                self.errors.append(repr(error))
            return
        finally:
            conn.close()
        try:
            parsed = json.loads(answer)
        except ValueError:
            parsed = {}
        with self.lock:
            if (
                response.status == 200
                and "leadId" in parsed
                and "duplicate" not in parsed
            ):
                self.lead_ids.append(int(parsed["leadId"]))
            else:
                self.errors.append(f"{response.status} {answer[:200]!r}")


def _ms(later: datetime | None, earlier: datetime | None) -> float | None:
    if later is None or earlier is None:
        return None
    return (later - earlier).total_seconds() * 1000


def first_dials(lead_ids: list[int], timeout: float) -> list[dict[str, float | None]]:
    """Per lead, once its call's first agent leg was dialed (or at the timeout): receipt
    -> first dial, and the stages in between (ms)."""
    leads = list(
        Lead.objects.filter(pk__in=lead_ids).values(
            "pk", "received_at", "processed_at", "call_id", "call__received_at"
        )
    )
    call_ids = [lead["call_id"] for lead in leads if lead["call_id"]]
    first: dict[int, Any] = {}
    deadline = time.monotonic() + timeout
    while True:
        pending = [c for c in call_ids if c not in first]
        seen: set[int] = set()
        # Only each call's first agent leg counts (lowest id), once it was dialed.
        for attempt in (
            CallAttempt.objects.filter(call_id__in=pending, leg=Leg.AGENT)
            .order_by("pk")
            .values("call_id", "created_at", "dial_requested_at")
        ):
            if attempt["call_id"] in seen:
                continue
            seen.add(attempt["call_id"])
            if attempt["dial_requested_at"] is not None:
                first[attempt["call_id"]] = attempt
        if len(first) == len(call_ids) or time.monotonic() > deadline:
            break
        time.sleep(POLL)
    rows = []
    for lead in leads:
        leg = first.get(lead["call_id"])
        dialed = leg["dial_requested_at"] if leg else None
        rows.append(
            {
                "first_dial": _ms(dialed, lead["call__received_at"]),
                "intake": _ms(lead["processed_at"], lead["received_at"]),
                "to_setup": _ms(
                    attempt["created_at"] if attempt else None, lead["processed_at"]
                ),
                "dial": _ms(dialed, attempt["created_at"] if attempt else None),
            }
        )
    return rows


def hand_overs(
    lead_ids: list[int], timeout: float
) -> dict[str, list[float | None] | int]:
    """Once these leads' calls ended (or at the timeout): for each agent leg that ended
    while a call that agent then took was already waiting, ms from that end to the
    agent's next leg being dialed; and each waiting call's receipt -> first dial."""
    settle(lead_ids, timeout)
    calls = dict(
        Call.objects.filter(lead__pk__in=lead_ids).values_list("pk", "received_at")
    )
    legs = list(
        CallAttempt.objects.filter(call_id__in=calls, leg=Leg.AGENT)
        .order_by("agent_id", "created_at", "pk")
        .values("agent_id", "call_id", "dial_requested_at", "ended_at")
    )
    gaps, waits = [], []
    for before, after in itertools.pairwise(legs):
        if before["agent_id"] != after["agent_id"]:
            continue
        if before["ended_at"] is None or after["dial_requested_at"] is None:
            continue
        if calls[after["call_id"]] < before["ended_at"]:  # it was waiting
            gaps.append(_ms(after["dial_requested_at"], before["ended_at"]))
            waits.append(_ms(after["dial_requested_at"], calls[after["call_id"]]))
    return {
        "hand_overs": gaps,
        "waits": waits,
        "unfinished": Call.objects.filter(pk__in=calls, ended_at__isnull=True).count(),
    }


def settle(lead_ids: list[int], timeout: float) -> None:
    """Until the calls of these leads have ended (the simulator has played them out), so
    their events no longer hold up the worker."""
    deadline = time.monotonic() + timeout
    calls = Call.objects.filter(lead__pk__in=lead_ids)
    while calls.filter(ended_at__isnull=True).exists() and time.monotonic() < deadline:
        time.sleep(POLL)
    time.sleep(0.5)  # the last events' follow-ups (recording, agent hang-up)


def main() -> None:
    options = json.loads(sys.argv[1])
    count, rate, clients = options["count"], options["rate"], options["clients"]
    timeout = float(options.get("timeout", 60))
    poster = LeadPoster(
        options["port"],
        options["api_user"],
        options["api_key"],
        options["vendor_id"],
        options["phone"],
    )
    # Warm up: the worker's first task and the first call setup pay for imports and connections.
    warm_noop = noop_latencies(5, 0, 1, timeout)
    paced(5, 0, 1, poster.post)
    warm = first_dials(poster.lead_ids, timeout)
    settle(poster.lead_ids, timeout)
    poster.lead_ids.clear()
    poster.batch = secrets.token_hex(4)  # new prospect ids: none may be a duplicate
    started = time.perf_counter()
    # ``"noop": false``: no baseline of no-op tasks (part 17 steps the rate, its baseline
    # is another run of itself).
    noop = (
        noop_latencies(count, rate, clients, timeout)
        if options.get("noop", True)
        else []
    )
    noop_seconds = time.perf_counter() - started
    started = time.perf_counter()
    paced(count, rate, clients, poster.post)
    post_seconds = time.perf_counter() - started
    rows = first_dials(poster.lead_ids, timeout)
    after = hand_overs(poster.lead_ids, timeout) if options.get("hand_over") else {}
    if options.get("settle"):
        settle(poster.lead_ids, timeout)  # every call played out: its whole CPU counted
    print(
        json.dumps(
            {
                "warm_ok": len(warm_noop) == 5
                and all(r["first_dial"] is not None for r in warm),
                "noop": noop,
                "noop_seconds": noop_seconds,
                "posted": len(poster.lead_ids),
                "post_seconds": post_seconds,
                "post_errors": poster.errors[:5],
                "post_error_count": len(poster.errors),
                "leads": rows,
                "timeout": timeout,
                **after,
            }
        )
    )


if __name__ == "__main__":
    main()
