"""What the apps below tell consenting, in the transaction of their change: a transcript
saved may hold a spoken revocation (read by its own task, ``consenting.effects``, so a
reading that fails never undoes the transcript); each consent ledger entry becomes a
webhook event."""

from __future__ import annotations

import uuid
from typing import Any

from consent.models import ConsentEvent
from consenting.payloads import consent_event_emit
from core.outbox import effect_record


def on_transcription_saved(sender: type, call_id: int, **kwargs: Any) -> None:
    effect_record(
        kind="consenting.spoken",
        key=f"consenting.spoken:{call_id}:{uuid.uuid4().hex}",
        about=f"call {call_id}",
        call_id=call_id,
    )


def on_consent_recorded(
    sender: type, events: list[ConsentEvent], **kwargs: Any
) -> None:
    for event in events:
        consent_event_emit(event=event)
