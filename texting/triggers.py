"""What texting does when the call pipeline reports a step (``calls.signals``), inside
the pipeline's transaction: the text is stored with the change that caused it."""

from __future__ import annotations

from datetime import datetime

from calls.models import Call, CallOrigin, CallStatus
from texting.models import Purpose
from texting.services import NOT_REACHED, text_automatic


def on_call_queued(sender: type, call: Call, **kwargs: object) -> None:
    """A lead just arrived: the instant text, when the account sends one."""
    if call.origin == CallOrigin.LEAD:
        text_automatic(call=call, purpose=Purpose.INSTANT)


def on_call_finished(sender: type, call: Call, **kwargs: object) -> None:
    """The lead was not reached after the last attempt, or no agent took the call."""
    if call.status in NOT_REACHED:
        text_automatic(call=call, purpose=Purpose.NOT_REACHED)
    elif call.status == CallStatus.NOAGENT:
        text_automatic(call=call, purpose=Purpose.NO_AGENT)


def on_call_waiting(
    sender: type, call: Call, opening: datetime, **kwargs: object
) -> None:
    """Nobody is on duty until the next schedule opening: tell the lead when we will call."""
    text_automatic(call=call, purpose=Purpose.WAITING, opening=opening)
