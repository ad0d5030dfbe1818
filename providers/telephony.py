"""The telephony interface (``Provider``) and the provider-neutral events and instructions.

The pipeline (``calls.services``) asks a provider to dial and hang up legs; providers
report what happened as provider-neutral ``Event``s to ``calls.services.call_event``,
which answers with an ``Instruction`` (prompt the agent, connect the lead, hang up).
The implementations: ``providers.twilio.TwilioProvider`` and
``calls.telephony.simulator.SimulatorProvider``.
"""

from __future__ import annotations

import abc
from dataclasses import dataclass, field
from enum import StrEnum
from typing import Self


class EventKind(StrEnum):
    RINGING = "ringing"
    ANSWERED = "answered"  # the agent leg answered: the provider asks what to play
    DIGITS = "digits"  # the agent pressed keys after the whisper
    NO_ANSWER = "no_answer"
    BUSY = "busy"
    FAILED = "failed"
    COMPLETED = "completed"  # the leg ended after being answered (or, without answer, was canceled)
    RECORDING = "recording"


@dataclass(frozen=True)
class Event:
    """Something a provider reports about one leg (``attempt_id`` is our CallAttempt id)."""

    attempt_id: int
    kind: EventKind
    digits: str = ""
    duration: int | None = None
    recording_url: str = ""


@dataclass(frozen=True)
class Instruction:
    """What the pipeline wants done on a leg after an event.

    ``say`` is read to the agent; ``gather`` asks for one key; ``connect`` dials the lead
    (``lead_attempt_id``, ``number``, ``caller_id``) into the agent's leg, recorded;
    ``hangup`` ends the leg. An empty instruction changes nothing.
    """

    say: str = ""
    gather: bool = False
    connect: bool = False
    lead_attempt_id: int | None = None
    number: str = ""
    caller_id: str = ""
    hangup: bool = False

    @classmethod
    def nothing(cls) -> Instruction:
        return cls()

    @classmethod
    def end(cls, say: str = "") -> Instruction:
        return cls(say=say, hangup=True)


@dataclass(frozen=True)
class AgentDial:
    """Ring an agent: when answered, the provider reports ANSWERED and follows the instruction."""

    attempt_id: int
    number: str
    caller_id: str
    ring_seconds: int
    extra: dict[str, str] = field(default_factory=dict)


@dataclass(frozen=True)
class LegStatus:
    """What the provider's own record says about a leg now: still up (``live``, and whether
    it was answered), or ended (``ended_by``: COMPLETED, NO_ANSWER, BUSY or FAILED, with the
    seconds it was answered for)."""

    live: bool
    answered: bool = False
    ended_by: EventKind | None = None
    duration: int | None = None


class TelephonyUnavailable(Exception):
    """The provider could not be reached; the task retries."""


class Provider(abc.ABC):
    name: str

    @classmethod
    def from_settings(cls) -> Self:
        """The provider as the settings configure it."""
        return cls()

    @property
    def time_scale(self) -> float:
        """How fast this provider's calls run against the wall clock (1.0: real time).

        The pipeline multiplies the waits that exist only because phones are slow (the
        lead's retry cadence, rechecks for a free agent, the pause between rounds of
        agents) by it, so a sped-up simulator keeps its calls and their waits in step.
        A real network is always 1.0; schedule openings are never scaled."""
        return 1.0

    @abc.abstractmethod
    def dial_agent(self, dial: AgentDial) -> str:
        """Start ringing the agent; returns the provider's id for the leg."""

    @abc.abstractmethod
    def hangup(self, *, provider_id: str, attempt_id: int) -> None:
        """End a leg the pipeline no longer needs (another agent won, the call was canceled)."""

    def leg_status(
        self, *, provider_id: str, attempt_id: int, parent_provider_id: str = ""
    ) -> LegStatus | None:
        """The provider's record of a leg (a lead's leg is dialed inside the agent's leg,
        ``parent_provider_id``), or None when it has none: the leg was never placed, or the
        provider cannot tell. May raise ``TelephonyUnavailable``."""
        return None

    def follow(self, *, attempt_id: int, instruction: Instruction) -> None:  # noqa: B027
        """Carry out an instruction the pipeline gave outside a provider's own request
        cycle. Providers whose callbacks render the instruction (Twilio's TwiML) need not."""
