"""Scored call data (interface B): ``GET /api/scoreddata`` in JSON or XML."""

from __future__ import annotations

import re
from datetime import date

from django.http import HttpResponse, HttpResponseBase, StreamingHttpResponse
from drf_spectacular.types import OpenApiTypes
from drf_spectacular.utils import OpenApiParameter, OpenApiResponse, extend_schema
from rest_framework.request import Request
from rest_framework.response import Response
from rest_framework.views import APIView

from accounts.authentication import ScoredDataKeyAuthentication
from accounts.models import Account
from core.api import ENVELOPE, ApiError, ContentNegotiation, NotFound
from core.throttling import CredentialRateThrottle
from core.validation import digits_only
from scoring.dates import BETWEEN, day_accepted
from scoring.exports import stream_records
from scoring.records import (
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
                description="json (default) or xml.",
            ),
            OpenApiParameter(
                "callId", int, description="One call; the dates are then ignored."
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
                    f"Last day, inclusive, required without callId; a date {BETWEEN}."
                ),
            ),
        ],
        responses={
            200: OpenApiResponse(
                description="A record (callId) or an array of records (`<calldrips>` in XML)."
            ),
            400: OpenApiResponse(
                description="A bad parameter (a date that is not YYYY-MM-DD, or not "
                f"{BETWEEN}), named in the message."
            ),
            401: OpenApiResponse(
                description='{"success": false, "message": "Invalid API key"}'
            ),
            404: OpenApiResponse(
                description='{"success": false, "message": "Call not found"}'
            ),
            429: OpenApiResponse(description="Over the rate limit; see Retry-After."),
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
