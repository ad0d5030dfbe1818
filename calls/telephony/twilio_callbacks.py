"""Twilio's callbacks: each one is signed, mapped to a provider-neutral ``Event`` for
``calls.pipeline.events.call_event``, and answered with the TwiML of the returned ``Instruction``.

Twilio may post a callback twice or out of order; ``call_event`` only ever moves a leg
forward, so a repeat or a late status changes nothing. A signed callback holding a member
as Twilio never sends it (a NUL, a duration or a URL no column holds) is refused with 400
before anything is read or written; the texting callbacks check theirs the same way.
"""

from __future__ import annotations

import logging
import re
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from functools import wraps

from django.conf import settings
from django.db.models import Model
from django.http import (
    HttpRequest,
    HttpResponse,
    HttpResponseBadRequest,
    HttpResponseForbidden,
    HttpResponseNotFound,
)
from django.views.decorators.csrf import csrf_exempt
from django.views.decorators.http import require_POST
from twilio.request_validator import RequestValidator
from twilio.twiml.voice_response import VoiceResponse

from calls.media import recording_source_set
from calls.models import CallAttempt, Leg, Recording
from calls.pipeline.events import call_event
from calls.recordings import recording_link
from calls.telephony.base import Event, EventKind, Instruction
from calls.telephony.twilio import webhook_url
from core.logging import log_event
from core.validation import digits_only

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

# --- the members of Twilio's callbacks, as Twilio sends them: a signature proves who
# signed, not that the values fit (a test tool or a leaked auth token signs anything).

_SID = re.compile(r"[A-Z]{2}[0-9a-fA-F]{32}")
_PRINTABLE = re.compile(r"[!-~]+")  # ASCII without spaces and control characters
_KEYS = re.compile(r"[0-9*#]+")
_URL = re.compile(r"https?://[!-~]+")
# Seconds and error codes: at most 9 digits, which every integer column holds.
_NUMBER_DIGITS = 9
_STATUS_LENGTH = 32


def max_length_of(model: type[Model], field: str) -> int:
    """The ``max_length`` of a text column: the longest value it stores."""
    length = getattr(model._meta.get_field(field), "max_length", None)
    if not isinstance(length, int):
        raise TypeError(f"{model.__name__}.{field} has no max_length")
    return length


# A recording's URL is stored with ".wav" added (``calls.media.recording_source_set``).
_RECORDING_URL_LENGTH = max_length_of(Recording, "source_url") - len(".wav")


def twilio_sid(value: str) -> bool:
    """A Twilio sid: two capital letters and 32 hex digits (``SM…``, ``MG…``, ``CA…``)."""
    return _SID.fullmatch(value) is not None


def printable(max_length: int) -> Callable[[str], bool]:
    """A phone number or a status word: printable ASCII, no space, at most ``max_length``."""
    return lambda value: (
        len(value) <= max_length and _PRINTABLE.fullmatch(value) is not None
    )


def number(value: str) -> bool:
    """A count of seconds or an error code: ASCII digits an integer column holds."""
    return len(value) <= _NUMBER_DIGITS and digits_only(value)


def storable_text(value: str) -> bool:
    """Free text (a lead's text): anything a text column holds, which is all but NUL."""
    return "\x00" not in value


def _keys(value: str) -> bool:
    return len(value) <= _STATUS_LENGTH and _KEYS.fullmatch(value) is not None


def _recording_url(value: str) -> bool:
    return len(value) <= _RECORDING_URL_LENGTH and _URL.fullmatch(value) is not None


@dataclass(frozen=True)
class Member:
    """One member of a callback's form: what a value of it must be (an empty value counts
    as absent), and whether Twilio always sends it."""

    valid: Callable[[str], bool]
    required: bool = False


Form = Mapping[str, Member]

STATUS_WORD = Member(printable(_STATUS_LENGTH))
CALL_STATUS: Form = {"CallStatus": STATUS_WORD}
LEG_STATUS: Form = {**CALL_STATUS, "CallDuration": Member(number)}
GATHER: Form = {**CALL_STATUS, "Digits": Member(_keys)}
RECORDING: Form = {
    "RecordingStatus": STATUS_WORD,
    "RecordingUrl": Member(_recording_url),
}


def malformed_member(request: HttpRequest, form: Form) -> str | None:
    """The name of the first member of ``form`` that this callback holds as Twilio never
    sends it (required and missing, too long, a character it never sends), else None.
    Every value of a repeated member is checked; the views read the last."""
    for name, member in form.items():
        values = request.POST.getlist(name)
        if member.required and not (values and values[-1]):
            return name
        if not all(member.valid(value) for value in values if value):
            return name
    return None


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


def signed_by_twilio(request: HttpRequest) -> bool:
    """Whether ``X-Twilio-Signature`` signs this request's public URL and form parameters
    with the account's auth token (Twilio signs the URL it called, not our internal host)."""
    signature = request.headers.get("X-Twilio-Signature", "")
    if not signature or not settings.TWILIO_AUTH_TOKEN:
        return False
    url = settings.PUBLIC_BASE_URL + request.get_full_path()
    return bool(
        RequestValidator(settings.TWILIO_AUTH_TOKEN).validate(
            url, request.POST, signature
        )
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
