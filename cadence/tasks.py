"""Thin tasks: each takes ids, calls a service, and is safe to deliver twice. A step runs on
the ``calls`` queue (a text or a call follows its due time within a second); the
scheduler's tick on ``default``, beside the scheduler, so a backlog on ``calls`` never
delays the hand-over of what falls due next."""

from __future__ import annotations

import logging

from celery import shared_task

from core.locks import one_at_a_time
from core.logging import log_event

log = logging.getLogger(__name__)


@shared_task(acks_late=True)
def step_run_task(*, step_id: int) -> str:
    """Run one step handed over at its due time; a step run, stopped or not due is left."""
    from cadence.services import step_run

    return step_run(step_id=step_id)


@shared_task(acks_late=True)
@one_at_a_time(skipped=0)
def steps_due_task() -> int:
    """The scheduler's tick: hand over the steps falling due in the next moments."""
    from cadence.services import steps_hand_over_due

    count = steps_hand_over_due()
    if count:
        log_event(log, "cadence.handed_over", steps=count)
    return count
