"""OpenAPI descriptions the interfaces share (drf-spectacular): the error bodies of the
envelope shape, the statuses any request can meet before its view runs (413 from the size
limit, 429 with ``Retry-After`` from the rate limits and the failed-key limit), and the
``Retry-After`` header that comes with a 429."""

from __future__ import annotations

from typing import Any

from drf_spectacular.types import OpenApiTypes
from drf_spectacular.utils import (
    OpenApiParameter,
    OpenApiResponse,
    extend_schema_field,
    inline_serializer,
)
from rest_framework import serializers

from core.api import INVALID_DATA


@extend_schema_field({"type": "boolean", "const": False})
class FalseField(serializers.BooleanField):
    """``success`` of an error body: always false."""


class ErrorEnvelope(serializers.Serializer):
    """``{"success": false, "message": ...}``: the User API's, click-to-call's and scored
    data's errors."""

    success = FalseField()
    message = serializers.CharField()


@extend_schema_field({"type": "string", "const": INVALID_DATA})
class InvalidDataField(serializers.CharField):
    pass


# 422: ``message`` is always "The given data was invalid."; ``errors`` maps each member at
# fault (nested ones dotted: ``schedule.monday.endTime``, ``accountIds.0``; a body that is
# no JSON object: ``body``) to its messages. (Inline: a declared field named ``errors``
# would shadow the serializer's own.)
ValidationFailure = inline_serializer(
    "ValidationFailure",
    {
        "message": InvalidDataField(),
        "errors": serializers.DictField(
            child=serializers.ListField(child=serializers.CharField(), min_length=1)
        ),
    },
)


RETRY_AFTER = OpenApiParameter(
    "Retry-After",
    OpenApiTypes.INT,
    OpenApiParameter.HEADER,
    response=[429],
    required=True,
    description="Seconds to wait before the next request.",
)

RATE_LIMITED = (
    "Over the credential's rate limit, or too many invalid keys from this address: "
    "wait the seconds `Retry-After` says."
)
TOO_LARGE = "The request body is larger than 1 MiB."


def error_responses(
    body: Any, descriptions: dict[int, str]
) -> dict[int, OpenApiResponse]:
    """Each status of ``descriptions`` answered with ``body``, described; 422 (the
    validation shape) excepted where ``body`` is the envelope."""
    return {
        status: OpenApiResponse(
            ValidationFailure if status == 422 and body is ErrorEnvelope else body,
            description=text,
        )
        for status, text in descriptions.items()
    }
