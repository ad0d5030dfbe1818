"""Click-to-call (interface D): ``POST /api/clicktocallv2`` connects an agent and a lead.

The call goes through the same pipeline as a lead's: it is offered to the named agent
first and, once the agent presses 1, the customer is dialed.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from typing import Any, cast

import phonenumbers
from django.db import transaction
from django.db.models import QuerySet
from django.utils import timezone
from drf_spectacular.utils import (
    OpenApiResponse,
    extend_schema,
    extend_schema_field,
    inline_serializer,
)
from rest_framework import serializers
from rest_framework.request import Request
from rest_framework.response import Response
from rest_framework.views import APIView

from accounts.models import Account, ApiCredential
from accounts.selectors import credential_account_ids
from calls.models import CallOrigin
from calls.services import call_queue
from clicktocall.authentication import ClickToCallKeyAuthentication
from config import validation as v
from config.api import ENVELOPE, Forbidden, ValidationFailed
from config.throttling import CredentialRateThrottle
from users.models import User
from users.selectors import format_code

SOURCE = "Click to Call"
CALL_INITIATED = "Call initiated"
UNAUTHORIZED_ACCOUNT = "Unauthorized for this account"
USER_REQUIRED = (
    "The {attribute} field is required when user phone number is not present."
)
SELECTED_INVALID = "The selected {attribute} is invalid."
NO_PHONE = "The selected {attribute} has no phone number to call."
BAD_PHONE = "The {attribute} must be a valid phone number, in E.164 or the account country's national format."

_DIGITS = re.compile(r"[0-9]+")
_MAX_ID = 2**63 - 1  # BigAutoField
_MAX_CODE_DIGITS = 10  # Membership.code


# --- input ---------------------------------------------------------------------------------


@extend_schema_field(
    {
        "oneOf": [
            {"type": "integer", "minimum": 1},
            {"type": "string", "pattern": "^[0-9]+$"},
        ]
    }
)
class TextInteger(v.IntegerField):
    """An integer sent as a JSON number or as text: ``12`` or ``"12"`` ("All are text")."""

    def to_internal_value(self, data: Any) -> int:
        if isinstance(data, str):
            data = data.strip()
            if not data:
                self.fail("required")
            if not _DIGITS.fullmatch(data):
                self.fail("invalid")
        return super().to_internal_value(data)


@extend_schema_field({"oneOf": [{"type": "string"}, {"type": "integer"}]})
class TextOrNumber(v.CharField):
    """Text, or a JSON number taken as its text (``12`` is ``"12"``)."""


def _optional_text(
    max_length: int, field: type[v.CharField] = v.CharField, **kwargs: Any
) -> v.CharField:
    return field(
        max_length=max_length,
        required=False,
        allow_blank=True,
        allow_null=True,
        **kwargs,
    )


class ClickToCallInput(v.Serializer):
    """Every member is text; ids may also be sent as numbers. Required: account_id,
    customer_phone_number, and user_id or user_phone_number."""

    # context["account"]: the account account_id names, already checked to be in the
    # credential's scope; None when account_id is malformed (then reported as such).

    api_key = _optional_text(
        100, help_text="The key, when not sent in the `api_key` header."
    )
    account_id = TextInteger(min_value=1, help_text="Integer, as a number or text.")
    user_id = _optional_text(
        20,
        TextOrNumber,
        help_text="The agent: the service's user id or, failing that, the user's code "
        '("12" and "0012" both match code 0012). Required unless user_phone_number is sent.',
    )
    user_phone_number = _optional_text(
        32,
        help_text="The agent's phone number, E.164 or national in the account's country. "
        "Used when user_id is not sent.",
    )
    customer_phone_number = v.CharField(
        max_length=32,
        help_text="The lead's phone number, E.164 or national in the account's country.",
    )
    customer_first_name = _optional_text(45)
    customer_last_name = _optional_text(45)

    def to_internal_value(self, data: Any) -> dict[str, Any]:
        # Report the either-or rule together with every other error, not after them.
        if not isinstance(data, Mapping):
            return super().to_internal_value(data)
        errors: dict[str, Any] = {}
        attrs: dict[str, Any] = {}
        try:
            attrs = dict(super().to_internal_value(data))
        except serializers.ValidationError as exc:
            errors = dict(exc.detail)  # type: ignore[arg-type]
        if not _present(data.get("user_id")) and not _present(
            data.get("user_phone_number")
        ):
            errors.setdefault("user_id", []).append(USER_REQUIRED)
        if errors:
            raise serializers.ValidationError(errors)
        return attrs

    @property
    def account(self) -> Account | None:
        return self.context.get("account")

    def validate_account_id(self, value: int) -> Account:
        if self.account is None or self.account.pk != value:
            raise serializers.ValidationError(SELECTED_INVALID)
        return self.account

    def validate_user_id(self, value: str | None) -> User | None:
        if not value or self.account is None:
            return None
        agent = agent_by_id_or_code(account=self.account, user_id=value)
        if agent is None:
            raise serializers.ValidationError(SELECTED_INVALID)
        if not agent.phone_number:
            raise serializers.ValidationError(NO_PHONE)
        return agent

    def validate_user_phone_number(self, value: str | None) -> User | None:
        if not value or self.account is None:
            return None
        phone = national_or_e164(value, region=_region(self.account))
        if _present(self.initial_data.get("user_id")):
            return None  # user_id names the agent; the phone number only has to be one
        agent = agent_by_phone(account=self.account, phone_number=phone)
        if agent is None:
            raise serializers.ValidationError(SELECTED_INVALID)
        return agent

    def validate_customer_phone_number(self, value: str) -> str:
        if self.account is None:
            return value
        return national_or_e164(value, region=_region(self.account))

    def validate(self, attrs: dict[str, Any]) -> dict[str, Any]:
        return {
            "account": attrs["account_id"],
            "agent": attrs.get("user_id") or attrs.get("user_phone_number"),
            "phone": attrs["customer_phone_number"],
            "first_name": attrs.get("customer_first_name") or "",
            "last_name": attrs.get("customer_last_name") or "",
        }


def _region(account: Account) -> str:
    """The account's country code ("US"), the region national numbers are read in."""
    return str(account.country)


