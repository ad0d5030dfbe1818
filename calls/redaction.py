"""No unredacted copy of what a lead read out: the spans of a call's stored recording that
held a card or identity number silenced, and Twilio's own copy of the recording deleted
once ours is stored (issue 38). Both only for an account that redacts
(``Account.redact_numbers``, on by default).

Each is a side effect through the outbox (``core.outbox``): recorded in the transaction
that learnt of it (the transcription saved with its redactions; our copy stored), run by a
worker, safe to run twice (silence is silenced again; a recording Twilio no longer has is
deleted already), and a failure shows on the support overview to be sent again.
"""

from __future__ import annotations

import hashlib
import io
import json
import logging
import re
import wave
from collections.abc import Sequence
from typing import Any

import numpy as np
from django.core.files.base import ContentFile
from django.db import transaction
from twilio.base.exceptions import TwilioRestException

from calls.models import Call, Recording, RecordingStatus
from core.logging import log_event
from core.outbox import effect, effect_record

log = logging.getLogger(__name__)

CHANNEL = {"agent": 0, "lead": 1}
# Silence a little either side of the turn: the engine's times are to a few tenths.
MARGIN_SECONDS = 0.25
_RECORDING_SID = re.compile(r"/Recordings/(RE[0-9a-fA-F]{32})(?:\.\w+)?$")


def redactions_record(*, call: Call, spans: Sequence[dict[str, Any]]) -> None:
    """In the caller's transaction: the recording's spans that held a redacted number
    are to be silenced in the stored audio (nothing for a call without spans)."""
    if spans:
        effect_record(
            kind="calls.recording_silence",
            key=f"call-{call.pk}-silence-{_digest(spans)}",
            about=f"call {call.pk}",
            call_id=call.pk,
            spans=list(spans),
        )


def _digest(spans: Sequence[dict[str, Any]]) -> str:
    """The same spans, the same key: a transcription made again silences only anew."""
    text = json.dumps(list(spans), sort_keys=True)
    return hashlib.sha256(text.encode()).hexdigest()[:16]


def provider_copy_record(*, recording: Recording) -> None:
    """In the caller's transaction, once our copy of a Twilio recording is stored: Twilio's
    copy is to be deleted, for an account that redacts."""
    if recording.source_url and recording.call.account.redact_numbers:
        effect_record(
            kind="calls.provider_recording_delete",
            key=f"recording-{recording.pk}-provider-copy",
            about=f"call {recording.call_id}",
            source_url=recording.source_url,
            call_id=recording.call_id,
        )


@effect("calls.recording_silence")
def recording_silence(*, call_id: int, spans: list[dict[str, Any]]) -> int:
    """Silence ``spans`` (side, start, end seconds) in the call's stored recording,
    rewritten in place through the storage API; answers the samples silenced."""
    with transaction.atomic():
        recording = (
            Recording.objects.select_for_update()
            .filter(call_id=call_id, status=RecordingStatus.STORED)
            .first()
        )
        if recording is None or not recording.audio:
            return 0
        with recording.audio.open("rb") as stored:
            data = stored.read()
        silenced, audio = silence(data, spans)
        name = str(recording.audio.name)
        storage = recording.audio.storage
        storage.delete(name)
        kept = storage.save(name, ContentFile(audio))
        if kept != name:  # a storage that would not reuse the name: follow it
            recording.audio.name = kept
            recording.save(update_fields=["audio"])
    log_event(log, "call.recording_silenced", call_id=call_id, samples=silenced)
    return silenced


def silence(data: bytes, spans: Sequence[dict[str, Any]]) -> tuple[int, bytes]:
    """A 16-bit PCM WAV with ``spans`` silenced on their side's channel (both channels of
    a mono recording's one), and how many samples were."""
    with wave.open(io.BytesIO(data), "rb") as wav:
        params = wav.getparams()
        frames = wav.readframes(params.nframes)
    if params.sampwidth != 2:
        raise ValueError(f"cannot silence {8 * params.sampwidth}-bit audio")
    samples = np.frombuffer(frames, "<i2").reshape(-1, params.nchannels).copy()
    silenced = 0
    for span in spans:
        first = max(0, int((float(span["start"]) - MARGIN_SECONDS) * params.framerate))
        last = int((float(span["end"]) + MARGIN_SECONDS) * params.framerate)
        channel = CHANNEL.get(str(span["side"]), 0) if params.nchannels > 1 else 0
        piece = samples[first:last, channel]
        silenced += int(np.count_nonzero(piece))
        piece[:] = 0
    out = io.BytesIO()
    with wave.open(out, "wb") as wav:
        wav.setparams(params)
        wav.writeframes(samples.astype("<i2").tobytes())
    return silenced, out.getvalue()


@effect("calls.provider_recording_delete")
def provider_recording_delete(*, source_url: str, call_id: int) -> bool:
    """Delete Twilio's copy of a recording we keep; one Twilio no longer has counts as
    deleted. Answers whether Twilio had it."""
    from providers.twilio import twilio_client

    match = _RECORDING_SID.search(source_url)
    if match is None:
        raise ValueError(f"not a Twilio recording address: {source_url}")
    try:
        twilio_client().recordings(match.group(1)).delete()
    except TwilioRestException as error:
        if error.status == 404:
            return False
        raise
    log_event(log, "call.provider_recording_deleted", call_id=call_id)
    return True
