"""Counting rate-limit hits from threads, in this process or in one of its own (started with
multiprocessing's spawn, so it sets Django up as a server process does); for
tests/test_rate_limits_under_load.py."""

from __future__ import annotations

import os
import threading
from typing import Any


def count_in_process(
    key: str,
    *,
    threads: int,
    hits: int,
    cache_dir: str,
    start: Any,
    answers: Any,
) -> None:
    """Put on ``answers`` every count ``hit`` answered for ``hits`` hits on ``key`` from each
    of ``threads`` threads, started once every process waits on the ``start`` barrier. With
    ``cache_dir``, on the embedded default's cache in that directory, else on the test
    settings' Redis."""
    os.environ["DJANGO_SETTINGS_MODULE"] = "config.settings.test"
    if cache_dir:
        os.environ["EMBEDDED_CACHE_DIR"] = cache_dir
    import django

    django.setup()
    answers.put(hit_from_threads(key, threads=threads, hits=hits, start=start))


def hit_from_threads(
    key: str, *, threads: int, hits: int, start: Any = None
) -> list[int]:
    """Every count ``hit`` answered for ``hits`` hits on ``key`` from each of ``threads``
    threads started together (once ``start``, a barrier shared with other processes, opens)."""
    from django.core.cache import caches

    from core.throttling import hit

    ready = threading.Barrier(threads)
    answered: list[int] = []
    lock = threading.Lock()

    def run() -> None:
        caches["default"]  # each thread's own connection, opened before the start
        ready.wait(timeout=60)
        counts = [hit(key, 60) for _ in range(hits)]
        with lock:
            answered.extend(counts)

    workers = [threading.Thread(target=run) for _ in range(threads)]
    if start is not None:
        start.wait(timeout=120)
    for worker in workers:
        worker.start()
    for worker in workers:
        worker.join()
    return answered
