"""The fair order of call setups: which queued call a calls worker sets up next.

Celery's Redis transport keeps one list per priority of each queue (``priority_steps``
0 to 9 in the settings; 0 first) and a worker takes from the first list that holds a task.
Each setup is published with a priority made of two parts:

- its kind's band: a fresh lead first (0-5), then an old re-send (its ADF ``requestdate``
  older than ``LEAD_RESEND_AFTER_SECONDS``: 6-7), then a retry (8), then anything queued
  for later by a schedule (a cadence's step: 9);
- inside a band, its account's backlog: the setups of that account published and not yet
  started. An account's first waiting setup goes at its band's top, its second one step
  lower, its 3rd-4th two, 5th-8th three and so on (the backlog's bit length), down to the
  band's floor. So a dealer sending a thousand leads at once has all but a handful at the
  floor, while a quiet dealer's lead goes to the top and is set up next, behind at most
  the one setup of each busy account at the same step.

The backlog is a counter per account in Redis, raised on publish and lowered when the task
starts; it expires when idle, so a count lost with a worker heals. It only orders the
queue: a lost count never loses or holds a call (the sweeps still re-drive every queued
call). Without Redis (the embedded default's no-server broker has no priorities) setups
are first come first served.
"""

from __future__ import annotations

import logging
from enum import IntEnum

from django.core.cache import caches
from django.core.cache.backends.redis import RedisCache

from core.throttling import CACHE_ERRORS

log = logging.getLogger("calls.services")

# An account's backlog count expires this long after its last setup was published.
BACKLOG_EXPIRY_SECONDS = 600

# Lowers an account's backlog by one, never below zero, and only while it exists.
_STARTED = (
    "local n = tonumber(redis.call('GET', KEYS[1]) or '0') "
    "if n > 0 then return redis.call('DECR', KEYS[1]) end return 0"
)


class SetupPriority(IntEnum):
    """What kind of setup a call's is; the order in which kinds are served (first first).
    Pass it where a call's setup is queued (``call_queue``, ``broker.dispatch_setup``)."""

    HANDOVER = 0  # an agent just came free for a waiting call: never behind the queue
    FRESH = 1  # a new lead, a click-to-call, a lead's text asking for a call
    RESEND = 2  # a lead re-sent long after it was made (its ADF requestdate is old)
    RETRY = 3  # the next round or attempt of a call already tried
    LATER = 4  # queued by a schedule (a cadence's step): whenever nothing else waits


# (top, floor) of each kind's band of Redis priorities (0-9).
_BANDS = {
    SetupPriority.HANDOVER: (0, 0),
    SetupPriority.FRESH: (0, 5),
    SetupPriority.RESEND: (6, 7),
    SetupPriority.RETRY: (8, 8),
    SetupPriority.LATER: (9, 9),
}


def _client() -> object | None:
    backend = caches["default"]
    if not isinstance(backend, RedisCache):
        return None
    return backend._cache.get_client(None, write=True)


def _key(account_id: int) -> str:
    return f"fair:backlog:{account_id}"


def priority_for(kind: SetupPriority, backlog: int) -> int:
    """The Redis priority of a setup of ``kind`` whose account has ``backlog`` setups
    waiting before it."""
    top, floor = _BANDS[kind]
    return min(top + backlog.bit_length(), floor)


def setup_published(*, account_id: int, kind: SetupPriority) -> int:
    """Count one more setup waiting for ``account_id``; its priority. A cache that cannot
    be reached leaves the count alone: the setup goes at its band's top."""
    client = _client()
    if client is None:
        return priority_for(kind, 0)
    try:
        pipe = client.pipeline()  # type: ignore[attr-defined]
        pipe.incr(_key(account_id))
        pipe.expire(_key(account_id), BACKLOG_EXPIRY_SECONDS)
        count, _ = pipe.execute()
    except CACHE_ERRORS as error:
        log.warning("fair order: backlog not counted (%s)", error)
        return priority_for(kind, 0)
    return priority_for(kind, int(count) - 1)


def setup_started(*, account_id: int) -> None:
    """One setup of ``account_id`` left the queue."""
    client = _client()
    if client is None:
        return
    try:
        client.eval(_STARTED, 1, _key(account_id))  # type: ignore[attr-defined]
    except CACHE_ERRORS as error:
        log.warning("fair order: backlog not lowered (%s)", error)


def backlog(*, account_id: int) -> int:
    """The setups of ``account_id`` published and not yet started (0 without Redis)."""
    client = _client()
    if client is None:
        return 0
    try:
        return int(client.get(_key(account_id)) or 0)  # type: ignore[attr-defined]
    except CACHE_ERRORS:
        return 0
