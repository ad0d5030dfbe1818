"""The simulated texting provider (``providers.messaging`` is the interface, and
``providers.twilio.TwilioTexts`` the real one; ``providers.messaging_for`` picks one).
"""

from __future__ import annotations

import logging
from functools import partial

from django.db import transaction

from core.handover import publish_or_leave_to_sweep
from providers.clock import real_seconds
from providers.messaging import OutgoingText, TextProvider

log = logging.getLogger(__name__)


# Simulated seconds (``SIMULATOR_TIME_SCALE`` scales them, as it does calls).
SENT_AFTER = 0.5
DELIVERED_AFTER = 1.0
REPLY_AFTER = 5.0
# What a simulated lead does with a text, by the last four digits of their number
# (CONTRACT.md, "Simulator provider"): the busy number asks to be called back, the
# failing one opts out, 0004 cannot receive texts; every other number reads and is silent.
REPLIES = {"0001": "Call me please", "0002": "STOP"}
UNDELIVERABLE = "0004"


class SimulatorTexts(TextProvider):
    """Sends nothing: plays the provider's status callbacks and the lead's reply through
    the same services a real provider's callbacks reach, after (scaled) delays."""

    name = "simulator"

    def send(self, text: OutgoingText) -> str:
        from texting.tasks import simulator_text_reply_task, simulator_text_status_task

        provider_id = f"SIMSM{text.text_id:012d}"
        ending = text.to[-4:]
        _later(
            SENT_AFTER,
            simulator_text_status_task,
            text_id=text.text_id,
            status="sent",
        )
        _later(
            DELIVERED_AFTER,
            simulator_text_status_task,
            text_id=text.text_id,
            status="undelivered" if ending == UNDELIVERABLE else "delivered",
        )
        if text.to_lead and ending in REPLIES and _first_text_to(text):
            _later(
                REPLY_AFTER,
                simulator_text_reply_task,
                answering=text.text_id,
                to_number=text.sender,
                from_number=text.to,
                body=REPLIES[ending],
            )
        return provider_id


def _first_text_to(text: OutgoingText) -> bool:
    """A simulated lead answers the first text they get, and no other (a lead who asked
    to be called back does not ask again each time the line is busy)."""
    from texting.models import Direction, Text

    return (
        not Text.objects.filter(to_number=text.to, direction=Direction.OUT)
        .exclude(pk=text.text_id)
        .exists()
    )


def _later(seconds: float, task: object, **kwargs: object) -> None:
    send = partial(
        publish_or_leave_to_sweep,
        task,
        kwargs=kwargs,
        event="simulator.text_callback_lost",
        log=log,
        then="the simulated callback is lost, as a real provider's may be",
        countdown=real_seconds(seconds) or None,
    )
    transaction.on_commit(send, robust=True)
