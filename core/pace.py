"""The carrier's pace: outbound calls per second per provider account, shared by every
worker on every machine, and shared fairly between dealers.

A token bucket whose tokens come back exactly one second after each is spent: Redis holds
the times of the dials of the last second (a sorted set), and a dial may go when fewer
than the rate went in that second. Its burst is one second's rate, and no one-second
window ever holds more than the rate (a bucket refilled continuously lets through up to
twice its rate in some windows, and a carrier counting per second would queue the rest).
One Lua script decides, atomically, on Redis's own clock (so the machines' clocks never
matter).

Fair across dealers: a dial that gets no token leaves its account's name among the
waiting (with whether it is a first dial or a retry). Whenever a token is free, it goes to
the waiting account ahead of the others: first dials before retries, then the account
served least recently. So a dealer with one lead waits for at most one token per other
waiting dealer, however many calls a busy dealer has waiting.

Without Redis (the embedded default: SQLite and the no-server broker) each process keeps
a bucket of its own: the pace holds per process, which with ``make run``'s one worker is
the whole service.
"""

from __future__ import annotations

import threading
import time
from collections import deque
from dataclasses import dataclass
from typing import Any

from django.conf import settings
from django.core.cache import caches
from django.core.cache.backends.redis import RedisCache

from core.throttling import CACHE_ERRORS, CacheOutage

# A margin on the one-second window: the carrier counts on its own clock, after the
# network's jitter, so six dials 1.0 s apart on ours must not look like six in one second
# on its.
WINDOW_SECONDS = 1.05
# An account that asked and has not asked again for this long has stopped waiting (its
# task was lost or its call ended): it no longer holds a token back from the others.
WAITING_STALE_SECONDS = 3.0
# The keys of an idle provider account expire: nothing is left behind.
IDLE_EXPIRY_SECONDS = 3600

FIRST, RETRY = 0, 1

pace_outage = CacheOutage(
    "outbound calls are placed without the carrier's pace until it answers",
    "outbound calls keep the carrier's pace again",
)

# KEYS: the dials of the last window (zset), the waiting accounts (hash: "since:class"),
# the accounts' last tokens (hash), a sequence (string).
# ARGV: rate, window, account, class (0 first dial, 1 retry), stale, expiry.
# Returns "0" (dial now) or the seconds to wait, as a string (Lua numbers come back
# truncated to integers otherwise).
_TAKE = """
local t = redis.call('TIME')
local now = tonumber(t[1]) + tonumber(t[2]) / 1000000
local rate = tonumber(ARGV[1])
local window = tonumber(ARGV[2])
local account = ARGV[3]
local class = tonumber(ARGV[4])
local stale = tonumber(ARGV[5])
local expiry = tonumber(ARGV[6])
redis.call('ZREMRANGEBYSCORE', KEYS[1], '-inf', now - window)
local free = rate - redis.call('ZCARD', KEYS[1])
local mine = tonumber(redis.call('HGET', KEYS[3], account) or '0')
local ahead = 0
local waiting = redis.call('HGETALL', KEYS[2])
for i = 1, #waiting, 2 do
  local other = waiting[i]
  local since, oclass = string.match(waiting[i + 1], '([^:]+):([^:]+)')
  since = tonumber(since)
  oclass = tonumber(oclass)
  if now - since > stale then
    redis.call('HDEL', KEYS[2], other)
  elseif other ~= account then
    local served = tonumber(redis.call('HGET', KEYS[3], other) or '0')
    if oclass < class or (oclass == class and served < mine) then
      ahead = ahead + 1
    end
  end
end
for _, key in ipairs(KEYS) do redis.call('EXPIRE', key, expiry) end
if free - ahead >= 1 then
  local seq = redis.call('INCR', KEYS[4])
  redis.call('ZADD', KEYS[1], now, tostring(seq))
  redis.call('HSET', KEYS[3], account, tostring(now))
  redis.call('HDEL', KEYS[2], account)
  return '0'
end
local before = redis.call('HGET', KEYS[2], account)
if before then
  local _, bclass = string.match(before, '([^:]+):([^:]+)')
  class = math.min(class, tonumber(bclass))
end
redis.call('HSET', KEYS[2], account, tostring(now) .. ':' .. tostring(class))
local wait = window / rate
if free < 1 then
  local oldest = redis.call('ZRANGE', KEYS[1], 0, 0, 'WITHSCORES')
  wait = tonumber(oldest[2]) + window - now
end
return tostring(math.max(wait, 0.01))
"""

