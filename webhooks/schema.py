"""The events in the OpenAPI schema's ``webhooks`` section (OpenAPI 3.1): one entry per
type, its body's shape and the example the integrator's guide shows."""

from __future__ import annotations

from typing import Any

from drf_spectacular.utils import (
    OpenApiExample,
    OpenApiRequest,
    OpenApiResponse,
    OpenApiWebhook,
    extend_schema,
)
from rest_framework import serializers

from webhooks.examples import EXAMPLES
from webhooks.models import EventType

SIGNED = (
    " Signed as Standard Webhooks define it: headers `webhook-id` (the event id), "
    "`webhook-timestamp` and `webhook-signature` (`v1,` and the base64 HMAC-SHA256 of "
    '`"{id}.{timestamp}.{body}"`); see the integrator\'s guide, "Webhooks".'
)
# texting.models' Purpose and TextStatus (webhooks sits below texting: not imported).
TEXT_PURPOSES = [
    "instant",
    "not_reached",
    "no_agent",
    "waiting",
    "reply",
    "help",
    "opt_out",
    "opt_in",
    "forward",
    "reminder",
    "inbound",
]
TEXT_STATUSES = [
    "scheduled",
    "sending",
    "queued",
    "sent",
    "delivered",
    "undelivered",
    "failed",
    "canceled",
    "received",
]
WHEN = {
    EventType.LEAD_RECEIVED: "A lead was stored and accepted.",
    EventType.LEAD_REFUSED: "A lead was stored but will not be called; `reason` says why.",
    EventType.AGENT_PRESSES_ONE: "An agent accepted the lead (pressed 1); the lead is being dialed.",
    EventType.CALL_COMPLETED: "The call reached its final status.",
    EventType.CALL_SCORED: "A scorer scored the call (again when the score changes).",
    EventType.CALL_COACHED: "A manager wrote coaching on the call.",
    EventType.TRANSCRIPTION_READY: "The call's transcription was stored.",
    EventType.TEXT_SENT: "The texting provider took a text to a lead or the team "
    "(`status` queued); delivery statuses are not events.",
    EventType.TEXT_RECEIVED: "A lead's text was stored (STOP, START, HELP and call-me "
    "replies included).",
    EventType.LEAD_OPTED_OUT: "A lead texted STOP (or another opt-out word): no text "
    "goes to the number until it texts START.",
    EventType.APPOINTMENT_SET: "An appointment was set for the lead (by a person on the "
    "call page, a scorer, an integrator, or a proposal a person accepted); a moved "
    "appointment is a new one whose `replaces` names the old.",
    EventType.APPOINTMENT_CONFIRMED: "The lead confirmed the appointment.",
    EventType.APPOINTMENT_KEPT: "The lead came: the appointment was marked kept.",
    EventType.APPOINTMENT_NO_SHOW: "The lead did not come: the appointment was marked "
    "no-show.",
    EventType.APPOINTMENT_CANCELLED: "The appointment was cancelled.",
    EventType.CONSENT_GIVEN: "The consent ledger recorded a consent (a lead submitted, a "
    "click-to-call request, a call-me text, support, an integrator) or a re-consent "
    "(the lead's START).",
    EventType.CONSENT_REVOKED: "The consent ledger recorded a revocation (a text opt-out, "
    "a spoken one a person confirmed, a manager's mark, an integrator, a do-not-call "
    "list).",
    EventType.TEST_EVENT: 'Support pressed "send test event".',
}


class AccountOut(serializers.Serializer):
    id = serializers.IntegerField()
    name = serializers.CharField()


class LeadOut(serializers.Serializer):
    first_name = serializers.CharField()
    last_name = serializers.CharField()
    phone = serializers.CharField()
    email = serializers.CharField()
    prospect_id = serializers.CharField()


class AgentOut(serializers.Serializer):
    first_name = serializers.CharField()
    last_name = serializers.CharField()
    email = serializers.CharField()
    code = serializers.CharField()


class CallOut(serializers.Serializer):
    id = serializers.IntegerField()
    status = serializers.CharField()
    inbound = serializers.CharField()
    outbound = serializers.CharField()
    click_to_call = serializers.ChoiceField(choices=[0, 1])
    date_received = serializers.DateTimeField()
    origination_time = serializers.DateTimeField(allow_null=True)
    response_time = serializers.IntegerField(allow_null=True)
    duration = serializers.IntegerField(allow_null=True)
    attempts = serializers.IntegerField()
    agent = serializers.CharField(allow_null=True)
    department = serializers.CharField()
    recording = serializers.URLField(allow_null=True)


class VehicleOut(serializers.Serializer):
    make = serializers.CharField()
    model = serializers.CharField()
    year = serializers.CharField()
    registration = serializers.CharField()
    summary = serializers.CharField()


