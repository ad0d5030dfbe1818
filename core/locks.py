"""One run of a sweep at a time, across every worker: a PostgreSQL advisory lock.

Every worker sends the sweeps again when it connects to the broker after losing it
(``config.celery.SweepOnConnect``), so after a broker outage each sweep is queued once per
worker, and the ``default`` worker's pool ran two of them side by side. Both read the same
stuck rows; what is claimed row by row was done once, but the rest twice: a silent leg
asked of the provider twice (two ``call.leg_settled`` lines for one leg), a dial sent twice.

``one_at_a_time`` runs a sweep after the run of it under way, never beside it: the later
run then finds done what the first did, and still sees what was marked since (a worker's
loss noted after the first run looked). A run still waiting after ``WAIT_AT_MOST`` is
dropped, with a warning: the scheduler's next tick sends another. The sweeps sent on
reconnecting take well under a second; a run that holds on longer (a provider slow to
answer about many legs) keeps at most one more of the ``default`` pool's processes
waiting, and not for long.

The lock belongs to the database session, not to a lease: a worker killed mid-sweep
releases it with its connection, so no sweep waits for a lock to time out. On other
databases (SQLite, the embedded default: one machine, one scheduler) every run goes ahead.
"""

from __future__ import annotations

import contextlib
import copy
import functools
import hashlib
import logging
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from typing import TypeVar

from django.db import DatabaseError, connection

from core.logging import log_event

log = logging.getLogger(__name__)

T = TypeVar("T")

# Seconds a run waits for the one under way, and between two looks at the lock.
WAIT_AT_MOST = 3.0
LOOK_EVERY = 0.05
_pause = time.sleep


def lock_key(name: str) -> int:
    """The advisory lock's 64-bit key for ``name``: the same in every process."""
    digest = hashlib.blake2b(f"leadcall:{name}".encode(), digest_size=8).digest()
    return int.from_bytes(digest, "big", signed=True)


@contextmanager
def alone(name: str) -> Iterator[bool]:
    """True inside once no other session holds ``name``'s lock (this one then holds it
    until the block ends); False if another still holds it after ``WAIT_AT_MOST``."""
    if connection.vendor != "postgresql":
        yield True
        return
    key = lock_key(name)
    give_up_at = time.monotonic() + WAIT_AT_MOST
    while not _taken(key):
        if time.monotonic() >= give_up_at:
            yield False
            return
        _pause(LOOK_EVERY)
    try:
        yield True
    finally:
        # A connection that broke meanwhile took the lock with it on the server.
        with contextlib.suppress(DatabaseError), connection.cursor() as cursor:
            cursor.execute("SELECT pg_advisory_unlock(%s)", [key])


def _taken(key: int) -> bool:
    with connection.cursor() as cursor:
        cursor.execute("SELECT pg_try_advisory_lock(%s)", [key])
        return bool(cursor.fetchone()[0])


def one_at_a_time(skipped: T) -> Callable[[Callable[[], T]], Callable[[], T]]:
    """A sweep that runs after any run of it under way, never beside it; a copy of
    ``skipped`` is what it returns when that run holds on past ``WAIT_AT_MOST`` (a copy,
    so a caller that changes what it got changes no other skipped run's answer)."""

    def decorate(sweep: Callable[[], T]) -> Callable[[], T]:
        name = f"{sweep.__module__}.{sweep.__qualname__}"

        @functools.wraps(sweep)
        def run() -> T:
            with alone(name) as mine:
                if mine:
                    return sweep()
            log_event(
                log,
                "sweep.skipped",
                level=logging.WARNING,
                sweep=name,
                waited=WAIT_AT_MOST,
                then="the scheduler's next tick sends it again",
            )
            return copy.copy(skipped)

        return run

    return decorate
