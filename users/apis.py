"""The User API (interface A): seven operations on an organization's users."""

from __future__ import annotations

import re
from typing import Any

from django.conf import settings
from drf_spectacular.utils import (
    OpenApiParameter,
    extend_schema,
    extend_schema_field,
    extend_schema_view,
)
from rest_framework import serializers
from rest_framework.request import Request
from rest_framework.response import Response
from rest_framework.views import APIView

from accounts.authentication import ApiUserKeyAuthentication, credential_of
from accounts.models import ApiCredential, Organization
from accounts.schedules import WEEKDAYS, schedule_as_dict, timezone_names
from core import validation as v
from core.api import ContentNegotiation, PlainJSONRenderer, envelope, json_object
from core.phones import to_e164
from core.schema import (
    RETRY_AFTER,
)
from core.throttling import CredentialRateThrottle
from users.models import User
from users.passwords import MESSAGE as PASSWORD_MESSAGE
from users.passwords import password_is_complex
from users.schema import (
    BODY_ERRORS,
    HH_MM_PATTERN,
    ORGANIZATION_ID,
    QUERY_ERRORS,
    USER_ENVELOPE,
    envelope_schema,
    user_errors,
)
from users.selectors import (
    SeenUser,
    organization_for_credential,
    user_code_next,
    user_find_by_email,
    user_find_by_phone,
    user_get_visible,
)
from users.services import (
    USERNAME_MAX_LENGTH,
    user_create,
    user_delete,
    user_update,
)

_HHMM = re.compile(r"^([01]\d|2[0-3]):[0-5]\d$")
_CODE = re.compile(r"^\d{1,10}$")
# The same rules for the OpenAPI schema, in the ECMA-262 dialect JSON Schema uses.
# users.passwords: a digit, a lowercase and an uppercase letter, a special character.
COMPLEXITY_PATTERN = (
    "^(?=[\\s\\S]*[0-9])(?=[\\s\\S]*[a-z])(?=[\\s\\S]*[A-Z])(?=[\\s\\S]*[^A-Za-z0-9])"
)


def user_out(seen: SeenUser) -> dict[str, Any]:
    """The User resource of part 2.1, as seen from the organization its relations were fetched for."""
    user = seen.user
    return {
        "id": user.pk,
        "firstName": user.first_name,
        "lastName": user.last_name,
        "fullName": f"{user.first_name} {user.last_name}".strip(),
        "emailAddress": user.email,
        "username": user.username,
        "phoneNumber": user.phone_number or None,
        "companyRole": user.company_role or None,
        "imageUrl": picture_url(user),
        "timezone": user.timezone,
        "country": user.country,
        "bio": user.bio or None,
        "code": seen.code,
        "twelveHourTimeFormat": user.twelve_hour_time_format,
        "organizationIds": seen.organization_ids,
        "accountIds": seen.account_ids,
        "teams": [
            {"id": team, "name": name, "accountId": account}
            for team, name, account in seen.teams
        ],
        "schedule": schedule_as_dict(active=user.schedule_active, days=seen.days),
    }


def picture_url(user: User) -> str | None:
    if not user.profile_picture:
        return None
    url = user.profile_picture.url
    return url if "://" in url else f"{settings.PUBLIC_BASE_URL}{url}"


# --- input ---------------------------------------------------------------------------------


@extend_schema_field({"type": "string", "pattern": HH_MM_PATTERN})
class TimeOfDay(v.CharField):
    default_error_messages = {
        **v.CharField.default_error_messages,
        "format": "The {{attribute}} must be a time in HH:MM (24-hour) format.",
    }

    def to_internal_value(self, data: Any) -> Any:
        text = super().to_internal_value(data)
        if not _HHMM.match(text):
            self.fail("format")
        hours, minutes = text.split(":")
        from datetime import time

        return time(int(hours), int(minutes))


class ScheduleDayInput(v.Serializer):
    """One day: every member required; ``endTime`` must be later than ``startTime`` (else
    422 on ``schedule.<day>.endTime``: "The schedule.<day>.end time must be a time after
    the start time.")."""

    active = v.BooleanField()
    startTime = TimeOfDay(source="start_time")
    endTime = TimeOfDay(source="end_time")

    def validate(self, attrs: dict[str, Any]) -> dict[str, Any]:
        if attrs["end_time"] <= attrs["start_time"]:
            raise serializers.ValidationError(
                {"endTime": ["The {attribute} must be a time after the start time."]}
            )
        return attrs