def _present(value: Any) -> bool:
    return value is not None and not (isinstance(value, str) and not value.strip())


def national_or_e164(value: str, *, region: str) -> str:
    """A phone number in E.164 or in ``region``'s national format, as E.164; else a validation error."""
    try:
        number = phonenumbers.parse(value, region)
    except phonenumbers.NumberParseException:
        number = None
    if number is None or not phonenumbers.is_valid_number(number):
        raise serializers.ValidationError(BAD_PHONE)
    return phonenumbers.format_number(number, phonenumbers.PhoneNumberFormat.E164)


# --- lookups -----------------------------------------------------------------------------------


def account_in_scope(*, credential: ApiCredential, raw: Any) -> Account | None:
    """The active account ``raw`` names when the credential reaches it; 403 when it does not
    (or does not exist); ``None`` when ``raw`` is malformed, which validation then reports."""
    try:
        account_id = TextInteger(min_value=1).run_validation(raw)
    except serializers.ValidationError:
        return None
    account = (
        Account.objects.filter(pk=account_id, is_active=True).first()
        if account_id in credential_account_ids(credential=credential)
        else None
    )
    if account is None:
        raise Forbidden(UNAUTHORIZED_ACCOUNT)
    return account


def _agents(account: Account) -> QuerySet[User]:
    return User.objects.filter(accounts=account, is_active=True).order_by("pk")


def agent_by_id_or_code(*, account: Account, user_id: str) -> User | None:
    """An active user of the account whose id is ``user_id``, failing that whose code in the
    account's organization is. Leading zeros mark a code: "0012" is never user 12."""
    if not _DIGITS.fullmatch(user_id):
        return None
    number = int(user_id)
    if str(number) == user_id and number <= _MAX_ID:
        agent = _agents(account).filter(pk=number).first()
        if agent is not None:
            return agent
    if len(str(number)) > _MAX_CODE_DIGITS:
        return None
    return (
        _agents(account)
        .filter(
            memberships__organization_id=account.organization_id,
            memberships__code__in={format_code(number), user_id},
        )
        .first()
    )


def agent_by_phone(*, account: Account, phone_number: str) -> User | None:
    """The (oldest) active user of the account with this E.164 phone number."""
    return _agents(account).filter(phone_number=phone_number).first()


# --- view --------------------------------------------------------------------------------------


def _json_object(request: Request) -> dict[str, Any]:
    if not isinstance(request.data, dict):
        raise ValidationFailed.one("body", "The request body must be a JSON object.")
    return request.data


ERROR = inline_serializer(
    "ClickToCallError",
    {"success": serializers.BooleanField(), "message": serializers.CharField()},
)


def _message(text: str) -> OpenApiResponse:
    return OpenApiResponse(ERROR, description=text)


INITIATED = inline_serializer(
    "ClickToCallInitiated",
    {
        "success": serializers.BooleanField(),
        "message": serializers.CharField(),
        "callId": serializers.IntegerField(),
    },
)


@extend_schema(tags=["Click-to-call"])
class ClickToCallApi(APIView):
    authentication_classes = [ClickToCallKeyAuthentication]
    throttle_classes = [CredentialRateThrottle]
    throttle_scope = "clicktocall"
    error_shape = ENVELOPE

    @extend_schema(
        operation_id="click_to_call",
        request=ClickToCallInput,
        responses={
            201: OpenApiResponse(
                INITIATED,
                description='`{"success": true, "message": "Call initiated", "callId": N}`',
            ),
            401: _message('Missing or invalid key: "Invalid API key".'),
            403: _message(
                'account_id outside the key\'s scope: "Unauthorized for this account".'
            ),
            413: _message("The body is larger than 1 MiB."),
            422: OpenApiResponse(
                description='`{"message": "The given data was invalid.", "errors": {"member": ["..."]}}`'
            ),
            429: _message("Rate limit exceeded; see Retry-After."),
        },
    )
    def post(self, request: Request) -> Response:
        received_at = timezone.now()
        body = _json_object(request)
        credential = cast(ApiCredential, request.auth)
        account = account_in_scope(credential=credential, raw=body.get("account_id"))
        serializer = ClickToCallInput(data=body, context={"account": account})
        serializer.is_valid(raise_exception=True)
        data = serializer.validated_data
        with transaction.atomic():
            call = call_queue(
                account=data["account"],
                phone=data["phone"],
                received_at=received_at,
                origin=CallOrigin.CLICK_TO_CALL,
                requested_agent=data["agent"],
                first_name=data["first_name"],
                last_name=data["last_name"],
                source=SOURCE,
            )
        return Response(
            {"success": True, "message": CALL_INITIATED, "callId": call.pk},
            status=201,
        )
