"""What texting does when the call pipeline reports a step (``calls.signals``): inside the
pipeline's transaction it only *records* the text that must follow (``core.outbox``),
when the account sends that text at all; the text is written by its own task
(``texting.effects``), so a text that cannot be made never holds back the call."""

from __future__ import annotations

from datetime import datetime

from calls.models import Call, CallOrigin, CallStatus
from core.outbox import effect_record
from texting.models import Purpose
from texting.services import NOT_REACHED, texts_automatically
from texting.signals import automatic_touch


def _record(call: Call, purpose: str, **params: object) -> None:
    if texts_automatically(account=call.account, purpose=purpose):
        effect_record(
            kind="texting.automatic",
            key=f"texting.{purpose}:{call.pk}",
            about=f"call {call.pk}",
            call_id=call.pk,
            purpose=purpose,
            **params,
        )


def on_call_queued(sender: type, call: Call, **kwargs: object) -> None:
    """A lead just arrived: the instant text, when the account sends one."""
    if call.origin == CallOrigin.LEAD:
        _record(call, Purpose.INSTANT)
        automatic_touch.send(sender=Call, call=call, purpose=Purpose.INSTANT)


def on_call_finished(sender: type, call: Call, **kwargs: object) -> None:
    """The lead was not reached after the last attempt, or no agent took the call. Not
    for a follow-up step's call: the account's cadence plans its own texts."""
    if call.origin == CallOrigin.CADENCE:
        return
    if call.status in NOT_REACHED:
        _record(call, Purpose.NOT_REACHED)
        automatic_touch.send(sender=Call, call=call, purpose=Purpose.NOT_REACHED)
    elif call.status == CallStatus.NOAGENT:
        _record(call, Purpose.NO_AGENT)


def on_call_waiting(
    sender: type, call: Call, opening: datetime, **kwargs: object
) -> None:
    """Nobody is on duty until the next schedule opening: tell the lead when we will call."""
    _record(call, Purpose.WAITING, opening=opening.isoformat())
