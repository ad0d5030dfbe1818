"""The appointments endpoint: an integrator (a CRM, the showroom's check-in) reads an
account's appointments and marks one confirmed, kept, no-show or cancelled. It takes the
account's scored-data key (``apikey``, as ``GET /api/scoredata`` does); answers in the
envelope shape; an appointment of another account is not found."""

from __future__ import annotations

import datetime as dt
from typing import Any
from zoneinfo import ZoneInfo

from drf_spectacular.utils import OpenApiParameter, OpenApiResponse, extend_schema
from rest_framework import serializers
from rest_framework.request import Request
from rest_framework.response import Response

from accounts.authentication import AccountKeyApi
from appointments.models import Actor, Appointment, Status
from appointments.payloads import appointment_object
from appointments.selectors import appointment_for_account
from appointments.services import NotAllowed, appointment_change
from core.api import ApiError, NotFound, ValidationFailed
from core.schema import RETRY_AFTER, ErrorEnvelope, error_responses
from core.validation import digits_only
from webhooks.schema import (
    AppointmentEventOut,  # the events' appointment, the same object
)

APPOINTMENT_NOT_FOUND = "Appointment not found"
# What an integrator may mark: the lead confirmed, came, did not come, or cancelled.
MARKS = (Status.CONFIRMED, Status.KEPT, Status.NO_SHOW, Status.CANCELLED)
MOST_LISTED = 500


class BadParameter(ApiError):
    status = 400


class AppointmentOneOut(serializers.Serializer):
    success = serializers.BooleanField()
    appointment = AppointmentEventOut()


class AppointmentListOut(serializers.Serializer):
    success = serializers.BooleanField()
    appointments = AppointmentEventOut(many=True)


class AppointmentMarkIn(serializers.Serializer):
    status = serializers.ChoiceField(
        choices=[str(mark) for mark in MARKS],
        help_text="confirmed, kept, no_show or cancelled.",
    )
    note = serializers.CharField(required=False, allow_blank=True, max_length=1000)


class _AccountApi(AccountKeyApi):
    throttle_scope = "appointments"


KEY = OpenApiParameter("apikey", str, required=True, description="The account's key.")
ERRORS = error_responses(
    ErrorEnvelope,
    {
        401: "Missing or invalid key: `Invalid API key`.",
        404: "No appointment with this id in the key's account: "
        "`Appointment not found`.",
    },
)


class AppointmentListApi(_AccountApi):
    @extend_schema(
        tags=["Appointments"],
        operation_id="appointments_list",
        summary="An account's appointments, by call or by day",
        description=(
            "The appointments made on one call (`callId`), or those starting on one "
            "day in the account's timezone (`date`, YYYY-MM-DD); one of the two is "
            f"required. At most {MOST_LISTED}, by start."
        ),
        parameters=[
            KEY,
            OpenApiParameter("callId", int, description="A call's id."),
            OpenApiParameter("date", str, description="A day, YYYY-MM-DD."),
            RETRY_AFTER,
        ],
        responses={200: OpenApiResponse(AppointmentListOut), **ERRORS},
    )
    def get(self, request: Request) -> Response:
        account = self.account(request)
        found = Appointment.objects.filter(account=account).select_related("account")
        call_id = str(request.query_params.get("callId") or "").strip()
        day = str(request.query_params.get("date") or "").strip()
        if call_id:
            if not digits_only(call_id) or len(call_id) > 18:
                raise BadParameter(
                    "The callId parameter must be a call ID (a whole number)."
                )
            found = found.filter(call_id=int(call_id))
        elif day:
            try:
                start = dt.datetime.combine(
                    dt.date.fromisoformat(day), dt.time(0), ZoneInfo(account.timezone)
                )
            except ValueError:
                raise BadParameter(
                    "The date parameter must be a date in the format YYYY-MM-DD."
                ) from None
            found = found.filter(
                starts_at__gte=start, starts_at__lt=start + dt.timedelta(days=1)
            )
        else:
            raise BadParameter("The callId or date parameter is required.")
        listed = [
            appointment_object(a)
            for a in found.order_by("starts_at", "pk")[:MOST_LISTED]
        ]
        return Response({"success": True, "appointments": listed})


class AppointmentApi(_AccountApi):
    def _one(self, request: Request, appointment_id: int) -> Appointment:
        appointment = appointment_for_account(
            account=self.account(request), appointment_id=appointment_id
        )
        if appointment is None:
            raise NotFound(APPOINTMENT_NOT_FOUND)
        return appointment

    @extend_schema(
        tags=["Appointments"],
        operation_id="appointment_get",
        summary="One appointment",
        parameters=[KEY, RETRY_AFTER],
        responses={200: OpenApiResponse(AppointmentOneOut), **ERRORS},
    )
    def get(self, request: Request, appointment_id: int) -> Response:
        appointment = self._one(request, appointment_id)
        return Response(
            {"success": True, "appointment": appointment_object(appointment)}
        )

    @extend_schema(
        tags=["Appointments"],
        operation_id="appointment_mark",
        summary="Mark an appointment confirmed, kept, no-show or cancelled",
        description=(
            "Moves the appointment along its life (a kept or no-show mark may be "
            "corrected to the other); a change its life does not allow is a 422 with "
            "the reason under `errors.status`, and changes nothing. The change is kept "
            "with `integrator` as who made it, and its webhook event is sent."
        ),
        request=AppointmentMarkIn,
        parameters=[KEY, RETRY_AFTER],
        responses={
            200: OpenApiResponse(AppointmentOneOut),
            **ERRORS,
            **error_responses(ErrorEnvelope, {422: "The given data was invalid."}),
        },
    )
    def post(self, request: Request, appointment_id: int) -> Response:
        appointment = self._one(request, appointment_id)
        given = AppointmentMarkIn(data=request.data)
        if not given.is_valid():
            raise ValidationFailed(_messages(given.errors))
        try:
            changed = appointment_change(
                appointment=appointment,
                to=given.validated_data["status"],
                by=Actor.INTEGRATOR,
                note=given.validated_data.get("note", ""),
            )
        except NotAllowed as refusal:
            raise ValidationFailed({"status": [str(refusal)]}) from None
        return Response({"success": True, "appointment": appointment_object(changed)})


def _messages(errors: Any) -> dict[str, list[str]]:
    return {field: [str(m) for m in messages] for field, messages in errors.items()}
