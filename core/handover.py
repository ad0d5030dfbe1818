"""The hand-over of work to the broker: a publish that never waits long and never raises.
A broker that is down leaves the work stored, to the sweep that owns it."""

from __future__ import annotations

import contextlib
import logging
import threading
import time
from typing import Any

from celery import current_app


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
