"""A call's recording kept in the service's own storage (``calls.models.Recording``).

The simulator's is spoken from the call's conversation script (``calls.telephony``); a
Twilio call's dual-channel recording is fetched from Twilio. Either way the row is made
pending in the transaction that learns of the recording, and the audio is stored later by
``recording_store_task``: synthesis and downloads take seconds and never hold up the
call's pipeline. Storing goes through Django's storage API (``MEDIA_ROOT`` by default, any
django-storages backend in production), once: a stored recording is never made again.
"""

from __future__ import annotations

import io
import logging
import tempfile
import wave
from dataclasses import dataclass, field
from datetime import datetime, timedelta
from functools import partial
from typing import IO, Any

import requests
from django.conf import settings
from django.core.files import File
from django.db import transaction
from django.db.models import Exists, OuterRef
from django.utils import timezone

from calls import signals
from calls.models import (
    AttemptOutcome,
    Call,
    CallAttempt,
    CallStatus,
    Leg,
    Recording,
    RecordingStatus,
)
from config.celery import publish_or_leave_to_sweep
from core.compiled import CompiledQuery
from core.logging import log_event

log = logging.getLogger(__name__)

SIMULATOR = "simulator"
MAX_TRIES = 3
# A pending recording older than this has lost its task (a worker died, the broker
# restarted): the sweep sends it again.
PENDING_AT_MOST = timedelta(minutes=2)
# Turning speech on makes recordings for calls that end from then on, and for the
# recently ended ones it missed; never for the whole history.
MISSING_WITHIN = timedelta(days=1)
FETCH_TIMEOUT = (5, 60)  # seconds to connect, and between bytes
CHUNK = 64 * 1024
IN_MEMORY_AT_MOST = 8 * 1024 * 1024  # a download larger than this spills to disk


class RecordingNotYetStored(Exception):
    """A try failed for a reason that may pass (speech engine, storage, Twilio's 5xx or
    network); it is counted on the row and the task tries again later."""


class _Refused(Exception):
    """A failure that trying again cannot mend (Twilio refused the download, not a WAV)."""


@dataclass
class _Audio:
    file: IO[bytes]
    seconds: float
    channels: int
    sample_rate: int
    script: dict[str, Any] = field(default_factory=dict)


def recording_make(*, attempt_id: int) -> Recording | None:
    """In the caller's transaction: an answered simulated lead leg gets its pending
    recording, spoken and stored once that transaction commits. Only with
    ``SIMULATOR_SPEECH``; a call that has a recording keeps it."""
    if not settings.SIMULATOR_SPEECH:
        return None
    attempt = _ANSWERED_SIMULATED_LEAD_LEG.first(attempt_id=attempt_id)
    if attempt is None:
        return None
    recording, made = Recording.objects.get_or_create(
        call_id=attempt.call_id, defaults={"attempt": attempt}
    )
    if made:
        transaction.on_commit(partial(_store_later, attempt.call_id), robust=True)
    return recording


def recording_make_ended(*, attempt: CallAttempt) -> None:
    """``recording_make`` for the lead leg the pipeline has just ended and holds, locked,
    in the caller's transaction: nothing is read again, and the pending recording is
    inserted in one statement where ``get_or_create`` took four (a call that has one keeps
    it; storing it, sent again, stores it once)."""
    if not (
        settings.SIMULATOR_SPEECH
        and attempt.leg == Leg.LEAD
        and attempt.provider == SIMULATOR
        and attempt.outcome == AttemptOutcome.ANSWERED
        and (attempt.duration or 0) > 0
    ):
        return
    Recording.objects.bulk_create(
        [Recording(call_id=attempt.call_id, attempt=attempt)], ignore_conflicts=True
    )
    transaction.on_commit(partial(_store_later, attempt.call_id), robust=True)


# Compiled once (core/compiled.py): read for every answered call the sweep finds without
# its recording.
_ANSWERED_SIMULATED_LEAD_LEG = CompiledQuery(
    lambda attempt_id: CallAttempt.objects.filter(
        pk=attempt_id,
        leg=Leg.LEAD,
        provider=SIMULATOR,
        outcome=AttemptOutcome.ANSWERED,
        duration__gt=0,
    ),
    "attempt_id",
)


