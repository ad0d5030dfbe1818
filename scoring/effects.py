"""Suggestions for the scorer, made by their own task once a transcription is saved
(``core.outbox``): made again from the transcription as it is when the task runs."""

from __future__ import annotations

from core.outbox import effect


@effect("scoring.suggestions")
def suggestions(*, call_id: int) -> object:
    from scoring.services import call_suggestions_make

    return call_suggestions_make(call_id=call_id)
