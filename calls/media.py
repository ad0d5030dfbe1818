"""A call's recording kept in the service's own storage (``calls.models.Recording``).

The simulator's is spoken from the call's conversation script (``calls.telephony``); a
Twilio call's dual-channel recording is fetched from Twilio. Either way the row is made
pending in the transaction that learns of the recording, and the audio is stored later by
``recording_store_task``: synthesis and downloads take seconds and never hold up the
call's pipeline. Storing goes through Django's storage API (``MEDIA_ROOT`` by default, any
django-storages backend in production), once: a stored recording is never made again.

Every hand-over of a media task is marked on its row (``dispatched_at``) and sent again only
when it may have been lost (``lost_before``), never because it waits in a long
queue; media tasks run under time limits sized to their audio (``media_time_limits``).
"""

from __future__ import annotations

import io
import logging
import math
import tempfile
from dataclasses import dataclass, field
from datetime import datetime, timedelta
from functools import partial
from typing import IO, Any

import requests
from django.conf import settings
from django.core.files import File
from django.db import transaction
from django.db.models import Exists, F, OuterRef, Q
from django.utils import timezone

from calls import signals
from calls.audio import WavError, wav_format
from calls.models import (
    AttemptOutcome,
    Call,
    CallAttempt,
    CallStatus,
    Leg,
    Recording,
    RecordingStatus,
)
from calls.redaction import provider_copy_record
from core import handover
from core.compiled import CompiledQuery
from core.handover import lost_before
from core.logging import log_event
from core.sweeps import each

log = logging.getLogger(__name__)

SIMULATOR = "simulator"
MAX_TRIES = 3
NO_OUTCOME = (
    f"gave up after {MAX_TRIES} runs: those that did not fail ended with no outcome "
    "(the worker stopped while making it)"
)
SWEEP_BATCH = 500
# Redis's own default: a task delivered and neither acknowledged nor put back in this long
# is delivered again. The filesystem broker has none; the sweep waits as long there.
# Media tasks (speaking or fetching a recording, transcribing it) run under Celery's time
# limits sized to their audio: this many seconds of work per second of audio (transcribing
# reads both channels), never less than the floor nor more than the cap. The cap stays
# below the broker's visibility timeout, which would deliver a task still running again. At
# the soft limit the run fails as a counted try; HARD_AFTER_SOFT later it is stopped. A
# setting of the same name (a slower engine, a GPU) overrides each default.
MEDIA_TIME_LIMIT_PER_AUDIO_SECOND = 3.0
MEDIA_TIME_LIMIT_FLOOR_SECONDS = 120
MEDIA_TIME_LIMIT_CAP_SECONDS = 1800
HARD_AFTER_SOFT_SECONDS = 30
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
    marked = timezone.now()
    recording, made = Recording.objects.get_or_create(
        call_id=attempt.call_id, defaults={"attempt": attempt, "dispatched_at": marked}
    )
    if made:
        transaction.on_commit(
            partial(_store_later, attempt.call_id, attempt.duration, marked),
            robust=True,
        )
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
    marked = timezone.now()  # handed over once this commits
    Recording.objects.bulk_create(
        [Recording(call_id=attempt.call_id, attempt=attempt, dispatched_at=marked)],
        ignore_conflicts=True,
    )
    transaction.on_commit(
        partial(_store_later, attempt.call_id, attempt.duration, marked), robust=True
    )


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
    recording.dispatched_at = marked = timezone.now()
    recording.save(update_fields=["source_url", "dispatched_at"])
    transaction.on_commit(
        partial(_store_later, attempt.call_id, attempt.duration, marked), robust=True
    )
    return recording


