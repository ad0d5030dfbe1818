"""The Celery app. Settings come from Django's settings (``CELERY_*``)."""

import logging
import os
from typing import Any

from celery import Celery, bootsteps, signals
from django.dispatch import Signal

from config.broker import use_resilient_redis_transport

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


@signals.worker_init.connect
def refuse_bad_provider_settings(**kwargs: Any) -> None:
    """A worker with a provider setting that names no provider (or lacks what it needs)
    stops at start with the reason; Celery runs Django's checks but ignores them."""
    from django.core.exceptions import ImproperlyConfigured

    from config.checks import refuse_to_start

    try:
        refuse_to_start("the Celery worker")
    except ImproperlyConfigured as refused:
        # Celery logs and goes past a receiver's exception; a SystemExit stops it.
        raise SystemExit(str(refused)) from refused


@signals.worker_process_init.connect
def stop_handler(**kwargs: Any) -> None:
    """Each worker process: a warm shutdown interrupts a long job that hands its work
    back (core/shutdown.py), instead of waiting minutes for it."""
    from core.shutdown import install_stop_handler

    install_stop_handler()


@signals.worker_shutting_down.connect
def interrupt_long_jobs(**kwargs: Any) -> None:
    from core.shutdown import interrupt_running_tasks

    interrupt_running_tasks()


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
