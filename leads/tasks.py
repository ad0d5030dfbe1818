from celery import shared_task


@shared_task(acks_late=True)
def leads_sweep_task() -> int:
    """Process leads stored but never processed (their request died mid-way)."""
    from leads.services import leads_sweep

    return leads_sweep()