@transaction.atomic
def recording_source_set(*, attempt_id: int, url: str) -> Recording | None:
    """Twilio has a lead leg's recording at ``url`` (its RecordingUrl): the call's
    recording is fetched from there (the dual-channel WAV) and stored once this commits.
    The first URL reported is kept, as ``Call.recording_url`` keeps it; a stored recording
    is left alone."""
    attempt = CallAttempt.objects.filter(pk=attempt_id, leg=Leg.LEAD).first()
    if attempt is None or not url:
        return None
    recording, _ = Recording.objects.select_for_update().get_or_create(
        call_id=attempt.call_id, defaults={"attempt": attempt}
    )
    if recording.status != RecordingStatus.PENDING or recording.source_url:
        return recording
    recording.source_url = f"{url}.wav"
    recording.save(update_fields=["source_url"])
    transaction.on_commit(partial(_store_later, attempt.call_id), robust=True)
    return recording


def recording_store(*, call_id: int) -> str:
    """Make (speak or fetch) and store a call's pending recording, then report
    ``recording_stored`` in the transaction that marks it stored. A recording that is
    stored, or failed, is left alone: delivered twice, it is stored once. A failure is
    counted; after ``MAX_TRIES`` the recording is failed, before that
    ``RecordingNotYetStored`` is raised for the task to retry. Returns the status."""
    recording = (
        Recording.objects.select_related("call__account", "call__agent", "attempt")
        .filter(call_id=call_id)
        .first()
    )
    if recording is None:
        return ""
    if recording.status != RecordingStatus.PENDING:
        return recording.status
    try:
        audio = _fetched(recording) if recording.source_url else _spoken(recording)
        try:
            return _keep(recording.pk, audio)
        finally:
            audio.file.close()
    except _Refused as error:
        return _tried(recording.pk, str(error), final=True)
    except Exception as error:
        # Speech, storage and network all fail in ways of their own; each is counted
        # and tried again, MAX_TRIES at most, so none is lost silently nor tried forever.
        status = _tried(recording.pk, f"{type(error).__name__}: {error}")
        if status == RecordingStatus.PENDING:
            raise RecordingNotYetStored(str(error)) from error
        return status


def recordings_sweep(*, now: datetime) -> int:
    """Re-drive recordings whose task was lost (pending past ``PENDING_AT_MOST`` with tries
    left), and with ``SIMULATOR_SPEECH`` make the missing ones of answered simulated calls
    that ended lately (their lead leg ended outside the usual path). Returns how many."""
    pending = Recording.objects.filter(
        status=RecordingStatus.PENDING,
        created_at__lt=now - PENDING_AT_MOST,
        tries__lt=MAX_TRIES,
    ).values_list("call_id", flat=True)
    count = 0
    for call_id in pending:
        _store_later(call_id)
        count += 1
    if settings.SIMULATOR_SPEECH:
        missing = (
            CallAttempt.objects.filter(
                leg=Leg.LEAD,
                provider=SIMULATOR,
                outcome=AttemptOutcome.ANSWERED,
                duration__gt=0,
                call__status=CallStatus.ANSWER,
                call__ended_at__gte=now - MISSING_WITHIN,
            )
            .exclude(Exists(Recording.objects.filter(call=OuterRef("call"))))
            .order_by("call_id", "-answered_at")
            .distinct("call_id")
            .values_list("pk", flat=True)
        )
        for attempt_id in missing:
            with transaction.atomic():
                if recording_make(attempt_id=attempt_id) is not None:
                    count += 1
    return count


# --- making the audio -----------------------------------------------------------------------


def _spoken(recording: Recording) -> _Audio:
    """The simulated call's conversation, spoken to its duration: the same words for the
    same call (seeded by its id), the script kept as the ground truth."""
    from calls.telephony.conversation import Facts, conversation_script
    from calls.telephony.speech import conversation_audio

    call = recording.call
    agent_name = call.agent.get_full_name() if call.agent else ""
    script = conversation_script(
        Facts.of(call, agent_name=agent_name or call.agent_shown), seed=call.pk
    )
    seconds = call.duration or recording.attempt.duration or 1
    spoken = conversation_audio(script, seconds=seconds, whisper=call.whisper)
    audio = _described(io.BytesIO(spoken.wav))  # made whole in memory already
    audio.script = {
        "turns": [turn.as_dict() for turn in spoken.spoken],
        "ending": script.ending,
        "appointment": script.appointment,
        "met": sorted(script.met),
    }
    return audio


