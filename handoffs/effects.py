"""The callback a call's transcript asks for, read by its own task once the transcript is
saved (``core.outbox``), as appointments reads the appointment agreed."""

from __future__ import annotations

import datetime as dt
from zoneinfo import ZoneInfo

from calls.models import Call
from calls.transcripts import reading_context
from core.outbox import effect
from handoffs.models import Handoff, HandoffKind
from handoffs.services import handoff_open
from understanding import LANGUAGES, Context, understand


@effect("handoffs.callback")
def callback(*, call_id: int) -> Handoff | None:
    """Open a callback timer when the transcript says the lead asked for a callback (or
    the agent offered one): from the day and time said, in the account's timezone, else
    from now. Nothing for a transcript in a language the rules do not read."""
    call = Call.objects.select_related("account", "agent").filter(pk=call_id).first()
    if call is None or not call.transcript_turns:
        return None
    if call.transcript_language not in ("", *LANGUAGES):
        return None
    facts = understand(call.transcript_turns, Context.of(reading_context(call)))
    asked = facts.callback
    if asked is None:
        return None
    wait_from = None
    if asked.date is not None:
        wait_from = dt.datetime.combine(
            asked.date, asked.time or dt.time(9), ZoneInfo(call.account.timezone)
        )
    return handoff_open(
        account_id=call.account_id,
        phone=call.phone,
        kind=HandoffKind.CALLBACK,
        opened_by=f"call {call.pk}",
        call=call,
        wait_from=wait_from,
    )
