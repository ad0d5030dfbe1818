"""Twilio Messaging's callbacks: a lead's text (the number's or Messaging Service's
inbound webhook) and each text's delivery status. Signed like the voice callbacks
(``providers.twilio.signed_by_twilio``): 403 before anything is read;
then each member they read is checked as the voice callbacks check theirs: 400 for one
Twilio never sends so, before anything is read either."""

from __future__ import annotations

import logging

from django.http import (
    HttpRequest,
    HttpResponse,
    HttpResponseBadRequest,
    HttpResponseForbidden,
)
from django.views.decorators.csrf import csrf_exempt
from django.views.decorators.http import require_POST
from twilio.twiml.messaging_response import MessagingResponse

from core.logging import log_event
from providers.twilio import (
    STATUS_WORD,
    Form,
    Member,
    malformed_member,
    max_length_of,
    number,
    printable,
    signed_by_twilio,
    storable_text,
    twilio_sid,
)
from texting.inbound import text_receive
from texting.models import Text
from texting.services import text_status_update

log = logging.getLogger(__name__)


# A lead's text: ``From`` is stored as the thread's lead, ``To`` as the number it reached,
# ``MessageSid`` keeps a repeat from being stored twice (Twilio always sends one), and
# ``MessagingServiceSid`` finds the account as a sending number would.
INBOUND: Form = {
    "MessageSid": Member(twilio_sid, required=True),
    "MessagingServiceSid": Member(twilio_sid),
    "From": Member(printable(max_length_of(Text, "lead_phone")), required=True),
    "To": Member(printable(max_length_of(Text, "to_number")), required=True),
    "Body": Member(storable_text),
}
STATUS: Form = {"MessageStatus": STATUS_WORD, "ErrorCode": Member(number)}


def _checked(request: HttpRequest, form: Form) -> HttpResponse | None:
    """The refusal of a callback not signed by Twilio (403), or holding a member of
    ``form`` as Twilio never sends it (400); None for one to act on."""
    if not signed_by_twilio(request):
        _refused(request, "signature", 403)
        return HttpResponseForbidden()
    malformed = malformed_member(request, form)
    if malformed is not None:
        _refused(request, "malformed", 400, member=malformed)
        return HttpResponseBadRequest()
    return None


def _refused(request: HttpRequest, reason: str, status: int, **fields: str) -> None:
    log_event(
        log,
        "twilio.callback_refused",
        level=logging.WARNING,
        path=request.path,
        reason=reason,
        status=status,
        **fields,
    )


@csrf_exempt
@require_POST
def inbound(request: HttpRequest) -> HttpResponse:
    """A lead's text: stored and acted on; answered with empty TwiML (any answer of ours
    is sent as a text of its own, stored in the thread with its status)."""
    if (refusal := _checked(request, INBOUND)) is not None:
        return refusal
    text_receive(
        to_number=request.POST.get("To", ""),
        from_number=request.POST.get("From", ""),
        body=request.POST.get("Body", ""),
        provider="twilio",
        provider_id=request.POST.get("MessageSid", ""),
        service_sid=request.POST.get("MessagingServiceSid", ""),
    )
    return HttpResponse(str(MessagingResponse()), content_type="text/xml")


@csrf_exempt
@require_POST
def status(request: HttpRequest, text_id: int) -> HttpResponse:
    """A text's delivery status (queued, sent, delivered, undelivered, failed)."""
    if (refusal := _checked(request, STATUS)) is not None:
        return refusal
    code = request.POST.get("ErrorCode", "")
    text_status_update(
        text_id=text_id,
        status=request.POST.get("MessageStatus", ""),
        error=f"Twilio error {code}" if code else "",
    )
    return HttpResponse(status=204)
