"""Scored call data (interface B): ``GET /api/scoreddata`` in JSON or XML."""

from __future__ import annotations

import re
from datetime import date
from typing import Any

from django.http import HttpResponse, HttpResponseBase, StreamingHttpResponse
from drf_spectacular.types import OpenApiTypes
from drf_spectacular.utils import (
    OpenApiParameter,
    OpenApiResponse,
    PolymorphicProxySerializer,
    extend_schema,
    extend_schema_field,
)
from rest_framework import serializers
from rest_framework.request import Request
from rest_framework.response import Response
from rest_framework.views import APIView

from accounts.authentication import ScoredDataKeyAuthentication
from accounts.models import Account
from core.api import ENVELOPE, ApiError, ContentNegotiation, NotFound
from core.schema import RATE_LIMITED, RETRY_AFTER, TOO_LARGE, ErrorEnvelope
from core.throttling import CredentialRateThrottle
from core.validation import digits_only
from scoring.dates import BETWEEN, day_accepted
from scoring.exports import stream_records
from scoring.records import (
    SCORED_MEMBERS,
    XML_DECLARATION,
    RecordBuilder,
    local_day_bounds,
    rows,
    xml_text,
)
from scoring.selectors import calls_of_account

CALL_NOT_FOUND = "Call not found"
JSON_TYPE = "application/json; charset=utf-8"
XML_TYPE = "application/xml; charset=utf-8"
FORMATS = ("json", "xml")
_ISO_DATE = re.compile(r"\d{4}-\d{2}-\d{2}")


class BadParameter(ApiError):
    status = 400


def _return_type(request: Request) -> str:
    return str(request.query_params.get("returnType") or "json").strip().lower()


def _date(request: Request, name: str) -> date:
    value = str(request.query_params.get(name) or "").strip()
    if not value:
        raise BadParameter(f"The {name} parameter is required.")
    try:
        if not _ISO_DATE.fullmatch(value):
            raise ValueError(value)
        day = date.fromisoformat(value)
    except ValueError:
        raise BadParameter(
            f"The {name} parameter must be a date in the format YYYY-MM-DD."
        ) from None
    if not day_accepted(day):
        raise BadParameter(f"The {name} parameter must be a date {BETWEEN}.")
    return day


def _call_id(value: str) -> int:
    if not digits_only(value) or len(value) > 18:
        raise BadParameter("The callId parameter must be a call ID (a whole number).")
    return int(value)


# --- the OpenAPI description of the records (part 2.3, CONTRACT.md "B") -------------------

SLOTS = range(1, 11)
# INT(11) columns: a string of digits, or null when unset.
NUMBER_MEMBERS = ("callDuration", "responseTime")
# Text members a call not yet scored has null (the score members), in record order.
SCORE_TEXT = tuple(
    name for name in SCORED_MEMBERS if not re.fullmatch(r"cat\d+|wow", name)
)
TEXT_MEMBERS = (
    "dealerName",
    "source",
    "status",
    "firstName",
    "lastName",
    "email",
    "phone",
    "callNotes",
    "callRecording",
    "agent",
    "callSummary",
    "inboundCallTrackingNumber",
    "accountPostalCode",
    "accountAddress",
    "accountCity",
    "updateNotes",
    "callTranscription",
)


@extend_schema_field({"type": "string", "pattern": "^[0-9]+$"})
class DigitsField(serializers.CharField):
    pass


@extend_schema_field({"type": ["string", "null"], "pattern": "^[0-9]+$"})
class DigitsOrNullField(serializers.CharField):
    pass


@extend_schema_field({"type": ["string", "null"], "pattern": "^[01]$"})
class FlagField(serializers.CharField):
    pass


def _record_fields() -> dict[str, serializers.Field]:
    fields: dict[str, serializers.Field] = {
        "id": DigitsField(),
        "altid": serializers.CharField(
            allow_null=True, help_text="The lead's prospect id."
        ),
        "date": serializers.CharField(
            help_text="YYYY-MM-DD, the account's timezone: when the lead or request came."
        ),
        "time": serializers.CharField(help_text="HH:MM:SS, the same moment."),
        "callAttempts": DigitsField(),
    }
    fields.update({name: DigitsOrNullField() for name in NUMBER_MEMBERS})
    fields.update({name: serializers.CharField() for name in TEXT_MEMBERS})
    fields.update({name: serializers.CharField(allow_null=True) for name in SCORE_TEXT})
    fields.update(
        {f"cat{slot}Name": serializers.CharField(allow_null=True) for slot in SLOTS}
    )
    fields.update({f"cat{slot}": FlagField() for slot in SLOTS})
    fields["wow"] = FlagField()
    return fields


ScoredCallRecord = type(
    "ScoredCallRecord",
    (serializers.Serializer,),
    {
        "__doc__": "One call (part 2.3). A call not yet scored has its score members "
        "(scoredFname .. coachedBy, cat1 .. cat10, wow) null.",
        **_record_fields(),
    },
)
RECORD_OR_RANGE = PolymorphicProxySerializer(
    component_name="ScoredCallData",
    serializers=[ScoredCallRecord, ScoredCallRecord(many=True)],
    resource_type_field_name=None,
    many=False,
)
XML_BODY = {
    "type": "string",
    "description": "returnType=xml: a `<calldrip>` (callId) or `<calldrips>` (a range) "
    "document; an error is `<error><success>false</success><message>...</message></error>`.",
}


