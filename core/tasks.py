"""The outbox's tasks (``core.outbox``): thin, each safe to deliver twice."""

from __future__ import annotations

import logging
from typing import Any

from celery import shared_task
from django.db import InterfaceError, OperationalError

from core.locks import one_at_a_time
from core.logging import log_event

log = logging.getLogger(__name__)


def retry_while_down(
    *unavailable: type[Exception], backoff_max: int = 60
) -> dict[str, Any]:
    """A task's retries, one set for every app: tried again while the database (or what
    ``unavailable`` says is out of reach: a provider) is down, and for nothing else, with
    a growing, jittered wait (1, 2, 4 ... ``backoff_max`` s), twelve times; acknowledged
    late, so a worker lost mid-task leaves it to another."""
    return {
        "acks_late": True,
        "autoretry_for": (*unavailable, OperationalError, InterfaceError),
        "retry_backoff": 1,
        "retry_backoff_max": backoff_max,
        "retry_jitter": True,  # Celery's default, said here
        "max_retries": 12,
    }


# A task that only stores rows: tried again while the database is out of reach.
RETRY_WHILE_DATABASE_IS_DOWN = retry_while_down()


@shared_task(**RETRY_WHILE_DATABASE_IS_DOWN)
def effect_run_task(*, effect_id: int) -> str:
    """Build and send one effect; one done or failed is left alone."""
    from core.outbox import effect_run

    return effect_run(effect_id=effect_id)


@shared_task(acks_late=True)
@one_at_a_time(skipped=0)
def effects_sweep_task() -> int:
    """Hand over effects the broker never got, or whose hand-over was lost."""
    from core.outbox import effects_sweep

    count = effects_sweep()
    if count:
        log_event(log, "effect.swept", effects=count)
    return count
