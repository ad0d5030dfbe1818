"""Thin tasks: each takes ids, calls a service, and is safe to deliver twice."""

from __future__ import annotations

import logging

from celery import shared_task

from core.locks import one_at_a_time
from core.logging import log_event
from core.tasks import RETRY_WHILE_DATABASE_IS_DOWN

log = logging.getLogger(__name__)


@shared_task(**RETRY_WHILE_DATABASE_IS_DOWN)
def message_send_task(*, message_id: int) -> str:
    """Send one due message; one sent, being sent or given up is left alone."""
    from notify.services import message_send

    return message_send(message_id=message_id)


@shared_task(acks_late=True)
@one_at_a_time(skipped=0)
def messages_sweep_task() -> int:
    """Hand over due messages the broker never got, and retries that waited too long for it."""
    from notify.services import messages_sweep

    count = messages_sweep()
    if count:
        log_event(log, "notify.swept", messages=count)
    return count


@shared_task(acks_late=True)
def alerts_sweep_task() -> dict[str, int]:
    """Leads waiting too long for an agent while their account is open: each told once."""
    from notify.alerts import alerts_sweep

    return alerts_sweep()


@shared_task(acks_late=True)
def reports_due_task() -> int:
    """Store and send each morning report now due (once per user and day)."""
    from notify.report import reports_due

    return reports_due()
