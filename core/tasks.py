"""The outbox's tasks (``core.outbox``): thin, each safe to deliver twice."""

from __future__ import annotations

import logging

from celery import shared_task
from django.db import InterfaceError, OperationalError

from core.locks import one_at_a_time
from core.logging import log_event

log = logging.getLogger(__name__)


@shared_task(
    acks_late=True,
    autoretry_for=(OperationalError, InterfaceError),
    retry_backoff=1,
    retry_backoff_max=60,
    max_retries=12,
)
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
