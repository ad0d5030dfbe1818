"""Pages and files of the calls app."""

from django.http import Http404, HttpRequest, HttpResponse

from calls.recordings import attempt_for_token, generated_audio


def recording(request: HttpRequest, token: str) -> HttpResponse:
    """A simulated call's recording: a short generated audio file behind a signed link."""
    if attempt_for_token(token) is None:
        raise Http404("No such recording.")
    return HttpResponse(generated_audio(), content_type="audio/wav")
