"""Click-to-call (interface D): ``POST /api/clicktocallv2`` connects an agent and a lead.

The call goes through the same pipeline as a lead's: it is offered to the named agent
first and, once the agent presses 1, the customer is dialed. The agent need not be a user:
an agent of the vendor's system (a ``user_id`` that names no user, with
``user_phone_number``, or a ``user_phone_number`` that is no user's) is rung at that number.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from typing import Any

from django.utils import timezone
from drf_spectacular.utils import (
    extend_schema,
    extend_schema_field,
    inline_serializer,
)
from rest_framework import serializers
from rest_framework.request import Request
from rest_framework.response import Response
from rest_framework.views import APIView

from accounts.authentication import credential_of
from accounts.models import Account, ApiCredential
from clicktocall.authentication import ClickToCallKeyAuthentication
from clicktocall.selectors import account_reachable, agent_by_id_or_code, agent_by_phone
from clicktocall.services import click_to_call_queue
from consent.selectors import calls_revocation
from core import validation as v
from core.api import ENVELOPE, ContentNegotiation, Forbidden, json_object
from core.phones import to_e164
from core.schema import (
    RATE_LIMITED,
    RETRY_AFTER,
    TOO_LARGE,
    ErrorEnvelope,
    error_responses,
)
from core.throttling import CredentialRateThrottle
from users.models import User

CALL_INITIATED = "Call initiated"
UNAUTHORIZED_ACCOUNT = "Unauthorized for this account"
USER_REQUIRED = (
    "The {attribute} field is required when user phone number is not present."
)
SELECTED_INVALID = "The selected {attribute} is invalid."
NO_PHONE = "The selected {attribute} has no phone number to call."
_DIGITS = re.compile(r"[0-9]+")
# The number withdrew consent to the account's calls (the consent ledger): refused until
# the person gives it again (a new lead). A text opt-out alone does not refuse their call.
CALLS_REVOKED = "The {attribute} has withdrawn consent to calls from this account."
BAD_PHONE = "The {attribute} must be a valid phone number, in E.164 or the account country's national format."


# --- input ---------------------------------------------------------------------------------


@extend_schema_field(
    {
        "oneOf": [
            {"type": "integer", "minimum": 1},
            # Digits naming a number of at least 1 ("0" and "" are refused).
            {"type": "string", "pattern": "^[0-9]*[1-9][0-9]*$"},
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
        '("12" and "0012" both match code 0012); else the agent\'s id in the vendor\'s '
        "system, kept on the call, when user_phone_number is sent too. Required unless "
        "user_phone_number is sent.",
    )
    user_phone_number = _optional_text(
        32,
        help_text="The agent's phone number, E.164 or national in the account's country: "
        "the user with this number, else an agent who is not a user, rung at it. Used when "
        "user_id names no user.",
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

    def validate_user_id(self, value: str | None) -> User | str | None:
        """The user ``user_id`` names; else, beside a user phone number, the vendor's agent id."""
        if not value or self.account is None:
            return None
        agent = agent_by_id_or_code(account=self.account, user_id=value)
        if agent is None:
            if _present(self.initial_data.get("user_phone_number")):
                return value  # an agent of the vendor's system, rung at that number
            raise serializers.ValidationError(SELECTED_INVALID)
        if not agent.phone_number:
            raise serializers.ValidationError(NO_PHONE)
        return agent

    def validate_user_phone_number(self, value: str | None) -> str | None:
        if not value or self.account is None:
            return None
        return national_or_e164(value, account=self.account)

    def validate_customer_phone_number(self, value: str) -> str:
        if self.account is None:
            return value
        phone = national_or_e164(value, account=self.account)
        if calls_revocation(
            account_id=self.account.pk, phone=phone, text_opt_outs=False
        ):
            raise serializers.ValidationError(CALLS_REVOKED)
        return phone

    def validate(self, attrs: dict[str, Any]) -> dict[str, Any]:
        account: Account = attrs["account_id"]
        named = attrs.get("user_id")
        agent, vendor_agent_id, agent_number = named, "", ""
        if not isinstance(named, User):
            # No user named: the user with this phone number, else an agent who is not one.
            number: str = attrs["user_phone_number"]
            vendor_agent_id = named or ""
            agent = agent_by_phone(account=account, phone_number=number)
            agent_number = "" if agent else number
        return {
            "account": account,
            "agent": agent,
            "vendor_agent_id": vendor_agent_id,
            "agent_number": agent_number,
            "phone": attrs["customer_phone_number"],
            "first_name": attrs.get("customer_first_name") or "",
            "last_name": attrs.get("customer_last_name") or "",
        }


def _present(value: Any) -> bool:
    return value is not None and not (isinstance(value, str) and not value.strip())


def national_or_e164(value: str, *, account: Account) -> str:
    """A phone number in E.164 or the account country's national format, as E.164."""
    number = to_e164(value, account.country_code)
    if number is None:
        raise serializers.ValidationError(BAD_PHONE)
    return number


def _account_in_scope(credential: ApiCredential, raw: Any) -> Account | None:
    """The active account ``raw`` names when the credential reaches it; 403 when it does not
    (or does not exist); ``None`` when ``raw`` is malformed, which validation then reports."""
    try:
        # Any whole number names an account, one that does not exist too (a 403).
        account_id = TextInteger(min_value=1, max_value=None).run_validation(raw)
    except serializers.ValidationError:
        return None
    account = account_reachable(credential=credential, account_id=account_id)
    if account is None:
        raise Forbidden(UNAUTHORIZED_ACCOUNT)
    return account


# --- view --------------------------------------------------------------------------------------


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
    content_negotiation_class = ContentNegotiation
    throttle_classes = [CredentialRateThrottle]
    throttle_scope = "clicktocall"
    error_shape = ENVELOPE

    @extend_schema(
        operation_id="click_to_call",
        summary="Connect an agent and a lead by phone",
        request=ClickToCallInput,
        parameters=[RETRY_AFTER],
        responses={
            201: INITIATED,
            **error_responses(
                ErrorEnvelope,
                {
                    401: "Missing or invalid key (header or body member): "
                    "`Invalid API key`.",
                    403: "account_id names an account outside the key's scope, or none: "
                    "`Unauthorized for this account`.",
                    413: TOO_LARGE,
                    415: 'The body is not JSON: `Unsupported content type "..."`.',
                    422: "Validation failed: `The given data was invalid.`, with the "
                    "messages of each member at fault (`user_id` when neither user_id "
                    "nor user_phone_number is sent; `customer_phone_number` when the "
                    "customer withdrew consent to the account's calls).",
                    429: RATE_LIMITED,
                },
            ),
        },
    )
    def post(self, request: Request) -> Response:
        received_at = timezone.now()
        body = json_object(request)
        account = _account_in_scope(credential_of(request), body.get("account_id"))
        serializer = ClickToCallInput(data=body, context={"account": account})
        serializer.is_valid(raise_exception=True)
        data = serializer.validated_data
        call = click_to_call_queue(
            account=data["account"],
            agent=data["agent"],
            vendor_agent_id=data["vendor_agent_id"],
            agent_number=data["agent_number"],
            phone=data["phone"],
            first_name=data["first_name"],
            last_name=data["last_name"],
            received_at=received_at,
        )
        return Response(
            {"success": True, "message": CALL_INITIATED, "callId": call.pk},
            status=201,
        )