def _answers(status: int, body: Any, description: str) -> dict[Any, OpenApiResponse]:
    """``status`` answered in JSON (``body``) or, with returnType=xml, in XML."""
    return {
        (status, "application/json"): OpenApiResponse(body, description=description),
        (status, "application/xml"): OpenApiResponse(XML_BODY, description=description),
    }


def _xml_error(message: str) -> str:
    return (
        f"{XML_DECLARATION}<error><success>false</success>"
        f"<message>{xml_text(message)}</message></error>"
    )


class ScoredDataApi(APIView):
    """One call (``callId``) or every call of a date range, scored or not."""

    authentication_classes = [ScoredDataKeyAuthentication]
    content_negotiation_class = ContentNegotiation
    throttle_classes = [CredentialRateThrottle]
    throttle_scope = "scoreddata"
    error_shape = ENVELOPE

    @extend_schema(
        tags=["Scored call data"],
        operation_id="scored_data",
        summary="Scored call records of one account",
        description=(
            "One call (`callId`; the dates are then ignored) or every call received "
            "in a range of days (`fromDate` to `toDate`, both required without "
            "`callId`: a missing one is a 400, `The fromDate parameter is required.` "
            "or `The toDate parameter is required.`), as JSON or XML (`returnType`). "
            "Errors come in the format asked for; a 413 is always JSON."
        ),
        parameters=[
            OpenApiParameter(
                "apikey",
                str,
                description="The account's scored-data key (also `apiKey`).",
            ),
            OpenApiParameter(
                "returnType",
                str,
                enum=list(FORMATS),
                description="json (default) or xml; another value is a 400.",
            ),
            OpenApiParameter(
                "callId",
                {"type": "integer", "minimum": 0, "maximum": 10**18 - 1},
                description="One call; the dates are then ignored.",
            ),
            OpenApiParameter(
                "fromDate",
                OpenApiTypes.DATE,
                description=(
                    "First day (YYYY-MM-DD, the account's timezone), required "
                    f"without callId; a date {BETWEEN}."
                ),
            ),
            OpenApiParameter(
                "toDate",
                OpenApiTypes.DATE,
                description=(
                    "Last day, inclusive, required without callId, not before "
                    f"fromDate; a date {BETWEEN}."
                ),
            ),
            RETRY_AFTER,
        ],
        responses={
            **_answers(
                200,
                RECORD_OR_RANGE,
                "A record (callId) or an array of records (`<calldrips>` in XML).",
            ),
            **_answers(
                400,
                ErrorEnvelope,
                "A bad parameter, named in the message: a missing date without "
                f"callId, a date that is not YYYY-MM-DD or not {BETWEEN}, fromDate "
                "after toDate, a callId that is not a whole number, a returnType "
                "other than json or xml.",
            ),
            **_answers(
                401, ErrorEnvelope, "Missing or invalid key: `Invalid API key`."
            ),
            **_answers(
                404,
                ErrorEnvelope,
                "callId names no call of the account: `Call not found`.",
            ),
            413: OpenApiResponse(ErrorEnvelope, description=TOO_LARGE),
            **_answers(429, ErrorEnvelope, RATE_LIMITED),
        },
    )
    def get(self, request: Request) -> HttpResponseBase:
        account: Account = request.auth  # type: ignore[assignment]
        return_type = _return_type(request)
        if return_type not in FORMATS:
            raise BadParameter("The returnType parameter must be json or xml.")
        builder = RecordBuilder(account)
        call_id = str(request.query_params.get("callId") or "").strip()
        if call_id:
            row = next(
                rows(calls_of_account(account=account, pk=_call_id(call_id))), None
            )
            if row is None:
                raise NotFound(CALL_NOT_FOUND)
            if return_type == "xml":
                return HttpResponse(
                    XML_DECLARATION + builder.xml(row), content_type=XML_TYPE
                )
            return Response(builder.json(row))
        first, last = _date(request, "fromDate"), _date(request, "toDate")
        if first > last:
            raise BadParameter("The fromDate parameter must not be after toDate.")
        start, end = local_day_bounds(account, first, last)
        calls = calls_of_account(
            account=account, received_at__gte=start, received_at__lt=end
        )
        return StreamingHttpResponse(
            stream_records(builder, calls, return_type),
            content_type=XML_TYPE if return_type == "xml" else JSON_TYPE,
        )

    def handle_exception(self, exc: Exception) -> Response:
        response = super().handle_exception(exc)
        if _return_type(self.request) == "xml" and isinstance(response.data, dict):
            message = str(response.data.get("message", ""))
            xml = HttpResponse(
                _xml_error(message), status=response.status_code, content_type=XML_TYPE
            )
            for header in ("Retry-After",):
                if header in response:
                    xml[header] = response[header]
            return xml  # type: ignore[return-value]
        return response
