"""The hand-over of work to the broker, one mechanism for every outbox (effects, messages,
texts, webhook deliveries, recordings, transcriptions):

- ``publish_or_leave_to_sweep``: a publish that never waits long and never raises; a
  broker that is down leaves the work stored, to the sweep that owns it;
- ``hand_over``: that publish, and the row's hand-over mark kept true (``dispatched_at``:
  when the broker got it; ``REFUSED`` when it did not);
- ``HandOver``: one outbox's hand-over of a row (its task, the keyword naming the row,
  the rows still waiting for it), now or once the caller's transaction commits. Every
  hand-over of a row goes through ``hand_over``, the one seam tests replace;
- ``to_hand_over``: what a sweep hands over: rows never handed over (past a short grace
  for the publish on commit), and rows whose hand-over may have been lost
  (``lost_before``: the broker's visibility timeout passed, or the broker answering now
  is a new server). Never a row merely waiting in a queue, so a stopped worker leaves one
  task per row in the queue however many sweeps run.
"""

from __future__ import annotations

import contextlib
import logging
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from functools import partial
from typing import Any

from celery import current_app
from django.conf import settings as django_settings
from django.db import transaction
from django.db.models import Q, QuerySet
from django.utils import timezone
from django.utils.module_loading import import_string


def fail_fast(app: Any, *, timeout: float) -> dict[str, Any]:
    """Transport options for a connection that gives up on the first refused or timed-out
    connect (no retry with kombu's waits of 2 s and more) and on a broker silent for
    ``timeout`` seconds."""
    return {
        **app.conf.broker_transport_options,
        "max_retries": 0,
        "socket_connect_timeout": timeout,
        "socket_timeout": timeout,
    }


