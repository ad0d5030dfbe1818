"""The Celery app. Settings come from Django's settings (``CELERY_*``)."""

import contextlib
import logging
import os
import threading
import time
from typing import Any

from celery import Celery, bootsteps, signals
from django.dispatch import Signal

from config.broker import fail_fast, use_resilient_redis_transport

os.environ.setdefault("DJANGO_SETTINGS_MODULE", "config.settings.local")
# Before the app connects anywhere: a worker that loses Redis with tasks in hand must not exit.
use_resilient_redis_transport()

app = Celery("config")
app.config_from_object("django.conf:settings", namespace="CELERY")
# A worker that lost the broker tries again every second or so, not at kombu's growing
# intervals (2, 4, 6 ... 30 s): calls wait on it the moment the broker is back.
app.amqp_cls = "config.broker:AMQP"
app.autodiscover_tasks()


# Sent by a worker each time it connects to the broker again after losing it: the tasks it
# held unacknowledged may not have been put back (``config.broker.QoS``). The call pipeline
# receives it (``calls.workers``) and has them sent again.
broker_reconnected = Signal()


class SweepOnConnect(bootsteps.StartStopStep):
    """Each time a worker connects to the broker again after losing it, it sends the sweeps
    named in ``SWEEPS_ON_CONNECT``, so work left to them while the broker was away (leads,
    calls and deliveries whose publish failed) is handed over at once, not at the
    scheduler's next tick."""

    requires = {"celery.worker.consumer.tasks:Tasks"}

    def __init__(self, parent: Any, **kwargs: Any) -> None:
        super().__init__(parent, **kwargs)
        self.connected_before = False

    def start(self, parent: Any) -> None:
        from django.conf import settings

        if not self.connected_before:  # starting: the scheduler's first ticks sweep
            self.connected_before = True
            return
        broker_reconnected.send(sender=self.__class__, hostname=parent.hostname)
        logging.getLogger(__name__).info(
            "connected to the broker again: sending %s", settings.SWEEPS_ON_CONNECT
        )
        for name in settings.SWEEPS_ON_CONNECT:
            entry = settings.CELERY_BEAT_SCHEDULE[name]
            try:
                app.send_task(entry["task"], **entry.get("options", {}))
            except Exception as error:  # the scheduler sends it at its next tick
                logging.getLogger(__name__).warning(
                    "could not send %s on connecting: %r", name, error
                )


app.steps["consumer"].add(SweepOnConnect)


@signals.task_prerun.connect
@signals.task_postrun.connect
def close_old_connections(**kwargs: Any) -> None:
    """Django's request rule for each task: drop a connection past CONN_MAX_AGE or broken."""
    from django.db import close_old_connections

    close_old_connections()


@signals.worker_process_init.connect
def frozen_after_start(**kwargs: Any) -> None:
    """Each worker process, once started: start-up's objects out of the collector's way
    (config/frozen.py)."""
    from config.frozen import load_then_freeze

    load_then_freeze()


@signals.task_prerun.connect
def versions_scope_begin(**kwargs: Any) -> None:
    """A task reads the shared cache's versions once, like a request (core.versioned)."""
    from core.versioned import scope_begin

    scope_begin()


@signals.task_postrun.connect
def versions_scope_end(**kwargs: Any) -> None:
    from core.versioned import scope_end

    scope_end()


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
