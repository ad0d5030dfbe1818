"""Transcriptions: requested when a call's recording is stored, run by a worker on the
``transcription`` queue, re-driven by the sweep. The call pipeline never waits on them and
is never touched by their failures: a transcription that cannot be made is marked failed,
with the reason, for support.

Every retry is bounded: each run takes a claim that counts a try, and once
``TRANSCRIPTION_MAX_TRIES`` runs took it (those that died in the engine included) the next
is refused and the transcription fails. A run is stopped at its time limits (sized to the
recording, ``calls.media.media_time_limits``) and its claim's lease ends shortly after. A
hand-over is marked and sent again only when it may have been lost, as recordings are."""

from __future__ import annotations

import logging
from collections.abc import Callable
from datetime import datetime, timedelta
from typing import Any

from django.conf import settings
from django.db import transaction
from django.db.models import F, Q
from django.utils import timezone

from calls import transcripts
from calls.media import media_time_limits
from calls.models import Call, Recording, RecordingStatus
from calls.services import call_transcription_save
from calls.transcripts import reading_context
from core import handover
from core.handover import lost_before
from core.logging import log_event
from core.shutdown import WorkerStopping, interruptible
from core.storage import STORAGE_ERRORS
from core.sweeps import each
from insights.engines import (
    Heard,
    PermanentError,
    TransientError,
    engine_for_settings,
    hear,
    no_speech_reason,
    read_wav,
    speech_context,
    turns_from,
)
from insights.models import Transcription, TranscriptionStatus
from insights.redaction import redact_segments
from insights.summaries import (
    no_conversation_summary,
    other_language_summary,
    summary_write,
)
from providers.speech import Context
from providers.summaries import Summary
from understanding import LANGUAGES
from understanding import Context as ReadingContext

log = logging.getLogger(__name__)