class VehiclesOut(serializers.Serializer):
    current = VehicleOut()
    called_on = VehicleOut()


class AppointmentOut(serializers.Serializer):
    date = serializers.DateField(allow_null=True)
    time = serializers.CharField(allow_null=True)


class CategoryOut(serializers.Serializer):
    name = serializers.CharField()
    applied = serializers.BooleanField()


class ScoredCallOut(serializers.Serializer):
    scored_at = serializers.DateTimeField()
    scored_by = serializers.CharField()
    first_name = serializers.CharField()
    last_name = serializers.CharField()
    alt_phone = serializers.CharField()
    email = serializers.CharField()
    department = serializers.CharField()
    notes = serializers.CharField()
    appointment = AppointmentOut()
    call_end = serializers.CharField()
    alert = serializers.CharField()
    lead_type = serializers.CharField()
    vehicles = VehiclesOut()
    categories = CategoryOut(many=True)
    wow = serializers.BooleanField()


class CoachingOut(serializers.Serializer):
    notes = serializers.CharField()
    coached_by = serializers.CharField()
    coached_at = serializers.DateTimeField()


class TranscriptionOut(serializers.Serializer):
    text = serializers.CharField()
    summary = serializers.CharField()


# "from" is a Python keyword: the text's shape is built from a dict.
TextOut = type(
    "TextOut",
    (serializers.Serializer,),
    {
        "id": serializers.IntegerField(),
        "direction": serializers.ChoiceField(
            choices=["out", "in"],
            help_text="out: to the lead (or team); in: from the lead.",
        ),
        "purpose": serializers.ChoiceField(choices=TEXT_PURPOSES),
        "from": serializers.CharField(
            help_text="E.164, or a Messaging Service SID (MG...) for a text sent "
            "through one."
        ),
        "to": serializers.CharField(),
        "body": serializers.CharField(),
        "status": serializers.ChoiceField(choices=TEXT_STATUSES),
        "created": serializers.DateTimeField(),
    },
)


class OptOutOut(serializers.Serializer):
    phone = serializers.CharField()
    at = serializers.DateTimeField()
    message = serializers.CharField(help_text="What the lead sent.")


class ConsentOut(serializers.Serializer):
    id = serializers.IntegerField(help_text="The ledger entry's id.")
    kind = serializers.ChoiceField(choices=["consent", "revocation", "reconsent"])
    phone = serializers.CharField(help_text='E.164, or "" for an e-mail address.')
    email = serializers.CharField(help_text='The e-mail address, or "".')
    channel = serializers.ChoiceField(choices=["calls", "texts", "all"])
    source = serializers.ChoiceField(  # type: ignore[assignment]
        choices=[
            "lead",
            "click_to_call",
            "support",
            "text",
            "manager",
            "spoken",
            "integrator",
            "do_not_call",
        ]
    )
    at = serializers.DateTimeField(help_text="When the person gave or withdrew it.")
    by = serializers.CharField(
        help_text='Who recorded it ("The person" for their own).'
    )
    detail = serializers.CharField(help_text="Its words or context.")
    reference = serializers.CharField(
        help_text='What it came with: "call 7", "text 12".'
    )


def _event(name: str, **members: Any) -> type[serializers.Serializer]:
    fields: dict[str, Any] = {
        "type": serializers.ChoiceField(choices=[name]),
        "id": serializers.CharField(help_text="Unique per event: the idempotency key."),
        "created": serializers.DateTimeField(),
        "account": AccountOut(allow_null=True),
        **members,
    }
    title = "".join(part.title() for part in name.split("_"))
    return type(f"{title}Payload", (serializers.Serializer,), fields)


def _lead_outcome(name: str, **members: Any) -> type[serializers.Serializer]:
    return _event(
        name,
        lead_id=serializers.IntegerField(help_text="The intake's leadId."),
        call_id=serializers.IntegerField(allow_null=True),
        lead=LeadOut(),
        **members,
    )


def _call(name: str, **members: Any) -> type[serializers.Serializer]:
    return _event(
        name, call=CallOut(), agent=AgentOut(allow_null=True), lead=LeadOut(), **members
    )


def _text(name: str, **members: Any) -> type[serializers.Serializer]:
    return _event(
        name,
        text=TextOut(),
        call=CallOut(allow_null=True, help_text="The lead's latest call, or null."),
        agent=AgentOut(allow_null=True),
        lead=LeadOut(
            help_text="The lead of the call; only `phone` when there is no call."
        ),
        **members,
    )


