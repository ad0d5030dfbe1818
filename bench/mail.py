"""A call's final status -> its CRM write-back received by the SMTP server, against a
running gunicorn and the Procfile's Celery workers (part 12 of ``make bench``).

Run by ``bench/writeback.py`` as ``python -m bench.mail '<json>'`` in the service's
environment, whose EMAIL_URL names the loopback port this process serves SMTP on
(aiosmtpd). The account it posts to has no agents and ends a call NOAGENT when nobody can
take it, and writes each call's end back to its CRM: every lead's call ends at its first
setup and stores a write-back, which the ``worker`` process (the ``default`` queue) sends.
Leads and ``bench_noop`` tasks on the ``default`` queue go interleaved.

Prints one JSON object: per call, ms from ``Call.ended_at`` to the message's arrival at
the SMTP server, the no-op round trips (ms from send to start), what fell short, and how
many received write-backs are invalid against the ADF 1.0 DTD (checked after the timing).
"""

from __future__ import annotations

import json
import re
import secrets
import sys
import threading
import time
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from aiosmtpd.controller import Controller  # noqa: E402

from bench.dial import LeadPoster  # noqa: E402  (sets Django up)
from bench.text import interleaved, noop_started  # noqa: E402
from bench.writeback import invalid_adf_reasons  # noqa: E402
from calls.models import Call  # noqa: E402
from notify.models import Message  # noqa: E402

POLL = 0.2
MESSAGE_ID = re.compile(rb"^Message-ID: <notify-(\d+)-", re.MULTILINE | re.IGNORECASE)


class Arrivals:
    """When each message arrived (by its Message id), as the SMTP server accepted it."""

    def __init__(self) -> None:
        self.at: dict[int, float] = {}
        self.contents: list[bytes] = []
        self.lock = threading.Lock()

    async def handle_DATA(self, server: Any, session: Any, envelope: Any) -> str:
        arrived = time.time()
        found = MESSAGE_ID.search(envelope.content)
        if found:
            with self.lock:
                self.at.setdefault(int(found.group(1)), arrived)
                self.contents.append(envelope.content)
        return "250 OK"


def _written_back(
    arrivals: Arrivals, lead_ids: list[int], deadline: float
) -> dict[str, object]:
    calls = Call.objects.filter(lead__pk__in=lead_ids)
    while True:
        with arrivals.lock:
            seen = set(arrivals.at)
        messages = dict(
            Message.objects.filter(call__in=calls).values_list("pk", "call__ended_at")
        )
        if (len(messages) >= len(lead_ids) and set(messages) <= seen) or (
            time.monotonic() > deadline
        ):
            break
        time.sleep(POLL)
    latencies = [
        (arrivals.at[pk] - ended.timestamp()) * 1000
        for pk, ended in messages.items()
        if pk in arrivals.at and ended is not None
    ]
    statuses: dict[str, int] = {}
    for status in calls.values_list("status", flat=True):
        statuses[status] = statuses.get(status, 0) + 1
    return {
        "latencies": latencies,
        "calls": calls.count(),
        "call_statuses": statuses,
        "messages": len(messages),
        "never_received": len(set(messages) - set(arrivals.at)),
    }


def main() -> None:
    options = json.loads(sys.argv[1])
    count, rate, clients = options["count"], options["rate"], options["clients"]
    timeout = float(options["timeout"])
    arrivals = Arrivals()
    server = Controller(arrivals, hostname="127.0.0.1", port=options["smtp_port"])
    server.start()
    try:
        poster = LeadPoster(
            options["port"],
            options["api_user"],
            options["api_key"],
            options["vendor_id"],
            options["phone"],
        )
        # Warm up: the worker's first message and no-op pay for imports and connections.
        sent, _ = interleaved(poster, 5, rate, 1, queue="default")
        warm_noop = noop_started(sent, time.monotonic() + timeout)
        warm = _written_back(arrivals, poster.lead_ids, time.monotonic() + timeout)
        poster.lead_ids.clear()
        poster.batch = secrets.token_hex(4)  # new prospect ids: none may be a duplicate
        sent, seconds = interleaved(poster, count, rate, clients, queue="default")
        deadline = time.monotonic() + timeout
        noop = noop_started(sent, deadline)
        result = _written_back(arrivals, poster.lead_ids, deadline)
    finally:
        server.stop()
    invalid = [r for r in map(invalid_adf_reasons, arrivals.contents) if r]
    print(
        json.dumps(
            {
                "warm_ok": len(warm_noop) == 5 and len(warm["latencies"]) == 5,  # type: ignore[arg-type]
                "noop": noop,
                "posted": len(poster.lead_ids),
                "post_seconds": seconds,
                "post_errors": poster.errors[:5],
                "post_error_count": len(poster.errors),
                "timeout": timeout,
                "received": len(arrivals.contents),
                "invalid_adf": len(invalid),
                "invalid_reason": invalid[0][0] if invalid else "",
                **result,
            }
        )
    )


if __name__ == "__main__":
    main()
