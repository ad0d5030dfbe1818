"""Rate limits counted in the shared cache (Redis in production, diskcache's SQLite under
var/ in the embedded default): requests per credential, failed authentication per client
address, and failed sign-ins per address and per username.

A fixed one-window counter: one atomic increment a request, so every process agrees. When
the cache cannot be reached, every limit lets requests through and the log says so, once
when it stops answering and once when it answers again: the limits protect the service,
they must never be what takes it down.
"""

from __future__ import annotations

import contextlib
import hashlib
import ipaddress
import logging
import math
import sqlite3
import threading
import time
from dataclasses import dataclass, field
from typing import Any

from django.conf import settings
from django.core.cache import caches
from django.core.cache.backends.redis import RedisCache
from django.core.exceptions import ValidationError
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

# What an unreachable or failing cache raises (redis-py's errors, sockets' OSError, and
# SQLite's errors for the embedded default's diskcache: a full disk, an unwritable var/).
CACHE_ERRORS = (RedisError, OSError, sqlite3.Error)

# Takes one back from a counter, unless it has expired meanwhile (a plain DECR would leave a
# -1 behind, for ever).
_REDIS_UNHIT = "if redis.call('EXISTS', KEYS[1]) == 1 then return redis.call('DECR', KEYS[1]) end return 0"


def parse_rate(rate: str) -> tuple[int, int]:
    """``"600/min"`` -> ``(600, 60)``."""
    count, _, period = rate.partition("/")
    return int(count), _PERIODS[period.strip().lower()]


def hit(key: str, period: int) -> int:
    """Count one hit on ``key`` in the current window; returns the window's count.
    Raises ``CACHE_ERRORS`` when the cache cannot be reached (see ``hit_or_none``).

    Exact under any number of processes and threads: every count returned is the result of
    one atomic increment of one live entry, and an entry lives longer than its window (keys
    carry their window's number, and the entry expires ``period + 1`` seconds after its first
    hit), so a window's hits return 1, 2, 3... each once."""
    backend: Any = caches["default"]
    if isinstance(backend, RedisCache):
        full_key = backend.make_and_validate_key(key)
        client = backend._cache.get_client(full_key, write=True)
        count = client.incr(full_key)
        if count == 1:
            client.expire(full_key, period + 1)
        return int(count)
    # Any other backend whose add and incr are each atomic across processes: the embedded
    # default's diskcache (each is one SQLite transaction). Only one concurrent add creates
    # the entry; the others increment it.
    while True:
        if backend.add(key, 1, timeout=period + 1):
            return 1
        try:
            return int(backend.incr(key))
        except ValueError:  # it expired between add and incr: start it again
            continue


def unhit(key: str) -> None:
    """Take back one hit counted by ``hit`` (nothing if the entry has expired meanwhile).
    Raises ``CACHE_ERRORS`` when the cache cannot be reached."""
    backend: Any = caches["default"]
    if isinstance(backend, RedisCache):
        full_key = backend.make_and_validate_key(key)
        client = backend._cache.get_client(full_key, write=True)
        client.eval(_REDIS_UNHIT, 1, full_key)
        return
    with contextlib.suppress(ValueError):  # expired: nothing left to take back
        backend.decr(key)


class CacheOutage:
    """Logs, once per process and outage, that the cache stopped answering (and what its
    user does meanwhile) and that it is back."""

    def __init__(
        self, meanwhile: str, again: str, log: logging.Logger = logger
    ) -> None:
        self.down = False
        self.meanwhile, self.again, self.log = meanwhile, again, log
        self._lock = threading.Lock()

    def failed(self, exc: BaseException) -> None:
        with self._lock:
            if self.down:
                return
            self.down = True
        self.log.warning(
            "The cache cannot be reached (%s: %s); %s.",
            type(exc).__name__,
            exc,
            self.meanwhile,
        )

    def answered(self) -> None:
        if not self.down:  # the usual case: no lock taken
            return
        with self._lock:
            if not self.down:
                return
            self.down = False
        self.log.warning("The cache answers again; %s.", self.again)


cache_outage = CacheOutage(
    "rate limits let every request through until it answers again",
    "rate limits count again",
)


def hit_or_none(key: str, period: int) -> int | None:
    """``hit``, or ``None`` when the cache cannot be reached (the caller lets the request through)."""
    try:
        count = hit(key, period)
    except CACHE_ERRORS as exc:
        cache_outage.failed(exc)
        return None
    cache_outage.answered()
    return count


