"""Twilio Messaging's callbacks: a lead's text (the number's or Messaging Service's
inbound webhook) and each text's delivery status. Signed like the voice callbacks
(``calls.telephony.twilio_callbacks.signed_by_twilio``): 403 before anything is read."""

from __future__ import annotations

import logging

from django.http import HttpRequest, HttpResponse, HttpResponseForbidden
from django.views.decorators.csrf import csrf_exempt
from django.views.decorators.http import require_POST
from twilio.twiml.messaging_response import MessagingResponse

from calls.telephony.twilio_callbacks import signed_by_twilio
from core.logging import log_event
from texting.inbound import text_receive
from texting.services import text_status_update

log = logging.getLogger(__name__)


def _refused(request: HttpRequest) -> HttpResponse:
    log_event(
        log,
        "twilio.callback_refused",
        level=logging.WARNING,
        path=request.path,
        reason="signature",
        status=403,
    )
    return HttpResponseForbidden()


@csrf_exempt
@require_POST
def inbound(request: HttpRequest) -> HttpResponse:
    """A lead's text: stored and acted on; answered with empty TwiML (any answer of ours
    is sent as a text of its own, stored in the thread with its status)."""
    if not signed_by_twilio(request):
        return _refused(request)
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
    if not signed_by_twilio(request):
        return _refused(request)
    code = request.POST.get("ErrorCode", "")
    text_status_update(
        text_id=text_id,
        status=request.POST.get("MessageStatus", ""),
        error=f"Twilio error {code}" if code else "",
    )
    return HttpResponse(status=204)
