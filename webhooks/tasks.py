"""Thin tasks on their own queue, ``webhooks``: a slow or dead receiver holds only the
workers that consume it, never call setup or lead intake."""

import logging

from celery import shared_task

from core.locks import one_at_a_time
from core.logging import log_event

log = logging.getLogger(__name__)

QUEUE = "webhooks"


@shared_task(acks_late=True, queue=QUEUE)
def webhook_deliver_task(*, delivery_id: int) -> str:
    """Send one delivery if it is due; a delivery sent or being sent is left alone."""
    from webhooks.services import webhook_delivery_send

    return webhook_delivery_send(delivery_id=delivery_id)


@shared_task(acks_late=True, queue=QUEUE)
@one_at_a_time(skipped=0)
def webhooks_sweep_task() -> int:
    """Hand over due deliveries the broker never got: the outbox guarantee of webhooks."""
    from webhooks.services import webhook_deliveries_sweep

    count = webhook_deliveries_sweep()
    if count:
        log_event(log, "webhooks.swept", deliveries=count)
    return count


@shared_task(acks_late=True, queue=QUEUE)
def webhook_events_prune_task() -> int:
    """Delete events past their retention that nothing waits to deliver."""
    from webhooks.services import webhook_events_prune

    count = webhook_events_prune()
    if count:
        log_event(log, "webhooks.pruned", events=count)
    return count
