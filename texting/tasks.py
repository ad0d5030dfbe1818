"""Thin tasks: each takes ids, calls a service, and is safe to deliver twice. Sending is
on the ``calls`` queue, beside call setup (a text follows a call's end within a
second); the simulator's callbacks on ``events`` with the call simulator's."""

from __future__ import annotations

import logging

from celery import shared_task

from core.locks import one_at_a_time
from core.logging import log_event
from core.tasks import retry_while_down
from providers.messaging import TextingUnavailable

log = logging.getLogger(__name__)

RETRY_WHILE_DOWN = retry_while_down(TextingUnavailable)


@shared_task(**RETRY_WHILE_DOWN)
def text_send_task(*, text_id: int) -> str:
    """Send one due text; a text sent, being sent or canceled is left alone."""
    from texting.services import text_send

    return text_send(text_id=text_id)


@shared_task(acks_late=True)
@one_at_a_time(skipped=0)
def texts_sweep_task() -> int:
    """Hand over due texts the broker never got, and those that waited for the morning."""
    from texting.services import texts_sweep

    count = texts_sweep()
    if count:
        log_event(log, "texting.swept", texts=count)
    return count


@shared_task(acks_late=True)
@one_at_a_time(skipped=0)
def texts_due_task() -> int:
    """The scheduler's tick: hand over the texts falling due in the next moments."""
    from texting.services import texts_hand_over_due

    count = texts_hand_over_due()
    if count:
        log_event(log, "texting.handed_over", texts=count)
    return count


@shared_task(**RETRY_WHILE_DOWN)
def simulator_text_status_task(*, text_id: int, status: str) -> bool:
    """A simulated delivery status, through the same service as Twilio's callbacks."""
    from texting.services import text_status_update

    return text_status_update(text_id=text_id, status=status)


@shared_task(**RETRY_WHILE_DOWN)
def simulator_text_reply_task(
    *, answering: int, to_number: str, from_number: str, body: str
) -> bool:
    """A simulated lead's reply to text ``answering``, through the same service as
    Twilio's inbound messages (its id derived from that text: delivered twice, stored once)."""
    from texting.inbound import text_receive

    return (
        text_receive(
            to_number=to_number,
            from_number=from_number,
            body=body,
            provider="simulator",
            provider_id=f"SIMIN{answering:012d}",
        )
        is not None
    )
