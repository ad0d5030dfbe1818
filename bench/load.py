"""A small closed-loop HTTP load generator: N processes x M threads, each request on its own
connection, as a lead sender's or CRM's one-off request makes it (gunicorn's threaded
workers would keep it alive). Prints nothing itself.

A request body may carry a placeholder (``Request.unique``): every request then replaces it
with a token no other request of any run shares (``<run>p<process>t<thread>n<count>``,
letters and digits only, so it survives URL encoding), e.g. a lead's prospect id.
"""

from __future__ import annotations

import http.client
import itertools
import multiprocessing
import secrets
import statistics
import threading
import time
from dataclasses import dataclass


@dataclass
class Result:
    requests: int
    errors: int
    seconds: float
    latencies_ms: list[float]

    @property
    def rate(self) -> float:
        return self.requests / self.seconds

    def percentile(self, p: float) -> float:
        return percentile(self.latencies_ms, p)

    @property
    def median(self) -> float:
        return (
            statistics.median(self.latencies_ms) if self.latencies_ms else float("nan")
        )


def percentile(values: list[float], p: float) -> float:
    """The nearest-rank ``p``th percentile; NaN for no values."""
    ordered = sorted(values)
    if not ordered:
        return float("nan")
    return ordered[min(len(ordered) - 1, int(len(ordered) * p / 100))]


@dataclass(frozen=True)
class Request:
    method: str
    path: str
    headers: dict[str, str]
    body: bytes | None = None
    expect: int = 200
    # A placeholder in ``body`` replaced with a distinct token on every request.
    unique: bytes | None = None

    def body_for(self, token: str) -> bytes | None:
        if self.body is None or self.unique is None:
            return self.body
        return self.body.replace(self.unique, token.encode("ascii"))


def _worker(
    port: int,
    request: Request,
    seconds: float,
    threads: int,
    queue: multiprocessing.Queue,
    prefix: str,
) -> None:
    lock = threading.Lock()
    latencies: list[float] = []
    errors = [0]
    deadline = time.perf_counter() + seconds

    def loop(thread: int) -> None:
        local: list[float] = []
        bad = 0
        for count in itertools.count():
            if time.perf_counter() >= deadline:
                break
            body = request.body_for(f"{prefix}t{thread}n{count}")
            started = time.perf_counter()
            conn = http.client.HTTPConnection("127.0.0.1", port, timeout=30)
            try:
                conn.request(
                    request.method, request.path, body=body, headers=request.headers
                )
                response = conn.getresponse()
                response.read()
                if response.status != request.expect:
                    bad += 1
            except OSError:
                bad += 1
            finally:
                conn.close()
            local.append((time.perf_counter() - started) * 1000)
        with lock:
            latencies.extend(local)
            errors[0] += bad

    pool = [threading.Thread(target=loop, args=(i,)) for i in range(threads)]
    for t in pool:
        t.start()
    for t in pool:
        t.join()
    queue.put((latencies, errors[0]))


def run(
    port: int,
    request: Request,
    *,
    seconds: float = 5.0,
    processes: int = 2,
    threads: int = 4,
) -> Result:
    """Hammer one endpoint for ``seconds``; returns throughput and latencies."""
    queue: multiprocessing.Queue = multiprocessing.Queue()
    run_id = secrets.token_hex(4)
    started = time.perf_counter()
    procs = [
        multiprocessing.Process(
            target=_worker,
            args=(port, request, seconds, threads, queue, f"{run_id}p{index}"),
            daemon=True,
        )
        for index in range(processes)
    ]
    for p in procs:
        p.start()
    latencies: list[float] = []
    errors = 0
    for _ in procs:
        lat, err = queue.get()
        latencies.extend(lat)
        errors += err
    for p in procs:
        p.join()
    return Result(len(latencies), errors, time.perf_counter() - started, latencies)