def window(period: int) -> tuple[int, float]:
    """The number of the current window of ``period`` seconds, and the seconds until it ends."""
    now = time.time()
    return int(now // period), period - (now % period)


def credential_rate_key(scope: str, credential: Any, number: int) -> str:
    """The counter of ``credential``'s requests to the interface ``scope`` in window
    ``number``."""
    return f"rl:{scope}:{type(credential).__name__}:{credential.pk}:{number}"


def rate_period(scope: str) -> int:
    """The window, in seconds, of the interface ``scope``'s limit per credential."""
    return parse_rate(settings.API_RATE_LIMITS[scope])[1]


def unhit_or_log(key: str) -> None:
    """``unhit``; an unreachable cache is logged as an outage."""
    try:
        unhit(key)
    except CACHE_ERRORS as exc:
        cache_outage.failed(exc)


class CredentialRateThrottle(BaseThrottle):
    """Limits requests per credential and interface; the view names its ``throttle_scope``.

    Authentication may have counted the request already, in the round trip that read the
    cache's versions (``request.rate_counted``: the counter's key and its count, only
    for the credential it authenticated): that count is used, when it is this window's."""

    def allow_request(self, request: Any, view: Any) -> bool:
        credential = request.auth
        if credential is None:
            return True
        limit, period = parse_rate(settings.API_RATE_LIMITS[view.throttle_scope])
        number, self.retry_after = window(period)
        key = credential_rate_key(view.throttle_scope, credential, number)
        counted = getattr(request, "rate_counted", None)
        if counted is not None and counted[0] == key:
            count: int | None = counted[1]
        else:
            if counted is not None:  # a window ago: counted in this one instead
                unhit_or_log(counted[0])
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


@dataclass
class LoginAttempt:
    """One sign-in attempt, counted as a failure before it is tried (so concurrent attempts
    cannot all pass a check made before any of them failed), and taken back out of the counts
    if it is refused untried or succeeds (``forget``)."""

    counted: list[str] = field(default_factory=list)  # taken back in this order
    refused_for: float | None = None  # seconds until a sign-in may be tried again

    def refuse(self, retry_after: float) -> LoginAttempt:
        self.forget()
        self.refused_for = retry_after
        return self

    def forget(self) -> None:
        keys, self.counted = self.counted, []
        for key in keys:
            try:
                unhit(key)
            except CACHE_ERRORS as exc:
                cache_outage.failed(exc)


def login_attempt(request: Any, username: str) -> LoginAttempt:
    """Count a sign-in attempt against the address and the username; refused untried
    (``refused_for``) when, before it, the address was at ``ADMIN_LOGIN_FAILURE_LIMIT``, or
    the username was, from an address that has failed this window already. A username under
    attack thus stays open to a first attempt from any other address, so its owner can still
    sign in. The attempts in flight count as failures until they end.

    The username counts only attempts its address let through, and gives each back before
    the address does: so from one address, exactly the limit's number of attempts are tried,
    however many arrive at once."""
    limit, period = parse_rate(settings.ADMIN_LOGIN_FAILURE_LIMIT)
    number, retry_after = window(period)
    address_key, username_key = _login_keys(request, username, number)
    attempt = LoginAttempt()
    # Counts with this attempt and those in flight; None: the cache is down (let it through).
    by_address = hit_or_none(address_key, period)
    if by_address is None:
        return attempt
    attempt.counted.append(address_key)
    if by_address - 1 >= limit:
        return attempt.refuse(retry_after)
    by_username = hit_or_none(username_key, period)
    if by_username is None:
        return attempt
    attempt.counted.insert(0, username_key)
    if by_username - 1 >= limit and by_address - 1 > 0:
        return attempt.refuse(retry_after)
    return attempt


class ThrottledSignInMixin:
    """A sign-in form refused for the rest of the minute after too many failures from one
    address or against one username (``ADMIN_LOGIN_FAILURE_LIMIT``, core/throttling.py).
    Each attempt counts as a failure from before it is tried until it succeeds, so a burst
    of concurrent guesses gets no more tries than the limit. Mixed into the admin's sign-in
    and the pages' (users/views.py)."""

    request: Any
    cleaned_data: dict[str, Any]
    throttled_message = "Too many failed sign-in attempts. Please wait %(seconds)s seconds and try again."

    def clean(self) -> dict[str, Any]:
        if self.request is None:
            return super().clean()  # type: ignore[misc]
        username = str(self.cleaned_data.get("username") or "")
        attempt = login_attempt(self.request, username)
        if attempt.refused_for is not None:
            raise ValidationError(
                self.throttled_message,
                code="throttled",
                params={"seconds": math.ceil(attempt.refused_for)},
            )
        failed = False
        try:
            return super().clean()  # type: ignore[misc]
        except ValidationError:
            failed = True  # stays counted
            raise
        finally:
            if not failed:
                attempt.forget()
