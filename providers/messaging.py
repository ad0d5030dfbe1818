"""The messaging (SMS) interface: a provider takes one text and says what became of the
hand-over: its id for the message, or ``TextingUnavailable`` (not taken: try again),
``TextRefused`` (refused for good) or ``TextOutcomeUnknown`` (it may have been taken: never
sent again, so a lead never gets a second copy). Delivery statuses and the lead's replies
come back later through ``texting.services.text_status_update`` and
``texting.inbound.text_receive``.

The implementations: ``providers.twilio.TwilioTexts`` (Twilio Messaging) and
``texting.providers.SimulatorTexts``.
"""

from __future__ import annotations

import abc
from dataclasses import dataclass
from typing import Self


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

    @classmethod
    def from_settings(cls) -> Self:
        """The provider as the settings configure it."""
        return cls()

    @abc.abstractmethod
    def send(self, text: OutgoingText) -> str:
        """Hand the text over; returns the provider's id for it."""
