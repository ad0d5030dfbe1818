"""The Celery app of the bench's worker: the service's own app, so every task of the apps
runs as in production, plus ``bench_noop``, which only records when a worker started it.

Start it with ``celery -A bench.celery_noop worker``; the bench sends ``bench_noop`` through
the same broker to measure the bare broker-to-worker hop.
"""

from __future__ import annotations

import os
import time
from functools import cache

import redis

from config.celery import app

NOOP_STARTED = "bench:noop:started"


@cache
def redis_client() -> redis.Redis:
    return redis.Redis.from_url(os.environ["REDIS_URL"])


@app.task(name="bench_noop", ignore_result=True, acks_late=True)
def bench_noop(*, key: str) -> None:
    """Record the moment a worker started this task under ``key``."""
    redis_client().hset(NOOP_STARTED, key, repr(time.time()))


__all__ = ["app", "bench_noop"]