class ScheduleInput(v.Serializer):
    """The schedule object of part 2.1: when supplied, every member is required."""

    active = v.BooleanField()
    monday = ScheduleDayInput()
    tuesday = ScheduleDayInput()
    wednesday = ScheduleDayInput()
    thursday = ScheduleDayInput()
    friday = ScheduleDayInput()
    saturday = ScheduleDayInput()
    sunday = ScheduleDayInput()

    def validate(self, attrs: dict[str, Any]) -> dict[str, Any]:
        return {"active": attrs["active"], "days": [attrs[day] for day in WEEKDAYS]}


@extend_schema_field(
    {
        "type": "array",
        "items": {"type": "integer"},
        "minItems": 1,
        "maxItems": 1000,
        "description": "Ids of the organization's accounts; at least one.",
    }
)
class AccountIdsField(v.ListField):
    pass


@extend_schema_field(
    {
        "type": "string",
        "minLength": 7,
        "maxLength": 255,
        "pattern": COMPLEXITY_PATTERN,
        "description": "7 to 255 characters, with at least one digit, one lowercase "
        "letter, one uppercase letter and one special character.",
    }
)
class PasswordField(v.CharField):
    pass


class UserCreateInput(v.Serializer):
    """The members of create; update takes the same members, all optional."""

    organizationId = v.IntegerField(min_value=1)
    firstName = v.CharField(source="first_name", max_length=45)
    lastName = v.CharField(source="last_name", max_length=45)
    emailAddress = v.EmailField(source="email", max_length=255)
    accountIds = AccountIdsField(
        source="account_ids", child=v.IntegerField(), allow_empty=False, max_length=1000
    )
    username = v.CharField(max_length=USERNAME_MAX_LENGTH, required=False)
    password = PasswordField(
        min_length=7, max_length=255, trim_whitespace=False, required=False
    )
    phoneNumber = v.CharField(
        source="phone_number",
        max_length=32,
        allow_null=True,
        allow_blank=True,
        required=False,
    )
    companyRole = v.CharField(
        source="company_role",
        multiline=True,
        max_length=255,
        allow_null=True,
        allow_blank=True,
        required=False,
    )
    permissionTemplate = v.CharField(
        source="permission_template", max_length=150, required=False
    )
    profilePicture = v.CharField(
        source="profile_picture",
        max_length=2048,
        allow_null=True,
        allow_blank=True,
        required=False,
    )
    timezone = v.CharField(max_length=64, required=False)
    country = v.CharField(max_length=255, required=False)
    bio = v.CharField(
        max_length=255,
        multiline=True,
        allow_null=True,
        allow_blank=True,
        required=False,
    )
    code = v.CharField(max_length=10, allow_null=True, required=False)
    twelveHourTimeFormat = v.BooleanField(
        source="twelve_hour_time_format", required=False
    )
    teams = v.ListField(
        source="team_ids", child=v.IntegerField(), max_length=1000, required=False
    )
    schedule = ScheduleInput(allow_null=True, required=False)

    def validate_password(self, value: str) -> str:
        if not password_is_complex(value):
            raise serializers.ValidationError(PASSWORD_MESSAGE)
        return value

    def validate_phoneNumber(self, value: str | None) -> str | None:
        return e164(value) if value else None

    def validate_timezone(self, value: str) -> str:
        if value not in timezone_names():
            raise serializers.ValidationError(
                "The {attribute} must be a valid timezone, e.g. America/Denver."
            )
        return value

    def validate_code(self, value: str | None) -> str | None:
        if value is not None and not _CODE.match(value):
            raise serializers.ValidationError(
                "The {attribute} must be a number of at most 10 digits."
            )
        return value

    def validate_profilePicture(self, value: str | None) -> str | None:
        if value and not value.lower().startswith("https://"):
            raise serializers.ValidationError("The {attribute} must be an HTTPS URL.")
        return value or None