# Recordings stored this recently with no transcription get one from the sweep; older ones
# are the ``transcribe_calls`` command's (turning transcription on never floods the queue).
SWEEP_LOOKS_BACK = timedelta(days=1)
SWEEP_BATCH = 500
RETRY_BASE_SECONDS = 30
# A run's claim lasts this much past its hard time limit: by then the worker has stopped it
# (or died), and another delivery may run it.
LEASE_AFTER_HARD_LIMIT = timedelta(seconds=30)
# Why a run that took the claim left no outcome: it died in the engine (killed, out of
# memory, a library aborting the process) or was stopped at its hard time limit.
NO_OUTCOME = "its runs ended with no outcome (the worker stopped inside the engine)"


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
    the worker that claimed it (``_claim``: another delivery meanwhile leaves it). The
    engine runs outside any transaction (it takes seconds to minutes, and SQLite would
    hold its write lock all along); the text, the turns and the summary are then saved on
    the call with the outcome in one transaction. A recording with no speech on the lead's
    side is "no conversation", with the reason, and its summary says so. A transient error
    is tried again later, up to ``TRANSCRIPTION_MAX_TRIES``; a permanent one fails at once.
    A run whose worker is stopping is handed back (``_hand_back``). Returns the
    transcription run, or None when there was nothing to run or it was handed back."""
    claimed = timezone.now()
    if not _claim(call_id, claimed):
        return None
    job = Transcription.objects.select_related("call__account", "call__agent").get(
        call_id=call_id
    )
    try:
        # The worker stopping ends this block (core/shutdown.py): the run is handed back.
        with interruptible():
            heard = _hear(job)
    except WorkerStopping:
        _hand_back(job, claimed)
        return None
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
    if heard is None:
        return _settle(job, claimed, lambda: _finish(job, TranscriptionStatus.SKIPPED))
    agent, lead, silence, language, _ = heard
    call = job.call
    redactions: list[dict[str, Any]] | None = None
    if call.account.redact_numbers:
        # Out before anything reads the words: summary, suggestions, webhooks, write-back.
        agent, lead, spans = redact_segments(agent, lead)
        redactions = [span.as_dict() for span in spans]
    turns = turns_from(agent, lead)
    if silence:
        summary = Summary(no_conversation_summary(silence))
    elif language not in LANGUAGES:
        summary = Summary(other_language_summary(language))
    else:
        transcript = transcripts.render(turns, transcripts.speaker_names(call))
        summary = summary_write(call=call, turns=turns, transcript=transcript)

    def done() -> Transcription:
        call_transcription_save(
            call=call,
            turns=turns,
            summary=summary.text,
            redactions=redactions,
            language=language,
        )
        job.reason = silence
        job.summary_evidence = summary.evidence
        _finish(
            job,
            TranscriptionStatus.NO_CONVERSATION
            if silence
            else TranscriptionStatus.DONE,
        )
        log_event(
            log,
            "transcription.no_conversation" if silence else "transcription.done",
            call_id=call_id,
            engine=job.engine,
            audio_seconds=job.audio_seconds,
            took_seconds=job.took_seconds,
            turns=len(turns),
            reason=silence,
            language=language,
            redacted=len(redactions or ()),
        )
        return job

    return _settle(job, claimed, done)


def _hear(job: Transcription) -> Heard | None:
    """The engine's part of a run (``engines.hear``); None when no engine is configured.
    Notes the engine, the audio's length and the time taken on ``job`` (saved with the
    outcome)."""
    engine = engine_for_settings()
    if engine is None:
        return None
    job.engine, job.model = engine.name, engine.model[:255]
    channels = read_wav(_audio(job.call_id))
    job.audio_seconds = round(channels.seconds, 3)
    heard = hear(
        engine,
        channels,
        # Only a recording with something to hear needs the call's context.
        context=None if no_speech_reason(channels) else _context(job.call_id),
        languages=settings.TRANSCRIPTION_LANGUAGES,
    )
    job.took_seconds = round(heard.seconds, 3)
    return heard


def _claim(call_id: int, claimed: datetime) -> bool:
    """Take a pending transcription to run, counting the try, under a lease that ends
    shortly after the run's hard time limit (sized to the recording). Refused while another
    run holds it; refused, and the transcription failed, once ``TRANSCRIPTION_MAX_TRIES``
    runs have taken it: runs that died inside the engine count, so none is taken forever."""
    seconds = (
        Recording.objects.filter(call_id=call_id)
        .values_list("seconds", flat=True)
        .first()
    )
    hard_limit = timedelta(seconds=media_time_limits(seconds)["time_limit"])
    free = Transcription.objects.filter(
        Q(claimed_until__isnull=True) | Q(claimed_until__lt=claimed),
        call_id=call_id,
        status=TranscriptionStatus.PENDING,
    )
    max_tries = settings.TRANSCRIPTION_MAX_TRIES
    if free.filter(tries__lt=max_tries).update(
        claimed_at=claimed,
        claimed_until=claimed + hard_limit + LEASE_AFTER_HARD_LIMIT,
        tries=F("tries") + 1,
    ):
        return True
    with transaction.atomic():
        job = free.select_for_update().filter(tries__gte=max_tries).first()
        if job is not None:
            job.claimed_at = job.claimed_until = None
            job.save(update_fields=["claimed_at", "claimed_until"])
            _fail(job, f"gave up after {job.tries} tries: {NO_OUTCOME}")
    return False


def _hand_back(job: Transcription, claimed: datetime) -> None:
    """A run its worker stopped (core/shutdown.py): the claim released, the try not
    counted, and the transcription handed over again (to the sweep if the broker is
    down), so the next worker runs it at once; this delivery then ends as done."""
    if Transcription.objects.filter(
        pk=job.pk, status=TranscriptionStatus.PENDING, claimed_at=claimed
    ).update(
        claimed_at=None,
        claimed_until=None,
        tries=F("tries") - 1,
        dispatched_at=timezone.now(),
    ):
        log_event(log, "transcription.handed_back", call_id=job.call_id)
        _dispatch(job.call_id)


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
        job.claimed_at = job.claimed_until = None
        job.save(update_fields=["claimed_at", "claimed_until"])
        return outcome()


def _context(call_id: int) -> Context:
    """What the engine may expect to hear on the call (``engines.speech_context``)."""
    call = Call.objects.select_related("agent", "account").get(pk=call_id)
    return speech_context(ReadingContext.of(reading_context(call)))


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
    except (
        STORAGE_ERRORS
    ) as error:  # storage out of reach (disk, S3): may be back later
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
            "summary_evidence",
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


def _dispatch(
    call_id: int, *, seconds: float | None = None, countdown: float | None = None
) -> None:
    """Hand a transcription to a worker, under time limits sized to its recording
    (``seconds``, read when not given); with the broker down its hand-over mark is cleared
    and the sweep hands it over later."""
    from insights.tasks import transcription_task

    if seconds is None:
        seconds = (
            Recording.objects.filter(call_id=call_id)
            .values_list("seconds", flat=True)
            .first()
        )
    options: dict[str, Any] = media_time_limits(seconds)
    if countdown:
        options["countdown"] = countdown
    handover.hand_over(
        transcription_task,
        kwargs={"call_id": call_id},
        event="transcription.dispatch_failed",
        log=log,
        rows=Transcription.objects.filter(
            call_id=call_id, status=TranscriptionStatus.PENDING
        ),
        marked_first=True,
        **options,
    )


def _unmark(call_id: int) -> None:
    Transcription.objects.filter(
        call_id=call_id, status=TranscriptionStatus.PENDING
    ).update(dispatched_at=None)


def _hand_over(call_id: int, seconds: float | None) -> None:
    """A sweep's hand-over of a row it marked: one that raises is unmarked, so the next
    sweep tries it again."""
    try:
        _dispatch(call_id, seconds=seconds)
    except BaseException:
        _unmark(call_id)
        raise


def insights_sweep(*, now: datetime | None = None) -> dict[str, int]:
    """Re-drive what no worker is driving, each transcription alone (``core.sweeps.each``):
    pending ones whose hand-over may have been lost (never handed over, the broker's
    visibility timeout passed or a new broker server since: ``lost_before``; or
    a run took it and ended with no outcome, its lease over), never one merely waiting in a
    queue; and recordings stored lately with no transcription (unless transcription is
    off). Returns how many of each."""
    now = now or timezone.now()
    counts = {"pending": 0, "created": 0}
    stale = (
        Transcription.objects.filter(status=TranscriptionStatus.PENDING)
        .filter(
            Q(dispatched_at__isnull=True)
            | Q(dispatched_at__lt=lost_before(now))
            | Q(claimed_until__lt=now, dispatched_at__lt=F("claimed_until"))
        )
        .order_by("pk")
        .values_list("call_id", "dispatched_at", "call__recording__seconds")
    )

    def send_again(row: tuple[int, datetime | None, float | None]) -> None:
        call_id, dispatched, seconds = row
        # Marked first, and only if no one marked it since: one hand-over per sweep.
        if not Transcription.objects.filter(
            call_id=call_id,
            status=TranscriptionStatus.PENDING,
            dispatched_at=dispatched,
        ).update(dispatched_at=now):
            return
        _hand_over(call_id, seconds)
        counts["pending"] += 1

    each(
        sweep="transcriptions",
        items=list(stale[:SWEEP_BATCH]),
        handle=send_again,
        key=_first,
    )
    if settings.TRANSCRIPTION_BACKEND == "none":
        return counts
    missing = (
        Call.objects.filter(
            recording__status=RecordingStatus.STORED,
            recording__stored_at__gte=now - SWEEP_LOOKS_BACK,
            transcription_job__isnull=True,
        )
        .order_by("pk")
        .values_list("pk", "recording__seconds")
    )

    def create(row: tuple[int, float | None]) -> None:
        call_id, seconds = row
        _, created = Transcription.objects.get_or_create(
            call_id=call_id,
            defaults={"engine": settings.TRANSCRIPTION_BACKEND, "dispatched_at": now},
        )
        if not created:
            return
        _hand_over(call_id, seconds)
        counts["created"] += 1

    each(
        sweep="transcriptions",
        items=list(missing[:SWEEP_BATCH]),
        handle=create,
        key=_first,
    )
    return counts


def _first(row: tuple[Any, ...]) -> Any:
    return row[0]
