"""The consent endpoint: an integrator (a CRM, a call center's system) records that a
person withdrew or gave consent to an account's calls or texts, and reads a number's
state and history. It takes the account's scored-data key (``apikey``), answers in the
envelope shape, and reads and writes that account's ledger only."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from django.core.exceptions import ValidationError as DjangoValidationError
from django.core.validators import validate_email
from drf_spectacular.utils import OpenApiParameter, OpenApiResponse, extend_schema
from rest_framework import serializers
from rest_framework.request import Request
from rest_framework.response import Response

from accounts.authentication import AccountKeyApi
from consent.selectors import calls_revocation
from consenting.payloads import consent_object
from consenting.selectors import consent_history
from consenting.services import integrator_consent
from core.api import ApiError, ValidationFailed
from core.phones import to_e164
from core.schema import RETRY_AFTER, ErrorEnvelope, error_responses
from texting.selectors import opt_out_in_force
from webhooks.schema import ConsentOut  # the events' consent, the same object

MOST_LISTED = 200
BAD_PHONE = (
    "The {field} must be a valid phone number, in E.164 or the account country's "
    "national format."
)
BAD_EMAIL = "The email must be a valid email address."
ADDRESS_REQUIRED = "The phone field is required when email is not present."
TEXTS_NEED_START = (
    "Texts resume only when the person texts START to the account's number; send "
    "channel calls."
)


class BadParameter(ApiError):
    status = 400


class ConsentIn(serializers.Serializer):
    phone = serializers.CharField(
        required=False,
        allow_blank=True,
        max_length=32,
        help_text="E.164 or national in the account's country. Required without email.",
    )
    email = serializers.CharField(
        required=False,
        allow_blank=True,
        max_length=254,
        help_text="Required without phone.",
    )
    channel = serializers.ChoiceField(
        choices=["calls", "texts", "all"], help_text="calls, texts or all (both)."
    )
    action = serializers.ChoiceField(
        choices=["revoke", "consent"],
        help_text="revoke, or consent (to calls only: texts need the person's START).",
    )
    note = serializers.CharField(
        required=False,
        allow_blank=True,
        max_length=1000,
        help_text="What the person said, and where; kept in the ledger.",
    )


class StateOut(serializers.Serializer):
    allowed = serializers.BooleanField()
    reason = serializers.CharField(
        help_text='Why not, as a call\'s updateNotes says it; "" when allowed.'
    )


class ConsentRecordedOut(serializers.Serializer):
    success = serializers.BooleanField()
    consent = ConsentOut(many=True, help_text="The ledger entries recorded.")


class ConsentStateOut(serializers.Serializer):
    success = serializers.BooleanField()
    phone = serializers.CharField()
    email = serializers.CharField()
    calls = StateOut(allow_null=True, help_text="null for an e-mail address.")
    texts = StateOut(allow_null=True, help_text="null for an e-mail address.")
    history = ConsentOut(many=True, help_text=f"Newest first, at most {MOST_LISTED}.")


KEY = OpenApiParameter("apikey", str, required=True, description="The account's key.")
ERRORS = error_responses(
    ErrorEnvelope, {401: "Missing or invalid key: `Invalid API key`."}
)


class ConsentApi(AccountKeyApi):
    throttle_scope = "consent"

    @extend_schema(
        tags=["Consent"],
        operation_id="consent_get",
        summary="A number's consent: whether the account may call and text it, and why",
        description=(
            "The key's account's consent ledger for one phone number (`phone`) or "
            "e-mail address (`email`): whether the service may call and text the number "
            f"now, and the entries, newest first (at most {MOST_LISTED})."
        ),
        parameters=[
            KEY,
            OpenApiParameter("phone", str, description="E.164 or national."),
            OpenApiParameter("email", str, description="An e-mail address."),
            RETRY_AFTER,
        ],
        responses={
            200: OpenApiResponse(ConsentStateOut),
            **ERRORS,
            **error_responses(
                ErrorEnvelope, {400: "No or a malformed `phone` or `email`."}
            ),
        },
    )
    def get(self, request: Request) -> Response:
        account = self.account(request)
        given_phone = str(request.query_params.get("phone") or "").strip()
        given_email = str(request.query_params.get("email") or "").strip()
        phone, email = "", ""
        if given_phone:
            phone = to_e164(given_phone[:32], account.country_code) or ""
            if not phone:
                raise BadParameter(BAD_PHONE.format(field="phone parameter"))
        elif given_email:
            email = _email(given_email)
            if not email:
                raise BadParameter("The email parameter must be a valid email address.")
        else:
            raise BadParameter("The phone or email parameter is required.")
        history = consent_history(account_id=account.pk, phone=phone, email=email)
        calls = texts = None
        if phone:
            revoked = calls_revocation(account_id=account.pk, phone=phone)
            opt_out = opt_out_in_force(account_id=account.pk, phone=phone)
            calls = {
                "allowed": revoked is None,
                "reason": revoked.reason() if revoked else "",
            }
            texts = {
                "allowed": opt_out is None,
                "reason": f"Opted out of texts: {opt_out.state}" if opt_out else "",
            }
        return Response(
            {
                "success": True,
                "phone": phone,
                "email": email,
                "calls": calls,
                "texts": texts,
                "history": [consent_object(e) for e in history[:MOST_LISTED]],
            }
        )

    @extend_schema(
        tags=["Consent"],
        operation_id="consent_record",
        summary="Record a revocation or a consent",
        description=(
            "Records in the key's account's consent ledger, with `integrator` as its "
            "source and `note` as its detail, that the person at `phone` (or `email`) "
            "withdrew (`revoke`) or gave (`consent`) consent to the account's `calls`, "
            "`texts` or `all`. A revocation of calls ends the account's next lead call "
            "to the number CANCEL and refuses click-to-call; of texts, stops the "
            "account's texts until the person texts START. A consent is of calls only. "
            "Each entry sends its webhook event."
        ),
        request=ConsentIn,
        parameters=[KEY, RETRY_AFTER],
        responses={
            201: OpenApiResponse(ConsentRecordedOut),
            **ERRORS,
            **error_responses(ErrorEnvelope, {422: "The given data was invalid."}),
        },
    )
    def post(self, request: Request) -> Response:
        account = self.account(request)
        given = ConsentIn(data=request.data)
        errors = {} if given.is_valid() else _messages(given.errors)
        data: dict[str, Any] = {} if errors else dict(given.validated_data)
        raw = given.initial_data if isinstance(given.initial_data, Mapping) else {}
        raw_phone = str(raw.get("phone") or "").strip()
        raw_email = str(raw.get("email") or "").strip()
        phone = email = ""
        if raw_phone and "phone" not in errors:
            phone = to_e164(raw_phone, account.country_code) or ""
            if not phone:
                errors["phone"] = [BAD_PHONE.format(field="phone")]
        if raw_email and "email" not in errors:
            email = _email(raw_email)
            if not email:
                errors["email"] = [BAD_EMAIL]
        if isinstance(given.initial_data, Mapping) and not (raw_phone or raw_email):
            errors.setdefault("phone", []).append(ADDRESS_REQUIRED)
        if data and data["action"] == "consent" and data["channel"] != "calls":
            errors.setdefault("channel", []).append(TEXTS_NEED_START)
        if errors:
            raise ValidationFailed(errors)
        recorded = integrator_consent(
            account=account,
            phone=phone,
            email=email,
            channel=data["channel"],
            revoke=data["action"] == "revoke",
            note=data.get("note", ""),
        )
        return Response(
            {"success": True, "consent": [consent_object(e) for e in recorded]},
            status=201,
        )


def _email(value: str) -> str:
    try:
        validate_email(value)
    except DjangoValidationError:
        return ""
    return value.lower()[:254]


def _messages(errors: Any) -> dict[str, list[str]]:
    return {field: [str(m) for m in messages] for field, messages in errors.items()}
