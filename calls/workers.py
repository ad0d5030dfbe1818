"""Which workers hold the call pipeline's tasks, and when they may have lost them.

A setup or dial handed to the broker waits there, or in a worker's hands, until it runs.
It is lost only when what holds it is lost: a worker consuming the ``calls`` queue that
dies without putting its tasks back, a worker that lost the broker and could not put them
back, or a broker that came back as a new server. Each of these is recorded here as a
loss (``WorkerBeat.lost``), and the sweep (``calls.services.calls_sweep``) then sends every
pending setup and dial again, once. A task merely waiting in a long queue is never sent
twice, so an overload does not feed itself.
"""

from __future__ import annotations

import logging
import os
import threading
from datetime import datetime, timedelta
from typing import Any

from celery import signals
from django.db import close_old_connections, connection
from django.utils import timezone

from calls.models import WorkerBeat
from config.broker import broker_identity, unrestored
from core.logging import log_event

log = logging.getLogger(__name__)

# A worker beats this often; one silent for LOST_AFTER is taken for dead.
BEAT_EVERY = timedelta(seconds=3)
LOST_AFTER = timedelta(seconds=20)
BROKER = "broker"


def _consumes_calls(consumer: Any) -> bool:
    queues = getattr(getattr(consumer, "task_consumer", None), "queues", None) or []
    return any(queue.name == "calls" for queue in queues)


def worker_started(*, name: str) -> None:
    """A worker consuming ``calls`` starts beating. If its name beat before without saying
    goodbye (killed, out of memory), that process's tasks are lost. The broker it connected
    to is noted, so a broker that restarts later is known for a new server."""
    now = timezone.now()
    _broker_seen(now)
    beat, created = WorkerBeat.objects.get_or_create(
        name=name, defaults={"token": str(os.getpid()), "beat_at": now}
    )
    if not created:
        WorkerBeat.objects.filter(pk=beat.pk).update(
            token=str(os.getpid()), beat_at=now, lost=True
        )
        log_event(
            log,
            "call.worker_lost",
            level=logging.WARNING,
            worker=name,
            token=beat.token,
            then="its pending setups and dials are sent again",
        )


def worker_beat(*, name: str) -> None:
    """The worker is alive; its row is made again if a sweep took it for lost meanwhile
    (the database was away longer than ``LOST_AFTER``)."""
    now = timezone.now()
    if not WorkerBeat.objects.filter(name=name).update(beat_at=now):
        WorkerBeat.objects.get_or_create(
            name=name, defaults={"token": str(os.getpid()), "beat_at": now}
        )


def worker_stopped(*, name: str) -> None:
    """A worker stopping cleanly has put its tasks back on the broker: nothing is lost,
    unless it could not put them back (the broker was away)."""
    mine = WorkerBeat.objects.filter(name=name, token=str(os.getpid()))
    if unrestored.is_set():
        mine.update(lost=True)
    else:
        mine.filter(lost=False).delete()


def worker_reconnected(*, name: str) -> None:
    """A worker that lost the broker may not have put back the tasks it held (its row is
    made again if a sweep took it for lost meanwhile)."""
    WorkerBeat.objects.update_or_create(
        name=name,
        defaults={"token": str(os.getpid()), "beat_at": timezone.now(), "lost": True},
    )


def losses_take(*, now: datetime | None = None) -> bool:
    """Whether a worker or the broker may have lost pending tasks since the last time this
    answered True; each loss is answered once. Workers silent for ``LOST_AFTER`` are lost;
    so is the broker when its server's id changed."""
    now = now or timezone.now()
    silent = WorkerBeat.objects.filter(beat_at__lt=now - LOST_AFTER).exclude(
        name=BROKER
    )
    names = list(silent.values_list("name", flat=True))
    for name in names:
        log_event(
            log,
            "call.worker_lost",
            level=logging.WARNING,
            worker=name,
            then="its pending setups and dials are sent again",
        )
    silent.delete()  # forgotten: it comes back, if ever, as a new worker
    lost = _broker_seen(now) or bool(names)
    return bool(WorkerBeat.objects.filter(lost=True).update(lost=False)) or lost


def broker_first_seen() -> datetime | None:
    """When the broker server answering now was first seen (``core.handover.lost_before``:
    what was handed to an earlier server may have been lost)."""
    return (
        WorkerBeat.objects.filter(name=BROKER).values_list("beat_at", flat=True).first()
    )


def _broker_seen(now: datetime) -> bool:
    """Note which broker server answers; True when it is not the one noted before."""
    identity = broker_identity(_app())
    if identity is None:
        return False
    broker, created = WorkerBeat.objects.get_or_create(
        name=BROKER, defaults={"token": identity, "beat_at": now}
    )
    if created or broker.token == identity:
        return False
    log_event(
        log,
        "call.broker_replaced",
        level=logging.WARNING,
        then="its pending setups and dials are sent again",
    )
    WorkerBeat.objects.filter(pk=broker.pk).update(token=identity, beat_at=now)
    return True


def _app() -> Any:
    from config.celery import app

    return app


class _Heart:
    """The beating thread of one worker process."""

    def __init__(self, name: str) -> None:
        self.name = name
        self.stopped = threading.Event()

    def run(self) -> None:
        while not self.stopped.wait(BEAT_EVERY.total_seconds()):
            try:
                worker_beat(name=self.name)
            except Exception as error:  # the database is away: beat again later
                log.warning("worker beat failed: %r", error)
            finally:
                close_old_connections()
        connection.close()


_heart: _Heart | None = None


@signals.worker_ready.connect
def _on_worker_ready(sender: Any = None, **kwargs: Any) -> None:
    global _heart
    if sender is None or not _consumes_calls(sender):
        return
    name = sender.hostname
    worker_started(name=name)
    connection.close()  # not shared with the pool processes forked later
    _heart = _Heart(name)
    threading.Thread(target=_heart.run, name="calls-worker-beat", daemon=True).start()


@signals.worker_shutdown.connect
def _on_worker_shutdown(sender: Any = None, **kwargs: Any) -> None:
    if _heart is not None:
        _heart.stopped.set()
        try:
            worker_stopped(name=_heart.name)
        except Exception as error:  # then the sweep takes it for lost: safe
            log.warning("could not sign the worker off: %r", error)


def on_broker_reconnected(sender: Any, *, hostname: str, **kwargs: Any) -> None:
    if _heart is not None and _heart.name == hostname:
        worker_reconnected(name=hostname)