class Breaker:
    """A circuit breaker in front of the broker, one per process. After a publish fails,
    publishing is not tried again for ``pause`` seconds: every publish meanwhile gives up at
    once and leaves its work to the sweep that owns it. Then one publish (one thread) tries
    again; the rest keep giving up until it has succeeded or failed."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._closed_after = 0.0  # monotonic time from which a publish may try
        self._failing = False

    @property
    def pause(self) -> float:
        from django.conf import settings

        return float(settings.BROKER_BREAK_SECONDS)

    def allow(self) -> bool:
        with self._lock:
            now = time.monotonic()
            if now < self._closed_after:
                return False
            if self._failing:  # this one probes; the others wait for its outcome
                self._closed_after = now + self.pause
            return True

    def succeeded(self) -> None:
        with self._lock:
            self._failing, self._closed_after = False, 0.0

    def failed(self) -> bool:
        """Open the breaker; True when it was closed (the first failure of an outage)."""
        with self._lock:
            first = not self._failing
            self._failing, self._closed_after = True, time.monotonic() + self.pause
            return first


breaker = Breaker()
_publishers = threading.local()


def _publisher() -> Any:
    """This thread's connection for publishing (``fail_fast``): a publish to a broker that
    is down costs at most ``BROKER_PUBLISH_TIMEOUT_SECONDS``."""
    connection = getattr(_publishers, "connection", None)
    if connection is None:
        from django.conf import settings

        app = current_app
        timeout = float(settings.BROKER_PUBLISH_TIMEOUT_SECONDS)
        connection = app.connection_for_write(
            transport_options=fail_fast(app, timeout=timeout)
        )
        _publishers.connection = connection
    return connection


def _drop_publisher() -> None:
    connection = getattr(_publishers, "connection", None)
    _publishers.connection = None
    if connection is not None:
        # A broken connection may fail to close; it is dropped all the same.
        with contextlib.suppress(Exception):
            connection.release()


def publish_or_leave_to_sweep(
    task: Any,
    *,
    kwargs: dict[str, Any],
    event: str,
    log: Any,
    then: str = "the sweep dispatches it once the broker is back",
    **options: Any,
) -> bool:
    """Hand ``task`` to the broker (``options``: ``eta``, ``countdown``). A broker that is
    down is logged as ``event`` (with ``kwargs``), not raised: the work is stored, and the
    sweep that owns it hands it over once the broker is back. A request never waits long
    for it: one failed publish opens the process's ``breaker``, and until it closes every
    publish gives up at once. Returns whether it was sent."""
    from core.logging import log_event

    error = "the broker failed moments ago (breaker open)"
    if breaker.allow():
        try:
            # Our own repr of the (few, small) keyword arguments: Celery's saferepr of
            # them was a quarter of a publish's CPU.
            task.apply_async(
                kwargs=kwargs,
                retry=False,
                connection=_publisher(),
                argsrepr="()",
                kwargsrepr=repr(kwargs),
                **options,
            )
        except Exception as failure:
            _drop_publisher()
            error = f"{type(failure).__name__}: {failure}"
            if breaker.failed():
                log_event(
                    log,
                    "broker.unavailable",
                    level=logging.WARNING,
                    error=error,
                    then=f"publishing pauses {breaker.pause:g} s at a time until it answers",
                )
        else:
            breaker.succeeded()
            return True
    log_event(log, event, level=logging.WARNING, **kwargs, error=error, then=then)
    return False


# A retry due within this is handed to the broker with a countdown (the broker holds it);
# a later one is left to its sweep, so no worker holds a task for minutes or hours.
HELD_BY_BROKER = timedelta(minutes=2)
# A row created (or made due) this long ago and still not marked was never handed over:
# its process stopped between the commit and the publish. Younger ones are left to it.
SWEEP_GRACE = timedelta(seconds=30)
VISIBILITY_TIMEOUT_DEFAULT = 3600.0


def _no_broker_start() -> datetime | None:
    return None


# When the broker server answering now was first seen, or None: an app that watches the
# broker's identity (calls.workers, at each calls sweep) sets it.
broker_first_seen: Callable[[], datetime | None] = _no_broker_start


def lost_before(now: datetime) -> datetime:
    """A hand-over marked before this may have been lost, and is made again: the broker's
    visibility timeout has passed since (a delivery neither acknowledged nor put back in
    that time was lost), or the broker answering now is a new server, which may have lost
    what the old one held."""
    options: dict[str, Any] = django_settings.CELERY_BROKER_TRANSPORT_OPTIONS
    visibility = float(options.get("visibility_timeout", VISIBILITY_TIMEOUT_DEFAULT))
    before = now - timedelta(seconds=visibility)
    seen = broker_first_seen()
    return max(before, seen) if seen is not None else before


# The mark of a hand-over the broker refused: to be made again at the sweep's next run
# (an empty mark is a hand-over not yet tried, left to its publish on commit a moment).
REFUSED = datetime(1970, 1, 1, tzinfo=UTC)


def to_hand_over(
    now: datetime, *, mark: str = "dispatched_at", since: str = "created_at"
) -> Q:
    """The rows a sweep hands over: refused by the broker (``REFUSED``), never handed over
    (``mark`` empty, ``since`` older than ``SWEEP_GRACE``), or whose hand-over may have been
    lost (``lost_before``)."""
    return Q(**{f"{mark}__isnull": True, f"{since}__lt": now - SWEEP_GRACE}) | Q(
        **{f"{mark}__lt": lost_before(now)}
    )


def hand_over(
    task: Any,
    *,
    kwargs: dict[str, Any],
    event: str,
    log: Any,
    rows: QuerySet[Any] | None = None,
    mark: str = "dispatched_at",
    marked_first: bool = False,
    **options: Any,
) -> bool:
    """``publish_or_leave_to_sweep``, and the hand-over mark of ``rows`` (the row the task
    is for) set to now once the broker has it, to ``REFUSED`` when it does not: the sweep
    then hands it over at its next run. Rows ``marked_first`` (before the publish: see
    below) keep their mark when the broker has it and lose it when it does not. Returns
    whether it was handed over.

    Two conventions of marking remain, and both mean "handed over" the same way:

    - marked after the publish (effects, messages, texts, webhook deliveries): an empty
      mark is a publish on commit not yet made, left to it for ``SWEEP_GRACE``;
    - marked first (recordings, transcriptions, a call's setup): the row is marked in the
      transaction that makes it due, or by a sweep's compare-and-set on the mark (so two
      sweeps never hand one row over twice); an empty mark is a refused publish, handed
      over at the sweep's next run. Making one of the two the other changes what the
      sweeps read (and their timing), so it is not done here."""
    sent = publish_or_leave_to_sweep(
        task, kwargs=kwargs, event=event, log=log, **options
    )
    if rows is not None:
        if marked_first:
            if not sent:
                rows.update(**{mark: None})
        else:
            rows.update(**{mark: timezone.now() if sent else REFUSED})
    return sent


@dataclass(frozen=True)
class HandOver:
    """One outbox's hand-over of a row to its task: ``task`` (its dotted path, imported at
    the first hand-over, since a task module imports its services) called with the row's
    id as ``key``; ``waiting(row_id)``: the row while it still waits for a hand-over (its
    mark kept by ``hand_over``); ``event``: what ``log`` says when the broker refuses it,
    the row then left to its sweep. Call it to hand a row over now (a sweep, a retry),
    ``on_commit`` to hand it over once the caller's transaction commits."""

    task: str
    key: str
    event: str
    log: logging.Logger
    waiting: Callable[[int], QuerySet[Any]]

    def __call__(
        self, row_id: int, countdown: float | None = None, **options: Any
    ) -> bool:
        return hand_over(
            import_string(self.task),
            kwargs={self.key: row_id},
            event=self.event,
            log=self.log,
            rows=self.waiting(row_id),
            countdown=countdown,
            **options,
        )

    def on_commit(
        self, row_id: int, countdown: float | None = None, **options: Any
    ) -> None:
        transaction.on_commit(partial(self, row_id, countdown, **options), robust=True)
