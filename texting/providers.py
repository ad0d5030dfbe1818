"""Texting providers beside the call providers (``calls.telephony``), chosen the same way:
``TELEPHONY_PROVIDER`` (simulator or Twilio), and the simulator for a test account.

A provider takes one text and says what became of the hand-over: its id for the message,
or ``TextingUnavailable`` (not taken: try again), ``TextRefused`` (refused for good) or
``TextOutcomeUnknown`` (it may have been taken: never sent again, so a lead never gets a
second copy). Delivery statuses and the lead's replies come back later through
``texting.services.text_status_update`` and ``texting.inbound.text_receive``.
"""

from __future__ import annotations

import abc
import logging
from dataclasses import dataclass
from functools import partial

import requests
from django.conf import settings
from django.db import transaction
from django.urls import reverse
from twilio.base.exceptions import TwilioException, TwilioRestException

from calls.telephony.simulator import time_scale
from calls.telephony.twilio import twilio_client
from core.handover import publish_or_leave_to_sweep

log = logging.getLogger(__name__)


@dataclass(frozen=True)
class OutgoingText:
    text_id: int
    to: str
    sender: str  # an E.164 number, or a Twilio Messaging Service SID
    body: str
    to_lead: bool  # a lead's number (the simulator may answer), not a team member's


class TextingUnavailable(Exception):
    """The provider did not take the text (unreachable, rate limited): send it again."""


class TextRefused(Exception):
    """The provider refused the text for good (an invalid or unsubscribed number)."""


class TextOutcomeUnknown(Exception):
    """The provider may have taken the text (a timeout, a server error): never resent."""


class TextProvider(abc.ABC):
    name: str

    @abc.abstractmethod
    def send(self, text: OutgoingText) -> str:
        """Hand the text over; returns the provider's id for it."""


def text_provider(*, is_test: bool) -> TextProvider:
    name = "simulator" if is_test else settings.TELEPHONY_PROVIDER
    return TwilioTexts() if name == "twilio" else SimulatorTexts()


# --- Twilio Messaging

SERVICE_SID_PREFIX = "MG"


def status_callback_url(text_id: int) -> str:
    return settings.PUBLIC_BASE_URL + reverse(
        "texting-twilio:status", kwargs={"text_id": text_id}
    )


class TwilioTexts(TextProvider):
    name = "twilio"

    def send(self, text: OutgoingText) -> str:
        sender = (
            {"messaging_service_sid": text.sender}
            if text.sender.startswith(SERVICE_SID_PREFIX)
            else {"from_": text.sender}
        )
        try:
            message = twilio_client().messages.create(
                to=text.to,
                body=text.body,
                status_callback=status_callback_url(text.text_id),
                **sender,
            )
        except requests.ConnectTimeout as error:
            # Also a Timeout, but no connection was made: Twilio never saw the text.
            raise TextingUnavailable(
                f"Twilio could not be reached in time: {error}"
            ) from error
        except requests.Timeout as error:
            raise TextOutcomeUnknown(
                f"Twilio did not answer in time: {error}"
            ) from error
        except requests.RequestException as error:
            raise TextingUnavailable(f"Twilio could not be reached: {error}") from error
        except TwilioRestException as error:
            if int(error.status) == 429:
                raise TextingUnavailable(
                    f"Twilio is rate limiting: {error.msg}"
                ) from error
            if int(error.status) >= 500:
                raise TextOutcomeUnknown(
                    f"Twilio answered {error.status}: {error.msg}"
                ) from error
            raise TextRefused(
                f"Twilio refused it ({error.code}): {error.msg}"
            ) from error
        except TwilioException as error:
            raise TextRefused(f"Twilio refused it: {error}") from error
        return str(message.sid)


# --- The simulator

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
        countdown=max(0.0, seconds * time_scale()) or None,
    )
    transaction.on_commit(send, robust=True)
