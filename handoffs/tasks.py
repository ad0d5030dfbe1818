"""Thin tasks: each calls a service and is safe to deliver twice."""

from __future__ import annotations

from celery import shared_task

from core.locks import one_at_a_time


@shared_task(acks_late=True)
@one_at_a_time(skipped=0)
def handoffs_sweep_task() -> int:
    """Escalate each open handoff past its account's limit to the managers, once."""
    from handoffs.services import handoffs_sweep

    return handoffs_sweep()
