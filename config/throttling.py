"""Rate limits counted in the shared cache (Redis in production): requests per credential,
and failed authentication per client address.

A fixed one-window counter: one atomic INCR a request, so every process agrees. When the
cache cannot be reached, every limit lets requests through and the log says so, once when
it stops answering and once when it answers again: the limits protect the service, they
must never be what takes it down.
"""

from __future__ import annotations

import hashlib
import ipaddress
import logging
import threading
import time
from typing import Any

from django.conf import settings
from django.core.cache import caches
from django.core.cache.backends.redis import RedisCache
from redis.exceptions import RedisError
from rest_framework.throttling import BaseThrottle

logger = logging.getLogger(__name__)

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

# What an unreachable or failing cache raises (redis-py's errors, sockets' OSError).
CACHE_ERRORS = (RedisError, OSError)


def parse_rate(rate: str) -> tuple[int, int]:
    """``"600/min"`` -> ``(600, 60)``."""
    count, _, period = rate.partition("/")
    return int(count), _PERIODS[period.strip().lower()]


def hit(key: str, period: int) -> int:
    """Count one hit on ``key`` in the current window; returns the window's count.
    Raises ``CACHE_ERRORS`` when the cache cannot be reached (see ``hit_or_none``)."""
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


class _CacheOutage:
    """Logs, once per process and outage, that the cache stopped answering and that it is back."""

    def __init__(self) -> None:
        self.down = False
        self._lock = threading.Lock()

    def failed(self, exc: BaseException) -> None:
        with self._lock:
            if self.down:
                return
            self.down = True
        logger.warning(
            "The cache cannot be reached (%s: %s); rate limits let every request through until it answers again.",
            type(exc).__name__,
            exc,
        )

    def answered(self) -> None:
        if not self.down:  # the usual case: no lock taken
            return
        with self._lock:
            if not self.down:
                return
            self.down = False
        logger.warning("The cache answers again; rate limits count again.")


cache_outage = _CacheOutage()


def hit_or_none(key: str, period: int) -> int | None:
    """``hit``, or ``None`` when the cache cannot be reached (the caller lets the request through)."""
    try:
        count = hit(key, period)
    except CACHE_ERRORS as exc:
        cache_outage.failed(exc)
        return None
    cache_outage.answered()
    return count


def counts(*keys: str) -> list[int]:
    """The current counts of ``keys`` (0 when unset, or when the cache cannot be reached)."""
    try:
        found = caches["default"].get_many(keys)
    except CACHE_ERRORS as exc:
        cache_outage.failed(exc)
        return [0 for _ in keys]
    cache_outage.answered()
    return [int(found.get(key) or 0) for key in keys]


def window(period: int) -> tuple[int, float]:
    """The number of the current window of ``period`` seconds, and the seconds until it ends."""
    now = time.time()
    return int(now // period), period - (now % period)


class CredentialRateThrottle(BaseThrottle):
    """Limits requests per credential and interface; the view names its ``throttle_scope``."""

    def allow_request(self, request: Any, view: Any) -> bool:
        credential = request.auth
        if credential is None:
            return True
        limit, period = parse_rate(settings.API_RATE_LIMITS[view.throttle_scope])
        number, self.retry_after = window(period)
        key = f"rl:{view.throttle_scope}:{type(credential).__name__}:{credential.pk}:{number}"
        count = hit_or_none(key, period)
        return count is None or count <= limit

    def wait(self) -> float:
        return self.retry_after


# --- failed authentication, per client address


def client_address(request: Any) -> str:
    """The address the request came from: ``REMOTE_ADDR``, or, behind ``TRUSTED_PROXY_COUNT``
    proxies, the address the outermost of them saw (counted from the right of
    ``X-Forwarded-For``, each proxy having appended its peer; entries further left are
    whatever the client sent and are never trusted)."""
    meta = request.META
    proxies = settings.TRUSTED_PROXY_COUNT
    if proxies > 0:
        forwarded = [
            part.strip()
            for part in meta.get("HTTP_X_FORWARDED_FOR", "").split(",")
            if part.strip()
        ]
        if forwarded:
            address = _ip(forwarded[-min(proxies, len(forwarded))])
            if address:
                return address
    return _ip(meta.get("REMOTE_ADDR", "")) or "unknown"


def _ip(text: str) -> str:
    try:
        return str(ipaddress.ip_address(text.strip()))
    except ValueError:
        return ""


def auth_failure(request: Any) -> float | None:
    """Count one failed key from the request's client address (an invalid or blank key on any
    API). Returns the seconds until the address may try again once it is over
    ``AUTH_FAILURE_LIMIT``, else ``None``. Called on failures only: a valid key costs nothing."""
    limit, period = parse_rate(settings.AUTH_FAILURE_LIMIT)
    number, retry_after = window(period)
    count = hit_or_none(f"authfail:{client_address(request)}:{number}", period)
    return retry_after if count is not None and count > limit else None


# --- failed admin sign-ins, per client address and per username


def _login_keys(request: Any, username: str, number: int) -> tuple[str, str]:
    # Usernames compare case-sensitively, but an attacker must not get ten tries per casing.
    name = hashlib.sha256(username.strip().lower().encode()).hexdigest()[:32]
    return (
        f"loginfail:addr:{client_address(request)}:{number}",
        f"loginfail:user:{name}:{number}",
    )


def login_refused(request: Any, username: str) -> float | None:
    """Seconds until a sign-in may be tried again, when this one is refused untried, else None.

    Refused: an address over ``ADMIN_LOGIN_FAILURE_LIMIT``; or a username over it, from an
    address that has failed this window already. A username under attack thus stays open
    to a first attempt from any other address, so its owner can still sign in."""
    limit, period = parse_rate(settings.ADMIN_LOGIN_FAILURE_LIMIT)
    number, retry_after = window(period)
    by_address, by_username = counts(*_login_keys(request, username, number))
    if by_address >= limit or (by_username >= limit and by_address > 0):
        return retry_after
    return None


def login_failed(request: Any, username: str) -> None:
    """Count one failed sign-in against the address and the username."""
    _, period = parse_rate(settings.ADMIN_LOGIN_FAILURE_LIMIT)
    number, _ = window(period)
    for key in _login_keys(request, username, number):
        hit_or_none(key, period)
