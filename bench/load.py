"""A small closed-loop HTTP load generator: N processes x M threads, each request on its own
connection (gunicorn's sync workers close every connection anyway). Prints nothing itself."""

from __future__ import annotations

import http.client
import multiprocessing
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
        ordered = sorted(self.latencies_ms)
        return (
            ordered[min(len(ordered) - 1, int(len(ordered) * p / 100))]
            if ordered
            else float("nan")
        )

    @property
    def median(self) -> float:
        return (
            statistics.median(self.latencies_ms) if self.latencies_ms else float("nan")
        )


@dataclass(frozen=True)
class Request:
    method: str
    path: str
    headers: dict[str, str]
    body: bytes | None = None
    expect: int = 200


def _worker(
    port: int,
    request: Request,
    seconds: float,
    threads: int,
    queue: multiprocessing.Queue,
) -> None:
    lock = threading.Lock()
    latencies: list[float] = []
    errors = [0]
    deadline = time.perf_counter() + seconds

    def loop() -> None:
        local: list[float] = []
        bad = 0
        while time.perf_counter() < deadline:
            started = time.perf_counter()
            conn = http.client.HTTPConnection("127.0.0.1", port, timeout=30)
            try:
                conn.request(
                    request.method,
                    request.path,
                    body=request.body,
                    headers=request.headers,
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

    pool = [threading.Thread(target=loop) for _ in range(threads)]
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
    started = time.perf_counter()
    procs = [
        multiprocessing.Process(
            target=_worker, args=(port, request, seconds, threads, queue)
        )
        for _ in range(processes)
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
