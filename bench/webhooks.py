"""Part 7 of ``make bench``: a call's final status -> the receiver getting its
``call_completed`` webhook, against the round trip of a no-op task through the same
broker and the webhooks worker.

``measure_webhooks`` (called by ``bench/run.py``) runs this module as ``python -m
bench.webhooks '<json>'`` in the service's environment. That process starts a local HTTPS
receiver (the tests' one), a Celery worker on the ``webhooks`` queue trusting its
certificate, and a pipeline worker of four processes; registers an endpoint for
the dialing account's organization, then measures ``count`` no-op tasks sent to the
``webhooks`` queue (ms from send to start) and ``count`` leads posted as part 4 does (for
each call, ms from ``Call.ended_at`` to the receiver getting its ``call_completed``). It
prints one JSON object and stops its workers (with their process groups) before exiting.
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
# The customer's number, as part 4's: the simulator answers it and the call ends fast.
LEAD_PHONE = "303-555-0147"

POLL = 0.2


def _receiver_class() -> Any:
    from tests.webhooks.receiver import Receiver

    class TimedReceiver(Receiver):
        """Notes when each ``call_completed`` arrived, by call id."""

        def __init__(self, directory: Path) -> None:
            self.arrived: dict[int, float] = {}
            super().__init__(directory)

        def record(self, received: Any) -> None:
            now = time.time()
            event = received.event
            if event["type"] == "call_completed":
                self.arrived.setdefault(event["call"]["id"], now)
            super().record(received)

    return TimedReceiver


def start_worker(
    env: dict[str, str], log: Path, queue: str, concurrency: int
) -> subprocess.Popen:
    return subprocess.Popen(
        [
            str(ROOT / ".venv/bin/celery"),
            "-A",
            "bench.celery_noop",
            "worker",
            "-Q",
            queue,
            "-n",
            f"bench-{queue.replace(',', '-')}-{os.getpid()}@%h",
            f"--concurrency={concurrency}",
            "--without-gossip",
            "--without-mingle",
            "--loglevel=INFO",
        ],
        cwd=ROOT,
        env=env,
        stdout=log.open("wb"),
        stderr=subprocess.STDOUT,
        start_new_session=True,
    )


def _run(options: dict) -> dict:
    import django

    django.setup()
    from accounts.models import Organization
    from bench.dial import LeadPoster, paced
    from calls.models import Call
    from webhooks.services import webhook_endpoint_create

    folder = Path(tempfile.mkdtemp(prefix="leadcall-bench-webhooks-"))
    receiver = _receiver_class()(folder)
    env = {
        **os.environ,
        "WEBHOOK_ALLOWED_ADDRESSES": "127.0.0.1",
        "WEBHOOK_CA_BUNDLE": str(receiver.cert),
    }
    # One webhooks process, the least a deployment runs; the pipeline gets four, so that
    # every call ends within the run (one process cannot play 10 calls a second through).
    workers = {
        queue: start_worker(
            env, folder / f"{queue.replace(',', '-')}.log", queue, concurrency
        )
        for queue, concurrency in (("webhooks", 1), ("events,calls,default", 4))
    }
    try:
        deadline = time.monotonic() + 60
        for queue, worker in workers.items():
            log = folder / f"{queue.replace(',', '-')}.log"
            while " ready." not in log.read_text(errors="replace"):
                if worker.poll() is not None or time.monotonic() > deadline:
                    raise SystemExit(
                        f"the {queue} worker did not start:\n{log.read_text()}"
                    )
                time.sleep(POLL)
        from django.conf import settings

        settings.WEBHOOK_ALLOWED_ADDRESSES = ["127.0.0.1"]  # the receiver's address
        webhook_endpoint_create(
            organization=Organization.objects.get(pk=options["organization"]),
            url=receiver.url("/bench"),
        )
        count, rate, clients = options["count"], options["rate"], options["clients"]
        noop = _noop_on_webhooks(count, rate, clients, options["timeout"])
        poster = LeadPoster(
            options["port"],
            options["api_user"],
            options["api_key"],
            options["vendor_id"],
            options["phone"],
        )
        paced(count, rate, clients, poster.post)
        calls = list(
            Call.objects.filter(lead__pk__in=poster.lead_ids).values_list(
                "pk", flat=True
            )
        )
        deadline = time.monotonic() + options["timeout"]
        while time.monotonic() < deadline and not all(
            c in receiver.arrived for c in calls
        ):
            time.sleep(POLL)
        ended = {
            pk: at
            for pk, at in Call.objects.filter(
                pk__in=calls, ended_at__isnull=False
            ).values_list("pk", "ended_at")
            if at is not None  # filtered so above
        }
        latencies = [
            (receiver.arrived[c] - ended[c].timestamp()) * 1000
            for c in calls
            if c in receiver.arrived and c in ended
        ]
        return {
            "noop": noop,
            "completed": latencies,
            "calls": len(calls),
            "posted": len(poster.lead_ids),
            "post_errors": poster.errors[:5],
            "received": len(receiver.received),
            "timeout": options["timeout"],
        }
    finally:
        for worker in workers.values():
            if worker.poll() is None:
                os.killpg(worker.pid, signal.SIGTERM)
        for worker in workers.values():
            try:
                worker.wait(timeout=30)
            except subprocess.TimeoutExpired:
                os.killpg(worker.pid, signal.SIGKILL)
        receiver.stop()


def _noop_on_webhooks(
    count: int, rate: float, clients: int, timeout: float
) -> list[float]:
    """The no-op round trip through the same broker and the webhooks worker."""
    from bench.celery_noop import bench_noop
    from bench.dial import noop_latencies

    original = bench_noop.apply_async

    def on_webhooks(*args, **kwargs):  # type: ignore[no-untyped-def]
        # Part 4's no-op names the calls queue; this one goes to the webhooks worker.
        return original(*args, **{**kwargs, "queue": "webhooks"})

    bench_noop.apply_async = on_webhooks  # type: ignore[method-assign]
    try:
        return noop_latencies(count, rate, clients, timeout)
    finally:
        bench_noop.apply_async = original  # type: ignore[method-assign]


# --- in bench/run.py's process -----------------------------------------------------------


def measure_webhooks(
    port: int, env: dict[str, str], seed: dict, options: dict[str, Any]
) -> tuple[list[tuple[Any, ...]], list[str]]:
    """Part 7's rows (fields of bench/run.py's Row) and detail lines."""
    from bench.load import percentile

    print(
        f"... 7 call final status -> call_completed at the receiver: {options['count']} leads",
        flush=True,
    )
    out = subprocess.run(
        [sys.executable, "-m", "bench.webhooks", json.dumps({
            "port": port,
            "organization": seed["org"],
            "api_user": seed["api_user"],
            "api_key": seed["key"],
            "vendor_id": seed["dialing_vendor_id"],
            "phone": LEAD_PHONE,
            **options,
        })],
        cwd=ROOT, env=env, check=True, capture_output=True, text=True,
    ).stdout  # fmt: skip
    result = json.loads(out)
    inf = float("inf")
    count = options["count"]
    completed = result["completed"] + [inf] * (count - len(result["completed"]))
    noop = result["noop"] + [inf] * (count - len(result["noop"]))
    rows: list[tuple[Any, ...]] = []
    for p in (50, 99):
        figure, base = percentile(completed, p), percentile(noop, p)
        late = f"> {result['timeout']:.0f} s"
        rows.append(
            (
                f"7 call final status -> call_completed received p{p}",
                f"{figure:,.1f} ms" if figure < inf else late,
                f"no-op task round trip (webhooks queue) p{p} "
                + (f"{base:,.1f} ms" if base < inf else late),
                f"{figure / base:.1f}x" if figure < inf and base < inf else "-",
                "< 1,000 ms" if p == 99 else "",
                figure < 1000 if p == 99 else None,
            )
        )
    details = [
        f"  {result['posted']} leads accepted, {result['calls']} calls, "
        f"{len(result['completed'])} call_completed timed, {result['received']} "
        f"deliveries received in all; failed posts: {result['post_errors'] or 'none'}"
    ]
    return rows, details


if __name__ == "__main__":
    sys.path.insert(0, str(ROOT))
    print(json.dumps(_run(json.loads(sys.argv[1]))))
