"""Twilio's callbacks: each one is signed, mapped to a provider-neutral ``Event`` for
``calls.pipeline.events.call_event``, and answered with the TwiML of the returned ``Instruction``.

Twilio may post a callback twice or out of order; ``call_event`` only ever moves a leg
forward, so a repeat or a late status changes nothing. Each is checked first as every
Twilio request is (``providers.twilio``): a signed callback holding a member
as Twilio never sends it (a NUL, a duration or a URL no column holds) is refused with 400
before anything is read or written; the texting callbacks check theirs the same way.
"""

from __future__ import annotations

import logging
import re
from collections.abc import Callable
from functools import wraps

from django.http import (
    HttpRequest,
    HttpResponse,
    HttpResponseBadRequest,
    HttpResponseForbidden,
    HttpResponseNotFound,
)
from django.views.decorators.csrf import csrf_exempt
from django.views.decorators.http import require_POST
from twilio.twiml.voice_response import VoiceResponse

from calls.media import recording_source_set
from calls.models import CallAttempt, Leg, Recording
from calls.pipeline.events import call_event
from calls.recordings import recording_link
from core.logging import log_event
from providers.telephony import Event, EventKind, Instruction
from providers.twilio import (
    STATUS_LENGTH,
    STATUS_WORD,
    Form,
    Member,
    malformed_member,
    max_length_of,
    number,
    signed_by_twilio,
    webhook_url,
)

log = logging.getLogger(__name__)

GATHER_TIMEOUT = 8
LEAD_RING_SECONDS = 30
NO_KEY_PRESSED = "No key was pressed. Goodbye."
LEAD_STATUS_EVENTS = "initiated ringing answered completed"

# CallStatus of a status callback -> what it means for the leg; statuses left out
# (queued, initiated, and in-progress on an agent leg, whose answer URL reports it) change nothing.
AGENT_STATUS = {
    "ringing": EventKind.RINGING,
    "completed": EventKind.COMPLETED,
    "busy": EventKind.BUSY,
    "no-answer": EventKind.NO_ANSWER,
    "failed": EventKind.FAILED,
    "canceled": EventKind.COMPLETED,
}
LEAD_STATUS = {
    "ringing": EventKind.RINGING,
    "in-progress": EventKind.ANSWERED,
    "answered": EventKind.ANSWERED,
    "completed": EventKind.COMPLETED,
    "busy": EventKind.BUSY,
    "no-answer": EventKind.NO_ANSWER,
    "failed": EventKind.FAILED,
    "canceled": EventKind.NO_ANSWER,
}

# A recording's URL is stored with ".wav" added (``calls.media.recording_source_set``).
_RECORDING_URL_LENGTH = max_length_of(Recording, "source_url") - len(".wav")
_KEYS = re.compile(r"[0-9*#]+")
_URL = re.compile(r"https?://[!-~]+")


def _keys(value: str) -> bool:
    return len(value) <= STATUS_LENGTH and _KEYS.fullmatch(value) is not None


def _recording_url(value: str) -> bool:
    return len(value) <= _RECORDING_URL_LENGTH and _URL.fullmatch(value) is not None


CALL_STATUS: Form = {"CallStatus": STATUS_WORD}
LEG_STATUS: Form = {**CALL_STATUS, "CallDuration": Member(number)}
GATHER: Form = {**CALL_STATUS, "Digits": Member(_keys)}
RECORDING: Form = {
    "RecordingStatus": STATUS_WORD,
    "RecordingUrl": Member(_recording_url),
}


View = Callable[[HttpRequest, int], HttpResponse]


def twilio_webhook(leg: str, form: Form = CALL_STATUS) -> Callable[[View], View]:
    """POST only, signed by Twilio (403 otherwise, before anything is looked up), with
    the members of ``form`` as Twilio sends them (400 otherwise, before anything is looked
    up either), for an attempt of ``leg`` that exists (404 otherwise)."""

    def decorate(view: View) -> View:
        @csrf_exempt
        @require_POST
        @wraps(view)
        def checked(request: HttpRequest, attempt_id: int) -> HttpResponse:
            if not signed_by_twilio(request):
                _refused(request, attempt_id, "signature", 403)
                return HttpResponseForbidden()
            malformed = malformed_member(request, form)
            if malformed is not None:
                _refused(request, attempt_id, "malformed", 400, member=malformed)
                return HttpResponseBadRequest()
            if not CallAttempt.objects.filter(pk=attempt_id, leg=leg).exists():
                _refused(request, attempt_id, "no_such_leg", 404)
                return HttpResponseNotFound()
            log_event(
                log,
                "twilio.callback",
                level=logging.DEBUG,
                view=view.__name__,
                attempt_id=attempt_id,
                call_status=request.POST.get("CallStatus", ""),
            )
            return view(request, attempt_id)

        return checked

    return decorate