class AppointmentEventOut(serializers.Serializer):
    id = serializers.IntegerField()
    status = serializers.ChoiceField(
        choices=[
            "proposed",
            "set",
            "confirmed",
            "kept",
            "no_show",
            "cancelled",
            "rescheduled",
        ]
    )
    kind = serializers.ChoiceField(choices=["sales_visit", "test_drive", "service"])
    starts_at = serializers.DateTimeField(help_text="The moment, in UTC.")
    date = serializers.DateField(help_text="The day in the account's timezone.")
    time = serializers.CharField(help_text="HH:MM in the account's timezone.")
    timezone = serializers.CharField(help_text="The account's timezone (IANA).")
    vehicle = serializers.CharField()
    set_by = serializers.ChoiceField(
        choices=["agent", "manager", "scorer", "staff", "service", "lead", "integrator"]
    )
    call_id = serializers.IntegerField(allow_null=True)
    replaces = serializers.IntegerField(
        allow_null=True, help_text="The appointment this one moved, or null."
    )
    created = serializers.DateTimeField()


def _appointment(name: str) -> type[serializers.Serializer]:
    return _event(
        name,
        appointment=AppointmentEventOut(),
        call=CallOut(allow_null=True),
        agent=AgentOut(allow_null=True),
        lead=LeadOut(),
    )


BODIES: dict[str, type[serializers.Serializer]] = {
    EventType.LEAD_RECEIVED: _lead_outcome(
        "lead_received", message=serializers.CharField()
    ),
    EventType.LEAD_REFUSED: _lead_outcome(
        "lead_refused",
        reason=serializers.ChoiceField(
            choices=[
                "no_vendor",
                "no_rule",
                "do_not_process",
                "no_prospect_id",
                "malformed",
                "not_adf",
                "too_large",
            ]
        ),
        message=serializers.CharField(),
    ),
    EventType.AGENT_PRESSES_ONE: _call("agent_presses_one"),
    EventType.CALL_COMPLETED: _call("call_completed"),
    EventType.CALL_SCORED: _call("call_scored", scored_call=ScoredCallOut()),
    EventType.CALL_COACHED: _call("call_coached", coaching=CoachingOut()),
    EventType.TRANSCRIPTION_READY: _call(
        "transcription_ready", transcription=TranscriptionOut()
    ),
    EventType.TEXT_SENT: _text("text_sent"),
    EventType.TEXT_RECEIVED: _text("text_received"),
    EventType.LEAD_OPTED_OUT: _text("lead_opted_out", opt_out=OptOutOut()),
    EventType.APPOINTMENT_SET: _appointment("appointment_set"),
    EventType.APPOINTMENT_CONFIRMED: _appointment("appointment_confirmed"),
    EventType.APPOINTMENT_KEPT: _appointment("appointment_kept"),
    EventType.APPOINTMENT_NO_SHOW: _appointment("appointment_no_show"),
    EventType.APPOINTMENT_CANCELLED: _appointment("appointment_cancelled"),
    EventType.CONSENT_GIVEN: _event("consent_given", consent=ConsentOut()),
    EventType.CONSENT_REVOKED: _event("consent_revoked", consent=ConsentOut()),
    EventType.TEST_EVENT: _event("test_event", message=serializers.CharField()),
}


def _webhook(type: EventType) -> OpenApiWebhook:
    return OpenApiWebhook(
        name=type.value,
        decorator=extend_schema(
            summary=type.label,
            description=WHEN[type] + SIGNED,
            request={
                "application/json": OpenApiRequest(
                    BODIES[type],
                    examples=[OpenApiExample(type.value, value=EXAMPLES[type.value])],
                )
            },
            responses={
                200: OpenApiResponse(description="Any 2xx: received."),
                410: OpenApiResponse(description="Gone: the endpoint is disabled."),
            },
        ),
    )


# One name per event type: SPECTACULAR_SETTINGS["WEBHOOKS"] lists them by import path.
lead_received = _webhook(EventType.LEAD_RECEIVED)
lead_refused = _webhook(EventType.LEAD_REFUSED)
agent_presses_one = _webhook(EventType.AGENT_PRESSES_ONE)
call_completed = _webhook(EventType.CALL_COMPLETED)
call_scored = _webhook(EventType.CALL_SCORED)
call_coached = _webhook(EventType.CALL_COACHED)
transcription_ready = _webhook(EventType.TRANSCRIPTION_READY)
text_sent = _webhook(EventType.TEXT_SENT)
text_received = _webhook(EventType.TEXT_RECEIVED)
lead_opted_out = _webhook(EventType.LEAD_OPTED_OUT)
appointment_set = _webhook(EventType.APPOINTMENT_SET)
appointment_confirmed = _webhook(EventType.APPOINTMENT_CONFIRMED)
appointment_kept = _webhook(EventType.APPOINTMENT_KEPT)
appointment_no_show = _webhook(EventType.APPOINTMENT_NO_SHOW)
appointment_cancelled = _webhook(EventType.APPOINTMENT_CANCELLED)
consent_given = _webhook(EventType.CONSENT_GIVEN)
consent_revoked = _webhook(EventType.CONSENT_REVOKED)
test_event = _webhook(EventType.TEST_EVENT)
