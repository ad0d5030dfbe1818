from celery import shared_task


@shared_task(acks_late=True)
def api_keys_prune_task() -> int:
    """Housekeeping: drop keys that expired or were revoked long ago."""
    from accounts.services import api_keys_prune

    return api_keys_prune()