# Read-only: the dials of the last window, the accounts waiting, the wait for a token.
_STATUS = """
local t = redis.call('TIME')
local now = tonumber(t[1]) + tonumber(t[2]) / 1000000
local window = tonumber(ARGV[1])
local rate = tonumber(ARGV[2])
local stale = tonumber(ARGV[3])
local used = redis.call('ZCOUNT', KEYS[1], now - window, '+inf')
local waiting = 0
local entries = redis.call('HVALS', KEYS[2])
for _, value in ipairs(entries) do
  local since = tonumber(string.match(value, '([^:]+):'))
  if now - since <= stale then waiting = waiting + 1 end
end
local wait = 0
if used >= rate then
  local oldest = redis.call('ZRANGEBYSCORE', KEYS[1], now - window, '+inf', 'WITHSCORES', 'LIMIT', 0, 1)
  wait = tonumber(oldest[2]) + window - now
end
return {tostring(used), tostring(waiting), tostring(math.max(wait, 0))}
"""


@dataclass(frozen=True)
class PaceStatus:
    """A provider account's pace now: its rate (0: none), the dials of the last second,
    the dealers waiting for a token, and the seconds until the next one."""

    provider: str
    rate: int
    dialed: int
    waiting: int
    wait: float


def calls_per_second() -> int:
    """The configured pace, whole calls a second (0: none)."""
    return int(settings.TELEPHONY_CALLS_PER_SECOND)


def provider_account(provider: str) -> str:
    """The account the carrier counts the pace on: Twilio's account SID, else the name."""
    if provider == "twilio":
        return f"twilio:{settings.TWILIO_ACCOUNT_SID}"
    return provider


def _keys(provider: str) -> list[str]:
    base = f"pace:{provider_account(provider)}"
    return [f"{base}:dials", f"{base}:waiting", f"{base}:served", f"{base}:seq"]


def _redis() -> Any | None:
    backend: Any = caches["default"]
    if not isinstance(backend, RedisCache):
        return None
    return backend._cache.get_client(None, write=True)


def take(*, provider: str, account_id: int, first: bool) -> float:
    """Take a token to place one outbound call for ``account_id``: 0.0 to dial now, else
    the seconds after which to ask again. With no pace configured, always 0.0."""
    rate = calls_per_second()
    if rate <= 0:
        return 0.0
    client = _redis()
    if client is None:
        return _local.take(rate)
    keys = _keys(provider)
    try:
        wait = client.eval(
            _TAKE,
            len(keys),
            *keys,
            rate,
            WINDOW_SECONDS,
            str(account_id),
            FIRST if first else RETRY,
            WAITING_STALE_SECONDS,
            IDLE_EXPIRY_SECONDS,
        )
    except CACHE_ERRORS as error:
        # The pace protects the carrier's queue; it must never be what stops the calls.
        pace_outage.failed(error)
        return 0.0
    pace_outage.answered()
    return float(wait)


def status(*, provider: str) -> PaceStatus:
    """The pace of ``provider``'s account now, for the support overview."""
    rate = calls_per_second()
    if rate <= 0:
        return PaceStatus(provider, 0, 0, 0, 0.0)
    client = _redis()
    if client is None:
        dialed, wait = _local.status(rate)
        return PaceStatus(provider, rate, dialed, 0, wait)
    keys = _keys(provider)
    try:
        dialed, waiting, wait = client.eval(
            _STATUS, 2, keys[0], keys[1], WINDOW_SECONDS, rate, WAITING_STALE_SECONDS
        )
    except CACHE_ERRORS:
        return PaceStatus(provider, rate, 0, 0, 0.0)
    return PaceStatus(provider, rate, int(dialed), int(waiting), float(wait))


class LocalBucket:
    """The same bucket in one process, for the embedded default (no Redis): not shared
    between processes, and first come first served."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._dials: deque[float] = deque()

    def _drop_old(self, now: float) -> None:
        while self._dials and self._dials[0] <= now - WINDOW_SECONDS:
            self._dials.popleft()

    def take(self, rate: int) -> float:
        with self._lock:
            now = time.monotonic()
            self._drop_old(now)
            if len(self._dials) < rate:
                self._dials.append(now)
                return 0.0
            return max(self._dials[0] + WINDOW_SECONDS - now, 0.01)

    def status(self, rate: int) -> tuple[int, float]:
        with self._lock:
            now = time.monotonic()
            self._drop_old(now)
            wait = 0.0
            if len(self._dials) >= rate:
                wait = self._dials[0] + WINDOW_SECONDS - now
            return len(self._dials), max(wait, 0.0)


_local = LocalBucket()
