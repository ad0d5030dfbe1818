"""What a call keeps once it is over: its recording's link (reissued to revoke the old one)
and its transcription.
"""

from __future__ import annotations

from typing import Any

from django.db import transaction

from calls import signals, transcripts
from calls.models import Call
from calls.payloads import call_event_emit
from calls.recordings import attempt_for_token, recording_link
from calls.redaction import redactions_record


def call_recording_reissue(*, call: Call) -> bool:
    """Give a call's recording a new link, which revokes the old one at once; False when
    the recording is not one of the service's own links (nothing to revoke here)."""
    token = call.recording_url.removesuffix(".wav").rsplit("/", 1)[-1]
    attempt_id = (
        attempt_for_token(token) if call.recording_url.endswith(".wav") else None
    )
    if attempt_id is None:
        return False
    call.recording_url = recording_link(attempt_id)
    call.save(update_fields=["recording_url"])
    return True


@transaction.atomic
def call_transcription_save(
    *,
    call: Call,
    transcription: str = "",
    summary: str = "",
    turns: list[dict[str, Any]] | None = None,
    redactions: list[dict[str, Any]] | None = None,
    language: str = "en",
) -> Call:
    """Store a call's transcription (and summary) and report ``transcription_ready``.
    Given ``turns`` (``{"side", "start", "end", "text"}``), the text is written from them
    in the interface's line format (``calls.transcripts``) and the turns kept; given
    ``redactions`` (``calls.redaction``), they are kept and silenced in the recording.
    ``language`` is the one the lead spoke (an ISO 639-1 code). The apps
    above hear of it (``calls.signals.transcription_saved``) in this transaction."""
    call = (
        Call.objects.select_for_update(of=("self",))
        .select_related("account", "agent")
        .get(pk=call.pk)
    )
    if turns is not None:
        call.transcript_turns = turns
        transcription = transcripts.render(turns, transcripts.speaker_names(call))
    call.transcription, call.summary = transcription, summary or call.summary
    call.transcript_language = language
    fields = ["transcription", "summary", "transcript_turns", "transcript_language"]
    if redactions is not None:
        # Silenced in the stored recording too, once this commits.
        call.redactions = redactions
        fields.append("redactions")
        redactions_record(call=call, spans=redactions)
    call.save(update_fields=fields)
    call_event_emit(
        call=call,
        type="transcription_ready",
        transcription={"text": call.transcription, "summary": call.summary},
    )
    signals.transcription_saved.send(sender=Call, call_id=call.pk)
    return call
