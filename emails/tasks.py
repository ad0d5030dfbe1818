"""Thin tasks: each takes ids, calls a service, and is safe to deliver twice."""

from __future__ import annotations

import logging

from celery import shared_task

from core.locks import one_at_a_time
from core.logging import log_event
from core.tasks import RETRY_WHILE_DATABASE_IS_DOWN

log = logging.getLogger(__name__)


@shared_task(**RETRY_WHILE_DATABASE_IS_DOWN)
def lead_email_send_task(*, email_id: int) -> str:
    """Send one due e-mail to a lead; one sent, being sent, failed or canceled is left alone."""
    from emails.services import lead_email_send

    return lead_email_send(email_id=email_id)


@shared_task(acks_late=True)
@one_at_a_time(skipped=0)
def lead_emails_sweep_task() -> int:
    """Hand over due e-mails the broker never got, and those whose worker was lost."""
    from emails.services import lead_emails_sweep

    count = lead_emails_sweep()
    if count:
        log_event(log, "emails.swept", emails=count)
    return count
