"""What the apps below tell appointments, in the transaction of their change: a scorer's
appointment members set the call's appointment; a transcript saved may propose one (read
by its own task, ``appointments.effects``, so a reading that fails never undoes the
transcript)."""

from __future__ import annotations

import datetime as dt
import uuid
from typing import Any
from zoneinfo import ZoneInfo

from appointments.models import Actor
from appointments.services import appointment_set_for_call
from core.outbox import effect_record
from scoring.models import Score

APPOINTMENT_MEMBERS = {"appointment_date", "appointment_time"}


def on_score_saved(
    sender: type, score: Score, changes: dict[str, Any], **kwargs: Any
) -> None:
    """The scorer's record of the appointment (part 2.3's ``appointmentDate`` and
    ``appointmentTime``, both needed) sets it, when they changed or on a first score. An
    appointment changed later is not written back into the score (CONTRACT.md B)."""
    first = not changes or all(old is None for old, _ in changes.values())
    if not (APPOINTMENT_MEMBERS & changes.keys() or first):
        return
    if score.appointment_date is None or score.appointment_time is None:
        return
    call = score.call
    starts_at = dt.datetime.combine(
        score.appointment_date,
        score.appointment_time,
        ZoneInfo(call.account.timezone),
    )
    appointment_set_for_call(
        call=call, starts_at=starts_at, by=Actor.SCORER, by_user=score.scorer
    )


def on_transcription_saved(sender: type, call_id: int, **kwargs: Any) -> None:
    effect_record(
        kind="appointments.propose",
        key=f"appointments.propose:{call_id}:{uuid.uuid4().hex}",
        about=f"call {call_id}",
        call_id=call_id,
    )
