"""Part 14's runs (``bench/fairness.py``), in the service's environment: the quiet dealer
posts ``quiet_leads`` leads at ``quiet_rate`` a second while (unless ``burst`` is 0) the
busy dealer posts ``burst`` leads at once (as fast as ``clients`` threads go). Prints one JSON
object: the quiet dealer's receipt -> first agent dial (ms, None when never), and every
agent dial of both dealers' calls (seconds since the first, and whose), once all calls
have ended or at the timeout.

Run as ``python -m bench.fair '<json>'``.
"""

from __future__ import annotations

import json
import secrets
import sys
import threading
import time
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from bench.dial import LeadPoster, first_dials, paced  # noqa: E402  (sets Django up)
from calls.models import Call, CallAttempt, Leg  # noqa: E402


def poster(options: dict[str, Any], dealer: dict[str, Any], phone: str) -> LeadPoster:
    return LeadPoster(
        options["port"], dealer["api_user"], dealer["key"], dealer["vendor_id"], phone
    )


def main() -> None:
    options = json.loads(sys.argv[1])
    timeout = float(options["timeout"])
    quiet = poster(options, options["quiet_dealer"], "303-555-0148")
    busy = poster(options, options["busy_dealer"], "303-555-0149")
    # Warm up: the workers' first setups pay for imports and connections.
    paced(3, 0, 1, quiet.post)
    first_dials(quiet.lead_ids, timeout)
    quiet.lead_ids.clear()
    quiet.batch = secrets.token_hex(4)  # new prospect ids: none may be a duplicate
    burst = threading.Thread(
        target=paced, args=(options["burst"], 0, options["clients"], busy.post)
    )
    started = time.perf_counter()
    burst.start()
    paced(options["quiet_leads"], options["quiet_rate"], 1, quiet.post)
    burst.join()
    posted = time.perf_counter() - started
    rows = first_dials(quiet.lead_ids, timeout)
    lead_ids = quiet.lead_ids + busy.lead_ids
    calls = Call.objects.filter(lead__pk__in=lead_ids)
    deadline = time.monotonic() + timeout
    while calls.filter(ended_at__isnull=True).exists() and time.monotonic() < deadline:
        time.sleep(0.5)
    dials = sorted(
        (at.timestamp(), account)
        for at, account in CallAttempt.objects.filter(
            call__in=calls, leg=Leg.AGENT, dial_requested_at__isnull=False
        ).values_list("dial_requested_at", "call__account_id")
        if at is not None
    )
    print(
        json.dumps(
            {
                "quiet_first_dials": [r["first_dial"] for r in rows],
                "posted": {"quiet": len(quiet.lead_ids), "busy": len(busy.lead_ids)},
                "post_errors": (quiet.errors + busy.errors)[:5],
                "post_seconds": posted,
                "unfinished": calls.filter(ended_at__isnull=True).count(),
                "dials": dials,
                "quiet_account": options["quiet_dealer"]["account"],
            }
        )
    )


if __name__ == "__main__":
    main()
