"""Pages and files of the calls app."""

from __future__ import annotations

import re

from django.http import Http404, HttpRequest, HttpResponse, StreamingHttpResponse
from django.views.decorators.http import require_safe

from calls.models import CallAttempt
from calls.recordings import SHORTEST_SECONDS, attempt_for_token, audio_range, wav_size

_RANGE = re.compile(r"bytes=(\d*)-(\d*)")


@require_safe
def recording(request: HttpRequest, token: str) -> HttpResponse | StreamingHttpResponse:
    """A simulated call's recording behind its signed link, as long as the call, streamed;
    answers HTTP Range requests so a player can seek. A revoked link is not found."""
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
    seconds = max(attempt.duration or 0, SHORTEST_SECONDS)
    total = wav_size(seconds)
    start, end, partial = 0, total - 1, False
    asked = _RANGE.fullmatch(request.headers.get("Range", "").strip())
    if asked:
        first, last = asked.groups()
        if first:
            start, end = int(first), min(int(last), total - 1) if last else total - 1
        elif last:
            start = max(0, total - int(last))
        if not (first or last) or start >= total or start > end:
            refused = HttpResponse(status=416)
            refused["Content-Range"] = f"bytes */{total}"
            return refused
        partial = True
    response = StreamingHttpResponse(
        audio_range(seconds, start, end),
        status=206 if partial else 200,
        content_type="audio/wav",
    )
    response["Content-Length"] = str(end - start + 1)
    response["Accept-Ranges"] = "bytes"
    if partial:
        response["Content-Range"] = f"bytes {start}-{end}/{total}"
    return response
