"""Transcriptions: requested when a call's recording is stored, run by a worker on the
``transcription`` queue, re-driven by the sweep. The call pipeline never waits on them and
is never touched by their failures: a transcription that cannot be made is marked failed,
with the reason, for support."""

from __future__ import annotations

import logging
import time
from collections.abc import Callable
from datetime import datetime, timedelta
from typing import Any

from django.conf import settings
from django.db import transaction
from django.db.models import F, Q
from django.utils import timezone

from calls import transcripts
from calls.models import Call, Recording, RecordingStatus
from calls.services import call_transcription_save
from config.celery import publish_or_leave_to_sweep
from core.logging import log_event
from insights.engines import (
    PermanentError,
    TransientError,
    engine_for_settings,
    read_wav,
    turns_from,
)
from insights.models import Transcription, TranscriptionStatus
from insights.summaries import summary_write

log = logging.getLogger(__name__)

# A pending transcription handed over this long ago with no outcome was lost (a worker
# gone, the broker down): the sweep hands it over again.
PENDING_AT_MOST = timedelta(minutes=2)
# Recordings stored this recently with no transcription get one from the sweep; older ones
# are the ``transcribe_calls`` command's (turning transcription on never floods the queue).
SWEEP_LOOKS_BACK = timedelta(days=1)
SWEEP_BATCH = 500
RETRY_BASE_SECONDS = 30
# A worker that claimed a transcription holds it this long; after that (it died mid-run)
# another delivery may run it.
LEASE = timedelta(minutes=30)


def transcription_request(*, call_id: int) -> Transcription:
    """The call's transcription, created when its recording is stored: pending and handed
    to a worker once this transaction commits, or skipped when no engine is configured. A
    call that already has one keeps it."""
    backend_off = settings.TRANSCRIPTION_BACKEND == "none"
    job, created = Transcription.objects.get_or_create(
        call_id=call_id,
        defaults={
            "status": TranscriptionStatus.SKIPPED
            if backend_off
            else TranscriptionStatus.PENDING,
            "engine": settings.TRANSCRIPTION_BACKEND,
            "dispatched_at": None if backend_off else timezone.now(),
        },
    )
    if created and job.status == TranscriptionStatus.PENDING:
        transaction.on_commit(lambda: _dispatch(call_id))
    return job


@transaction.atomic
def transcription_again(*, call_id: int, dispatch: bool = True) -> Transcription:
    """Make the call's transcription pending again with its tries reset (support's
    "transcribe again", the command's ``--again``); handed to a worker on commit unless
    ``dispatch`` is off (the caller runs it itself)."""
    job, _ = Transcription.objects.select_for_update().get_or_create(call_id=call_id)
    job.status, job.tries, job.reason = TranscriptionStatus.PENDING, 0, ""
    job.engine = settings.TRANSCRIPTION_BACKEND
    job.finished_at = None
    job.dispatched_at = timezone.now() if dispatch else None
    job.save(
        update_fields=[
            "status",
            "tries",
            "reason",
            "engine",
            "finished_at",
            "dispatched_at",
        ]
    )
    if dispatch:
        transaction.on_commit(lambda: _dispatch(call_id))
    return job


def transcription_run(*, call_id: int) -> Transcription | None:
    """Transcribe a call's recording once: only a pending transcription is run, and only by
    the worker that claimed it (a lease of ``LEASE``: another delivery meanwhile leaves it).
    The engine runs outside any transaction (it takes seconds to minutes, and SQLite would
    hold its write lock all along); the text, the turns and the summary are then saved on
    the call with the outcome in one transaction. A transient error is tried again later,
    up to ``TRANSCRIPTION_MAX_TRIES``; a permanent one fails at once. Returns the
    transcription run, or None when there was nothing to run."""
    claimed = timezone.now()
    if not Transcription.objects.filter(
        Q(claimed_at__isnull=True) | Q(claimed_at__lt=claimed - LEASE),
        call_id=call_id,
        status=TranscriptionStatus.PENDING,
    ).update(claimed_at=claimed, tries=F("tries") + 1):
        return None
    job = Transcription.objects.select_related("call__account", "call__agent").get(
        call_id=call_id
    )
    try:
        engine = engine_for_settings()
        if engine is None:
            return _settle(
                job, claimed, lambda: _finish(job, TranscriptionStatus.SKIPPED)
            )
        job.engine, job.model = engine.name, engine.model[:255]
        channels = read_wav(_audio(call_id))
        started = time.monotonic()
        agent = engine.transcribe(channels.agent) if channels.agent is not None else []
        lead = engine.transcribe(channels.lead)
        job.took_seconds = round(time.monotonic() - started, 3)
        job.audio_seconds = round(channels.seconds, 3)
    except PermanentError as error:
        reason = str(error)
        return _settle(job, claimed, lambda: _fail(job, reason))
    except TransientError as error:
        reason = str(error)
        return _settle(job, claimed, lambda: _retry_or_fail(job, reason))
    except Exception as error:  # an engine's surprise: tried again, never forever
        log.exception("transcription.engine_error call_id=%s", call_id)
        reason = f"{type(error).__name__}: {error}"
        return _settle(job, claimed, lambda: _retry_or_fail(job, reason))
    call = job.call
    turns = turns_from(agent, lead)
    transcript = transcripts.render(turns, transcripts.speaker_names(call))
    summary = summary_write(call=call, turns=turns, transcript=transcript)

    def done() -> Transcription:
        call_transcription_save(call=call, turns=turns, summary=summary)
        job.reason = ""
        _finish(job, TranscriptionStatus.DONE)
        log_event(
            log,
            "transcription.done",
            call_id=call_id,
            engine=job.engine,
            audio_seconds=job.audio_seconds,
            took_seconds=job.took_seconds,
            turns=len(turns),
        )
        return job

    return _settle(job, claimed, done)