def _fetched(recording: Recording) -> _Audio:
    """Twilio's recording, streamed to a spooled file (never whole in memory), read back
    from its WAV header. 5xx and network errors may pass; a 4xx or a file that is not a
    WAV will not."""
    response = requests.get(
        recording.source_url,
        auth=(settings.TWILIO_ACCOUNT_SID, settings.TWILIO_AUTH_TOKEN),
        timeout=FETCH_TIMEOUT,
        stream=True,
    )
    with response:
        if response.status_code >= 500:
            raise RecordingNotYetStored(f"Twilio answered {response.status_code}")
        if response.status_code >= 400:
            raise _Refused(f"Twilio refused the download: {response.status_code}")
        # Closed by recording_store once stored (or here, when the download breaks).
        file = tempfile.SpooledTemporaryFile(max_size=IN_MEMORY_AT_MOST)  # noqa: SIM115
        try:
            for chunk in response.iter_content(CHUNK):
                file.write(chunk)
        except BaseException:
            file.close()
            raise
    return _described(file)


def _described(file: IO[bytes]) -> _Audio:
    """The audio in ``file`` as its WAV header describes it, ready to be read from the start."""
    file.seek(0)
    try:
        with wave.open(file, "rb") as wav:
            channels, rate = wav.getnchannels(), wav.getframerate()
            seconds = wav.getnframes() / rate
    except (wave.Error, EOFError) as error:
        file.close()
        raise _Refused(f"not a WAV file: {error}") from error
    file.seek(0)
    return _Audio(file=file, seconds=seconds, channels=channels, sample_rate=rate)


# --- keeping it ---------------------------------------------------------------------------


def _keep(recording_id: int, audio: _Audio) -> str:
    """Store the audio and mark the recording stored, unless a delivery beside this one
    did first (the row is locked, then checked)."""
    with transaction.atomic():
        recording = Recording.objects.select_for_update().get(pk=recording_id)
        if recording.status != RecordingStatus.PENDING:
            return recording.status
        recording.audio.save(
            f"call-{recording.call_id}.wav", File(audio.file), save=False
        )
        recording.status = RecordingStatus.STORED
        recording.stored_at = timezone.now()
        recording.content_type = "audio/wav"
        recording.seconds = round(audio.seconds, 3)
        recording.channels = audio.channels
        recording.sample_rate = audio.sample_rate
        recording.script = audio.script or recording.script
        recording.reason = ""
        recording.save(
            update_fields=[
                "audio",
                "status",
                "stored_at",
                "content_type",
                "seconds",
                "channels",
                "sample_rate",
                "script",
                "reason",
            ]
        )
        signals.recording_stored.send(sender=Call, call_id=recording.call_id)
    log_event(
        log,
        "call.recording_stored",
        call_id=recording.call_id,
        seconds=recording.seconds,
        source="twilio" if recording.source_url else "speech",
    )
    return RecordingStatus.STORED


def _tried(recording_id: int, reason: str, *, final: bool = False) -> str:
    """Count a failed try; the recording fails at ``MAX_TRIES`` (or at once when ``final``)."""
    with transaction.atomic():
        recording = Recording.objects.select_for_update().get(pk=recording_id)
        if recording.status != RecordingStatus.PENDING:
            return recording.status
        recording.tries += 1
        recording.reason = reason[:2000]
        if final or recording.tries >= MAX_TRIES:
            recording.status = RecordingStatus.FAILED
        recording.save(update_fields=["tries", "reason", "status"])
    log_event(
        log,
        "call.recording_failed",
        level=logging.WARNING,
        call_id=recording.call_id,
        tries=recording.tries,
        reason=recording.reason,
        then="given up"
        if recording.status == RecordingStatus.FAILED
        else "tried again",
    )
    return recording.status


def _store_later(call_id: int) -> None:
    """Hand the storing to a worker; with the broker down the sweep sends it later."""
    from calls.tasks import recording_store_task

    publish_or_leave_to_sweep(
        recording_store_task,
        kwargs={"call_id": call_id},
        event="call.recording_dispatch_failed",
        log=log,
    )