class UserUpdateInput(UserCreateInput):
    """Every member optional; only the supplied ones change. A supplied schedule is whole:
    its members stay required (DRF's ``partial`` would reach into it and let them be left out)."""

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        for field in self.fields.values():
            field.required = False


def e164(value: str) -> str:
    """A phone number in E.164, or a validation error naming the member."""
    number = to_e164(value)
    if number is None:
        raise serializers.ValidationError(
            "The {attribute} must be a valid phone number in E.164 format, e.g. +13035550100."
        )
    return number


def _validated(serializer: serializers.Serializer) -> dict[str, Any]:
    serializer.is_valid(raise_exception=True)
    return dict(serializer.validated_data)


def _authorize_organization(credential: ApiCredential, raw: Any) -> None:
    """403 when the request names an organization the credential does not reach. Runs before
    validation, as the documented order has it; a malformed id is left to validation."""
    if raw is None:
        return
    try:
        # Any whole number names an organization, one that does not exist too (a 403).
        organization_id = v.IntegerField(min_value=1, max_value=None).run_validation(
            raw
        )
    except serializers.ValidationError:
        return
    organization_for_credential(credential=credential, organization_id=organization_id)


class OrganizationQuery(v.Serializer):
    organizationId = v.IntegerField(min_value=1)


def _query_organization(
    request: Request, query: type[serializers.Serializer] = OrganizationQuery
) -> tuple[Organization, dict[str, Any]]:
    credential: ApiCredential = credential_of(request)
    params = request.query_params
    _authorize_organization(credential, params.get("organizationId"))
    data = _validated(query(data=params))
    return organization_for_credential(
        credential=credential, organization_id=data["organizationId"]
    ), data


# --- views -------------------------------------------------------------------------------------


class UserApi(APIView):
    authentication_classes = [ApiUserKeyAuthentication]
    # Bodies of plain JSON values only (no floats): DRF's bytes, written by orjson.
    renderer_classes = [PlainJSONRenderer]
    content_negotiation_class = ContentNegotiation
    throttle_classes = [CredentialRateThrottle]
    throttle_scope = "users"


@extend_schema(tags=["User API"])
class UserCreateApi(UserApi):
    @extend_schema(
        operation_id="user_create",
        summary="Create a user",
        request=UserCreateInput,
        parameters=[RETRY_AFTER],
        responses={201: USER_ENVELOPE, **BODY_ERRORS},
    )
    def post(self, request: Request) -> Response:
        body = json_object(request)
        _authorize_organization(credential_of(request), body.get("organizationId"))
        data = _validated(UserCreateInput(data=body))
        organization = organization_for_credential(
            credential=credential_of(request),
            organization_id=data.pop("organizationId"),
        )
        user = user_create(
            organization=organization, data=data, credential=credential_of(request)
        )
        seen = user_get_visible(credential=credential_of(request), user_id=user.pk)
        return envelope(
            "create_user", "User created successfully", status=201, user=user_out(seen)
        )


@extend_schema(tags=["User API"])
# GET, PUT and DELETE share the path ``/api/users/{user}`` (a comment, not a docstring: the
# schema would show it as each operation's description).
class UserDetailApi(UserApi):
    not_found_message = "User not found"

    @extend_schema(
        operation_id="user_get",
        summary="Retrieve a user",
        parameters=[RETRY_AFTER],
        responses={200: USER_ENVELOPE, **user_errors(404)},
    )
    def get(self, request: Request, user_id: int) -> Response:
        seen = user_get_visible(credential=credential_of(request), user_id=user_id)
        return envelope("get_user", "User retrieved successfully", user=user_out(seen))

    @extend_schema(
        operation_id="user_update",
        summary="Update a user",
        description="Only the members sent change; a schedule sent is replaced whole.",
        request=UserUpdateInput,
        parameters=[RETRY_AFTER],
        responses={200: USER_ENVELOPE, **user_errors(403, 404, 415, 422)},
    )
    def put(self, request: Request, user_id: int) -> Response:
        user = user_get_visible(credential=credential_of(request), user_id=user_id).user
        body = json_object(request)
        _authorize_organization(credential_of(request), body.get("organizationId"))
        data = _validated(UserUpdateInput(data=body))
        organization = organization_for_credential(
            credential=credential_of(request),
            organization_id=data.pop(
                "organizationId", credential_of(request).organization_id
            ),
        )
        user_update(
            user=user,
            organization=organization,
            data=data,
            credential=credential_of(request),
        )
        seen = user_get_visible(credential=credential_of(request), user_id=user_id)
        return envelope("update_user", "User updated successfully", user=user_out(seen))

    @extend_schema(
        operation_id="user_delete",
        summary="Delete a user",
        description="Deletes the user, its schedule and its stored picture; cannot be undone.",
        parameters=[RETRY_AFTER],
        responses={200: envelope_schema("DeleteEnvelope"), **user_errors(404)},
    )
    def delete(self, request: Request, user_id: int) -> Response:
        user_delete(
            user=user_get_visible(
                credential=credential_of(request), user_id=user_id
            ).user
        )
        return envelope("delete_user", "User deleted successfully")


