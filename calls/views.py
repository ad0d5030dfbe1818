"""Pages and files of the calls app."""

from __future__ import annotations

import re
from collections.abc import Iterator

from django.core.files.storage import default_storage
from django.http import Http404, HttpRequest, HttpResponse, StreamingHttpResponse
from django.views.decorators.http import require_safe

from calls.models import CallAttempt, Recording, RecordingStatus
from calls.recordings import (
    CHUNK,
    SHORTEST_SECONDS,
    attempt_for_token,
    audio_range,
    wav_size,
)
from core.storage import STORAGE_ERRORS, read_range

_RANGE = re.compile(r"bytes=(\d*)-(\d*)")


@require_safe
def recording(request: HttpRequest, token: str) -> HttpResponse | StreamingHttpResponse:
    """A call's recording behind its signed link, streamed: the stored audio once there is
    one (``calls.media``); a provider's recording still being copied answers 503 with
    ``Retry-After``; a simulated call without speech plays a tone as long as the call.
    Answers HTTP Range requests so a player can seek. A revoked link is not found."""
    attempt_id = attempt_for_token(token)
    attempt = (
        CallAttempt.objects.select_related("call")
        .only("duration", "call__recording_url")
        .filter(pk=attempt_id)
        .first()
        if attempt_id is not None
        else None
    )
    if attempt is None or not attempt.call.recording_url.endswith(f"/{token}.wav"):
        raise Http404("No such recording.")
    kept = (
        Recording.objects.filter(call_id=attempt.call_id)
        .values_list("status", "audio", "source_url")
        .first()
    )
    stored = kept[1] if kept and kept[0] == RecordingStatus.STORED else ""
    if not stored and kept and kept[2]:
        # A provider's recording not (yet) copied here: never a stand-in tone for it.
        if kept[0] == RecordingStatus.PENDING:
            return _waiting("The recording is being stored.")
        raise Http404("No such recording.")
    seconds = max(attempt.duration or 0, SHORTEST_SECONDS)
    try:
        total = default_storage.size(stored) if stored else wav_size(seconds)
    except FileNotFoundError as error:  # its file gone (a store changed, not copied)
        raise Http404("No such recording.") from error
    except STORAGE_ERRORS:  # the store out of reach: it may be back soon
        return _waiting("The recording's storage cannot be reached.")
    asked = _byte_range(request, total)
    if asked is None:
        refused = HttpResponse(status=416)
        refused["Content-Range"] = f"bytes */{total}"
        return refused
    start, end, partial = asked
    response = StreamingHttpResponse(
        _stored_range(stored, start, end)
        if stored
        else audio_range(seconds, start, end),
        status=206 if partial else 200,
        content_type="audio/wav",
    )
    response["Content-Length"] = str(end - start + 1)
    response["Accept-Ranges"] = "bytes"
    if partial:
        response["Content-Range"] = f"bytes {start}-{end}/{total}"
    return response


def _waiting(reason: str) -> HttpResponse:
    waiting = HttpResponse(reason, status=503)
    waiting["Retry-After"] = "30"
    return waiting


def _byte_range(request: HttpRequest, total: int) -> tuple[int, int, bool] | None:
    """The bytes asked for (first, last, whether a Range was asked), or None when the
    Range cannot be satisfied."""
    asked = _RANGE.fullmatch(request.headers.get("Range", "").strip())
    if not asked:
        return 0, total - 1, False
    first, last = asked.groups()
    start, end = 0, total - 1
    if first:
        start, end = int(first), min(int(last), total - 1) if last else total - 1
    elif last:
        start = max(0, total - int(last))
    if not (first or last) or start >= total or start > end:
        return None
    return start, end, True


def _stored_range(name: str, start: int, end: int) -> Iterator[bytes]:
    """Bytes ``start`` to ``end`` (inclusive) of a stored file, read in chunks as they are
    sent (a long call's WAV is never held whole): a seek under ``MEDIA_ROOT``, a ranged
    GET on S3 (``core.storage``); closed when the response is."""
    return read_range(default_storage, name, start, end, chunk=CHUNK)