def recording_store(*, call_id: int) -> str:
    """Make (speak or fetch) and store a call's pending recording, then report
    ``recording_stored`` in the transaction that marks it stored. A recording that is
    stored, or failed, is left alone: delivered twice, it is stored once. A failure is
    counted; after ``MAX_TRIES`` the recording is failed, before that
    ``RecordingNotYetStored`` is raised for the task to retry. Runs that ended with no
    outcome count too: no recording is run more than ``MAX_TRIES`` times. Returns the
    status."""
    recording = (
        Recording.objects.select_related("call__account", "call__agent", "attempt")
        .filter(call_id=call_id)
        .first()
    )
    if recording is None:
        return ""
    if recording.status != RecordingStatus.PENDING:
        return recording.status
    # Each run is counted as it starts: a run that kills its worker (a crash in the speech
    # library, the OOM killer) is delivered again, and would be forever.
    if not Recording.objects.filter(
        pk=recording.pk, status=RecordingStatus.PENDING, runs__lt=MAX_TRIES
    ).update(runs=F("runs") + 1):
        return _tried(recording.pk, NO_OUTCOME, final=True)
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
    """Each recording alone (``core.sweeps.each``: one that fails is counted, then set
    aside, and never stops the rest): send again the pending ones, with tries left, whose
    hand-over may have been lost (``lost_before``; never one merely waiting in a
    queue), and with ``SIMULATOR_SPEECH`` make the missing ones of answered simulated calls
    that ended lately (their lead leg ended outside the usual path). Returns how many."""
    pending = list(
        Recording.objects.filter(status=RecordingStatus.PENDING, tries__lt=MAX_TRIES)
        .filter(Q(dispatched_at__isnull=True) | Q(dispatched_at__lt=lost_before(now)))
        .order_by("pk")
        .values_list("call_id", "dispatched_at", "attempt__duration")[:SWEEP_BATCH]
    )
    done: list[int] = []

    def send_again(row: tuple[int, datetime | None, int | None]) -> None:
        call_id, dispatched, seconds = row
        # Marked first, and only if no one marked it since it was read: a sweep running
        # beside this one leaves it alone.
        if not Recording.objects.filter(
            call_id=call_id, status=RecordingStatus.PENDING, dispatched_at=dispatched
        ).update(dispatched_at=now):
            return
        try:
            _store_later(call_id, seconds, now)
        except BaseException:
            _unmark(call_id, now)  # not handed over: the next sweep tries again
            raise
        done.append(call_id)

    each(sweep="recordings", items=pending, handle=send_again, key=_first)
    if settings.SIMULATOR_SPEECH:
        answered = (
            CallAttempt.objects.filter(
                leg=Leg.LEAD,
                provider=SIMULATOR,
                outcome=AttemptOutcome.ANSWERED,
                duration__gt=0,
                call__status=CallStatus.ANSWER,
                call__ended_at__gte=now - MISSING_WITHIN,
            )
            .exclude(Exists(Recording.objects.filter(call=OuterRef("call"))))
            .order_by("call_id", F("answered_at").desc(nulls_last=True), "-pk")
            .values_list("call_id", "pk")
        )
        # The last answered lead leg of each call, kept here: DISTINCT ON is PostgreSQL's
        # alone, and the embedded default runs SQLite.
        latest: dict[int, int] = {}
        for call_id, attempt_id in answered:
            latest.setdefault(call_id, attempt_id)

        def make(item: tuple[int, int]) -> None:
            with transaction.atomic():
                if recording_make(attempt_id=item[1]) is not None:
                    done.append(item[0])

        each(
            sweep="recordings",
            items=list(latest.items())[:SWEEP_BATCH],
            handle=make,
            key=_first,
        )
    return len(done)


def media_time_limits(seconds: float | None) -> dict[str, int]:
    """Celery's soft and hard time limits (seconds) of a media task on ``seconds`` of
    audio, given per publish: a short call's task stuck in the engine is stopped soon, a
    long one's is given its time."""
    per_second, floor, cap = (
        float(getattr(settings, name, default))
        for name, default in (
            ("MEDIA_TIME_LIMIT_PER_AUDIO_SECOND", MEDIA_TIME_LIMIT_PER_AUDIO_SECOND),
            ("MEDIA_TIME_LIMIT_FLOOR_SECONDS", MEDIA_TIME_LIMIT_FLOOR_SECONDS),
            ("MEDIA_TIME_LIMIT_CAP_SECONDS", MEDIA_TIME_LIMIT_CAP_SECONDS),
        )
    )
    soft = math.ceil(min(max(floor, (seconds or 0) * per_second), cap))
    return {"soft_time_limit": soft, "time_limit": soft + HARD_AFTER_SOFT_SECONDS}


def _first(row: tuple[Any, ...]) -> object:
    return row[0]


# --- making the audio -----------------------------------------------------------------------


def _spoken(recording: Recording) -> _Audio:
    """The simulated call's conversation, spoken to its duration: the same words for the
    same call (seeded by its id), the script kept as the ground truth."""
    from calls.telephony.conversation import call_script
    from calls.telephony.speech import conversation_audio

    call = recording.call
    script = call_script(call)
    seconds = call.duration or recording.attempt.duration or 1
    spoken = conversation_audio(script, seconds=seconds)
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
        # Both channels (agent, lead), asked for explicitly: Twilio's default download
        # of some recordings (conferences) is mixed down to one.
        params={"RequestedChannels": 2},
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
    """The audio in ``file`` as its WAV header describes it (16-bit PCM or µ-law), ready
    to be read from the start."""
    try:
        form = wav_format(file)
    except WavError as error:
        file.close()
        raise _Refused(f"not a WAV file: {error}") from error
    file.seek(0)
    return _Audio(
        file=file, seconds=form.seconds, channels=form.channels, sample_rate=form.rate
    )


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
        provider_copy_record(recording=recording)
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


def _store_later(
    call_id: int, seconds: float | None = None, marked: datetime | None = None
) -> None:
    """Hand the storing to a worker, under time limits sized to the call's ``seconds``;
    with the broker down its hand-over mark (``marked``) is cleared, and the next sweep
    sends it."""
    from calls.tasks import recording_store_task

    limits: dict[str, Any] = media_time_limits(seconds)
    handover.hand_over(
        recording_store_task,
        kwargs={"call_id": call_id},
        event="call.recording_dispatch_failed",
        log=log,
        rows=Recording.objects.filter(
            call_id=call_id, status=RecordingStatus.PENDING, dispatched_at=marked
        ),
        marked_first=True,
        **limits,
    )


def _unmark(call_id: int, marked: datetime | None) -> None:
    Recording.objects.filter(
        call_id=call_id, status=RecordingStatus.PENDING, dispatched_at=marked
    ).update(dispatched_at=None)