class EmailQuery(OrganizationQuery):
    emailAddress = v.CharField(max_length=255)


class PhoneQuery(OrganizationQuery):
    phoneNumber = v.CharField(max_length=32, trim_whitespace=False)

    def validate_phoneNumber(self, value: str) -> str:
        # An unencoded "+" arrives as a space; read it as the plus it was meant to be.
        value = value.strip()
        return e164(value if value.startswith("+") else f"+{value}")


# Find one user by a query member: one implementation for both find paths, each naming its
# query, member, action and selector (a comment, not a docstring: the schema would show it).
class UserFindApi(UserApi):
    query: type[serializers.Serializer]
    member: str
    action: str

    def find(self, *, credential: ApiCredential, value: str) -> SeenUser:
        raise NotImplementedError

    def get(self, request: Request) -> Response:
        _, data = _query_organization(request, self.query)
        seen = self.find(credential=credential_of(request), value=data[self.member])
        return envelope(self.action, "User retrieved successfully", user=user_out(seen))


@extend_schema(tags=["User API"])
@extend_schema_view(
    get=extend_schema(
        operation_id="user_find_by_email",
        summary="Find a user by email address",
        parameters=[
            ORGANIZATION_ID,
            OpenApiParameter(
                "emailAddress",
                {"type": "string", "minLength": 1, "maxLength": 255},
                required=True,
                description="Compared case-insensitively.",
            ),
            RETRY_AFTER,
        ],
        responses={200: USER_ENVELOPE, **user_errors(403, 404, 422)},
    )
)
class UserFindByEmailApi(UserFindApi):
    query, member, action = EmailQuery, "emailAddress", "get_user_by_email_address"

    def find(self, *, credential: ApiCredential, value: str) -> SeenUser:
        return user_find_by_email(credential=credential, email=value)


@extend_schema(tags=["User API"])
@extend_schema_view(
    get=extend_schema(
        operation_id="user_find_by_phone",
        summary="Find a user by phone number",
        parameters=[
            ORGANIZATION_ID,
            OpenApiParameter(
                "phoneNumber",
                {"type": "string", "minLength": 1, "maxLength": 32},
                required=True,
                description="E.164; send the plus as %2B (an unencoded plus, read as "
                "a space, is accepted too).",
            ),
            RETRY_AFTER,
        ],
        responses={200: USER_ENVELOPE, **user_errors(403, 404, 422)},
    )
)
class UserFindByPhoneApi(UserFindApi):
    query, member, action = PhoneQuery, "phoneNumber", "get_user_by_phone_number"

    def find(self, *, credential: ApiCredential, value: str) -> SeenUser:
        return user_find_by_phone(credential=credential, phone_number=value)


@extend_schema(tags=["User API"])
class UserCodeAvailableApi(UserApi):
    @extend_schema(
        operation_id="user_code_available",
        summary="Next available user code",
        parameters=[ORGANIZATION_ID, RETRY_AFTER],
        responses={
            200: envelope_schema("CodeEnvelope", code=serializers.CharField()),
            **QUERY_ERRORS,
        },
    )
    def get(self, request: Request) -> Response:
        organization, _ = _query_organization(request)
        return envelope(
            "get_available_user_code",
            "Next available user code retrieved successfully",
            code=user_code_next(organization_id=organization.pk),
        )
