"""Per-credential rate limits, counted in the shared cache (Redis in production).

A fixed one-window counter: one atomic INCR a request, so every process agrees.
"""

from __future__ import annotations

import time
from typing import Any

from django.conf import settings
from django.core.cache import caches
from django.core.cache.backends.redis import RedisCache
from rest_framework.throttling import BaseThrottle

_PERIODS = {
    "s": 1,
    "sec": 1,
    "second": 1,
    "m": 60,
    "min": 60,
    "minute": 60,
    "h": 3600,
    "hour": 3600,
    "d": 86400,
    "day": 86400,
}


def parse_rate(rate: str) -> tuple[int, int]:
    """``"600/min"`` -> ``(600, 60)``."""
    count, _, period = rate.partition("/")
    return int(count), _PERIODS[period.strip().lower()]


def hit(key: str, period: int) -> int:
    """Count one hit on ``key`` in the current window; returns the window's count."""
    backend: Any = caches["default"]
    if isinstance(backend, RedisCache):
        full_key = backend.make_and_validate_key(key)
        client = backend._cache.get_client(full_key, write=True)
        count = client.incr(full_key)
        if count == 1:
            client.expire(full_key, period + 1)
        return int(count)
    if backend.add(key, 1, timeout=period + 1):
        return 1
    try:
        return int(backend.incr(key))
    except ValueError:  # expired between add and incr
        backend.add(key, 1, timeout=period + 1)
        return 1


class CredentialRateThrottle(BaseThrottle):
    """Limits requests per credential and interface; the view names its ``throttle_scope``."""

    def allow_request(self, request: Any, view: Any) -> bool:
        credential = request.auth
        if credential is None:
            return True
        limit, period = parse_rate(settings.API_RATE_LIMITS[view.throttle_scope])
        now = time.time()
        window = int(now // period)
        key = f"rl:{view.throttle_scope}:{type(credential).__name__}:{credential.pk}:{window}"
        self.retry_after = period - (now % period)
        return hit(key, period) <= limit

    def wait(self) -> float:
        return self.retry_after
