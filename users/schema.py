"""The User API's OpenAPI description (interface A): the user object as it is answered,
its envelopes, and the errors each operation can meet."""

from __future__ import annotations

from typing import Any

from drf_spectacular.utils import (
    OpenApiParameter,
    OpenApiResponse,
    extend_schema_field,
    inline_serializer,
)
from rest_framework import serializers

from core.schema import RATE_LIMITED, TOO_LARGE, ErrorEnvelope, error_responses

HH_MM_PATTERN = "^([01][0-9]|2[0-3]):[0-5][0-9]$"


@extend_schema_field({"type": "string", "pattern": HH_MM_PATTERN})
class TimeOfDayOut(serializers.CharField):
    pass


class ScheduleDay(serializers.Serializer):
    """One day of a schedule: times in HH:MM, 24-hour; ``endTime`` later than ``startTime``."""

    active = serializers.BooleanField()
    startTime = TimeOfDayOut()
    endTime = TimeOfDayOut()


class Schedule(serializers.Serializer):
    """The schedule object of part 2.1, as it was accepted on input."""

    active = serializers.BooleanField()
    monday = ScheduleDay()
    tuesday = ScheduleDay()
    wednesday = ScheduleDay()
    thursday = ScheduleDay()
    friday = ScheduleDay()
    saturday = ScheduleDay()
    sunday = ScheduleDay()


USER_OUT = inline_serializer(
    "User",
    {
        "id": serializers.IntegerField(),
        "firstName": serializers.CharField(),
        "lastName": serializers.CharField(),
        "fullName": serializers.CharField(),
        "emailAddress": serializers.CharField(),
        "username": serializers.CharField(),
        "phoneNumber": serializers.CharField(allow_null=True),
        "companyRole": serializers.CharField(allow_null=True),
        "imageUrl": serializers.URLField(allow_null=True),
        "timezone": serializers.CharField(),
        "country": serializers.CharField(),
        "bio": serializers.CharField(allow_null=True),
        "code": serializers.CharField(allow_null=True),
        "twelveHourTimeFormat": serializers.BooleanField(),
        "organizationIds": serializers.ListField(child=serializers.IntegerField()),
        "accountIds": serializers.ListField(child=serializers.IntegerField()),
        "teams": serializers.ListField(
            child=inline_serializer(
                "UserTeam",
                {
                    "id": serializers.IntegerField(),
                    "name": serializers.CharField(),
                    "accountId": serializers.IntegerField(),
                },
            )
        ),
        "schedule": Schedule(allow_null=True),
    },
)


def envelope_schema(name: str, **members: Any) -> Any:
    return inline_serializer(
        name,
        {
            "success": serializers.BooleanField(),
            "action": serializers.CharField(),
            "message": serializers.CharField(),
            **members,
        },
    )


ERROR_TEXT = {
    401: "Missing or invalid apiuser/apikey: `Invalid API key`.",
    403: "The organization named (organizationId) is not associated with the "
    "credentials, or does not exist: `Unauthorized for this organization`.",
    404: "No such user in an organization of the credentials: `User not found`.",
    413: TOO_LARGE,
    415: 'The body is not JSON: `Unsupported content type "..."`.',
    422: "Validation failed: `The given data was invalid.`, with the messages of each "
    "member at fault.",
    429: RATE_LIMITED,
}


def user_errors(*statuses: int) -> dict[int, OpenApiResponse]:
    """The User API's errors of an operation (every one can meet 401, 413 and 429)."""
    wanted = sorted({401, 413, 429, *statuses})
    return error_responses(ErrorEnvelope, {s: ERROR_TEXT[s] for s in wanted})


BODY_ERRORS = user_errors(403, 415, 422)
QUERY_ERRORS = user_errors(403, 422)
ORGANIZATION_ID = OpenApiParameter(
    "organizationId",
    {"type": "integer", "minimum": 1},
    required=True,
    description="An organization associated with the credentials.",
)
USER_ENVELOPE = envelope_schema("UserEnvelope", user=USER_OUT)