def _refused(
    request: HttpRequest, attempt_id: int, reason: str, status: int, **fields: str
) -> None:
    """A callback we did not act on: a wrong auth token or public URL shows up here."""
    log_event(
        log,
        "twilio.callback_refused",
        level=logging.WARNING,
        path=request.path,
        attempt_id=attempt_id,
        reason=reason,
        status=status,
        **fields,
    )


@twilio_webhook(Leg.AGENT)
def agent_answer(request: HttpRequest, attempt_id: int) -> HttpResponse:
    """The agent picked up: Twilio asks what to play (the whisper and press 1, usually)."""
    return twiml(attempt_id, call_event(Event(attempt_id, EventKind.ANSWERED)))


@twilio_webhook(Leg.AGENT, GATHER)
def agent_gather(request: HttpRequest, attempt_id: int) -> HttpResponse:
    """The agent pressed a key after the whisper."""
    digits = request.POST.get("Digits", "")
    return twiml(
        attempt_id, call_event(Event(attempt_id, EventKind.DIGITS, digits=digits))
    )


@twilio_webhook(Leg.AGENT, LEG_STATUS)
def agent_status(request: HttpRequest, attempt_id: int) -> HttpResponse:
    """A status change of the agent's leg."""
    return _status(request, attempt_id, AGENT_STATUS)


@twilio_webhook(Leg.AGENT)
def agent_dial_action(request: HttpRequest, attempt_id: int) -> HttpResponse:
    """The bridge with the lead ended; the status callbacks carry the outcome."""
    return twiml(attempt_id, Instruction.end())


@twilio_webhook(Leg.LEAD, LEG_STATUS)
def lead_status(request: HttpRequest, attempt_id: int) -> HttpResponse:
    """A status change of the lead's leg (the ``<Number>`` of the agent's ``<Dial>``)."""
    return _status(request, attempt_id, LEAD_STATUS)


@twilio_webhook(Leg.LEAD, RECORDING)
def lead_recording(request: HttpRequest, attempt_id: int) -> HttpResponse:
    """The recording of the bridged call is ready: its dual-channel audio is fetched into
    the service's storage, and the call's link is the service's own (signed, revocable,
    as a simulated call's), which plays that copy: Twilio's needs the account's
    credentials."""
    url = request.POST.get("RecordingUrl", "")
    if request.POST.get("RecordingStatus") == "completed" and url:
        link = recording_link(attempt_id)
        call_event(Event(attempt_id, EventKind.RECORDING, recording_url=link))
        recording_source_set(attempt_id=attempt_id, url=url)
    return HttpResponse(status=204)


def _status(
    request: HttpRequest, attempt_id: int, meanings: dict[str, EventKind]
) -> HttpResponse:
    kind = meanings.get(request.POST.get("CallStatus", ""))
    if kind is not None:
        duration = (
            _seconds(request.POST.get("CallDuration"))
            if kind == EventKind.COMPLETED
            else None
        )
        call_event(Event(attempt_id, kind, duration=duration))
    return HttpResponse(status=204)


def _seconds(value: str | None) -> int | None:
    try:
        return max(0, int(value or ""))
    except ValueError:
        return None


def twiml(agent_attempt_id: int, instruction: Instruction) -> HttpResponse:
    return HttpResponse(
        str(voice_response(agent_attempt_id, instruction)), content_type="text/xml"
    )


def voice_response(agent_attempt_id: int, instruction: Instruction) -> VoiceResponse:
    """The TwiML that carries out ``instruction`` on an agent's leg."""
    response = VoiceResponse()
    if instruction.gather:
        gather = response.gather(
            num_digits=1,
            action=webhook_url("agent-gather", agent_attempt_id),
            method="POST",
            timeout=GATHER_TIMEOUT,
        )
        gather.say(instruction.say)
        response.say(NO_KEY_PRESSED)
        response.hangup()
        return response
    if instruction.say:
        response.say(instruction.say)
    if instruction.connect and instruction.lead_attempt_id is not None:
        dial = response.dial(
            caller_id=instruction.caller_id,
            record="record-from-answer-dual",
            recording_status_callback=webhook_url(
                "lead-recording", instruction.lead_attempt_id
            ),
            recording_status_callback_event="completed",
            action=webhook_url("agent-dial-action", agent_attempt_id),
            timeout=LEAD_RING_SECONDS,
        )
        dial.number(
            instruction.number,
            status_callback=webhook_url("lead-status", instruction.lead_attempt_id),
            status_callback_event=LEAD_STATUS_EVENTS,
        )
    elif instruction.hangup:
        response.hangup()
    return response