def _settle(
    job: Transcription, claimed: datetime, outcome: Callable[[], Transcription]
) -> Transcription | None:
    """Write a run's outcome, in one transaction, if the run still holds its claim (its
    lease ran out and another worker took it: that one's outcome counts)."""
    with transaction.atomic():
        if (
            not Transcription.objects.select_for_update()
            .filter(pk=job.pk, status=TranscriptionStatus.PENDING, claimed_at=claimed)
            .exists()
        ):
            return None
        job.claimed_at = None
        job.save(update_fields=["claimed_at"])
        return outcome()


def _audio(call_id: int) -> bytes:
    recording = Recording.objects.filter(
        call_id=call_id, status=RecordingStatus.STORED
    ).first()
    if recording is None or not recording.audio:
        raise PermanentError("the call has no stored recording")
    try:
        with recording.audio.open("rb") as audio:
            return bytes(audio.read())
    except FileNotFoundError as error:
        raise PermanentError(f"the recording's file is missing: {error}") from error
    except OSError as error:  # storage out of reach: it may be back later
        raise TransientError(f"the recording could not be read: {error}") from error


def _finish(job: Transcription, status: str) -> Transcription:
    job.status = status
    job.finished_at = timezone.now()
    job.save(
        update_fields=[
            "status",
            "engine",
            "model",
            "tries",
            "reason",
            "audio_seconds",
            "took_seconds",
            "finished_at",
        ]
    )
    return job


def _fail(job: Transcription, reason: str) -> Transcription:
    """Failed for good: support is alerted (an ERROR line); the call itself is untouched."""
    job.reason = reason
    _finish(job, TranscriptionStatus.FAILED)
    log_event(
        log,
        "transcription.failed",
        level=logging.ERROR,
        call_id=job.call_id,
        engine=job.engine,
        tries=job.tries,
        reason=reason,
    )
    return job


def _retry_or_fail(job: Transcription, reason: str) -> Transcription:
    if job.tries >= settings.TRANSCRIPTION_MAX_TRIES:
        return _fail(job, f"gave up after {job.tries} tries: {reason}")
    delay = RETRY_BASE_SECONDS * 2 ** (job.tries - 1)
    job.reason = reason
    # Marked as handed over when it is due: the sweep leaves it alone until then.
    job.dispatched_at = timezone.now() + timedelta(seconds=delay)
    job.save(update_fields=["engine", "model", "tries", "reason", "dispatched_at"])
    log_event(
        log,
        "transcription.retry",
        level=logging.WARNING,
        call_id=job.call_id,
        tries=job.tries,
        countdown=delay,
        reason=reason,
    )
    call_id = job.call_id
    transaction.on_commit(lambda: _dispatch(call_id, countdown=delay))
    return job


def _dispatch(call_id: int, countdown: float | None = None) -> None:
    """Hand a transcription to a worker; with the broker down the sweep hands it later."""
    from insights.tasks import transcription_task

    options: dict[str, Any] = {"countdown": countdown} if countdown else {}
    if not publish_or_leave_to_sweep(
        transcription_task,
        kwargs={"call_id": call_id},
        event="transcription.dispatch_failed",
        log=log,
        **options,
    ):
        Transcription.objects.filter(
            call_id=call_id, status=TranscriptionStatus.PENDING
        ).update(dispatched_at=None)


def insights_sweep(*, now: datetime | None = None) -> dict[str, int]:
    """Re-drive what no worker is driving: pending transcriptions handed over more than
    ``PENDING_AT_MOST`` ago (or never), and recordings stored lately with no transcription
    (unless transcription is off). Returns how many of each."""
    now = now or timezone.now()
    counts = {"pending": 0, "created": 0}
    stale = Transcription.objects.filter(status=TranscriptionStatus.PENDING).filter(
        Q(dispatched_at__isnull=True) | Q(dispatched_at__lt=now - PENDING_AT_MOST)
    )
    for pk, call_id, dispatched in stale.values_list("pk", "call_id", "dispatched_at")[
        :SWEEP_BATCH
    ]:
        # Marked first, and only if no one marked it since: one hand-over per sweep.
        if Transcription.objects.filter(
            pk=pk, status=TranscriptionStatus.PENDING, dispatched_at=dispatched
        ).update(dispatched_at=now):
            _dispatch(call_id)
            counts["pending"] += 1
    if settings.TRANSCRIPTION_BACKEND == "none":
        return counts
    missing = Call.objects.filter(
        recording__status=RecordingStatus.STORED,
        recording__stored_at__gte=now - SWEEP_LOOKS_BACK,
        transcription_job__isnull=True,
    ).values_list("pk", flat=True)[:SWEEP_BATCH]
    for call_id in missing:
        _, created = Transcription.objects.get_or_create(
            call_id=call_id,
            defaults={"engine": settings.TRANSCRIPTION_BACKEND, "dispatched_at": now},
        )
        if created:
            _dispatch(call_id)
            counts["created"] += 1
    return counts
