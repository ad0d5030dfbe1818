from celery import shared_task

from core.locks import one_at_a_time


@shared_task(acks_late=True)
@one_at_a_time(skipped=0)
def leads_sweep_task() -> int:
    """Process leads stored but never processed (their request died mid-way)."""
    from leads.services import leads_sweep

    return leads_sweep()
