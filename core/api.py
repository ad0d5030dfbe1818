"""What every interface shares: the JSON renderer, the success envelope, the error types
and the one exception handler that renders errors in each interface's documented shape.

A view names its shape with ``error_shape``: ``"envelope"`` (User API, click-to-call:
``{"success": false, "message": ...}``) or ``"reason"`` (lead intake: ``{"reason": ...}``).
"""

from __future__ import annotations

import logging
import math
import re
from array import array
from collections.abc import Mapping
from itertools import accumulate
from typing import Any, ClassVar

import orjson
from django.conf import settings
from django.core.exceptions import RequestDataTooBig
from django.db.utils import InterfaceError, OperationalError
from django.http import Http404, JsonResponse
from rest_framework import exceptions as drf
from rest_framework import negotiation, parsers, renderers
from rest_framework.response import Response
from rest_framework.utils import json

from core.validation import flatten_errors

logger = logging.getLogger(__name__)

ENVELOPE = "envelope"
REASON = "reason"
INVALID_DATA = "The given data was invalid."


class JSONRenderer(renderers.JSONRenderer):
    charset = "utf-8"


# Types orjson would write otherwise than DRF's encoder (datetimes, dataclasses, str and
# int subclasses): refused, so DRF's own rendering takes them.
_ORJSON_REFUSES = (
    orjson.OPT_PASSTHROUGH_DATETIME
    | orjson.OPT_PASSTHROUGH_DATACLASS
    | orjson.OPT_PASSTHROUGH_SUBCLASS
)


class PlainJSONRenderer(JSONRenderer):
    """``JSONRenderer``'s very bytes, written by orjson (a tenth of the time): for views
    whose bodies hold strings, integers, booleans, nulls, lists and objects only. Floats
    are the one plain value the two write differently (``1e+16`` against ``1e16``): such
    a view keeps ``JSONRenderer``. Anything else orjson does not write as DRF does, and
    an indented answer, goes to DRF's own rendering."""

    def render(
        self,
        data: Any,
        accepted_media_type: str | None = None,
        renderer_context: Mapping[str, Any] | None = None,
    ) -> bytes:
        if data is not None and accepted_media_type == self.media_type:
            try:
                rendered = orjson.dumps(data, option=_ORJSON_REFUSES)
            except TypeError:
                pass
            else:
                # As DRF's: the two line terminators JSON allows but JavaScript does not.
                return rendered.replace(b"\xe2\x80\xa8", b"\\u2028").replace(
                    b"\xe2\x80\xa9", b"\\u2029"
                )
        return super().render(data, accepted_media_type, renderer_context)  # type: ignore[no-any-return]


class ContentNegotiation(negotiation.DefaultContentNegotiation):
    """The interfaces answer in the one format the interface document gives each (JSON;
    scored call data as ``returnType`` says), whatever the ``Accept`` header or a
    ``format`` query parameter asks: the view's first renderer. The document names
    neither; DRF's own negotiation answered ``Accept: application/xml`` with a 406 and
    ``?format=xml`` with a 404, and lead intake then never stored the lead."""

    def select_renderer(
        self, request: Any, renderers: Any, format_suffix: str | None = None
    ) -> Any:
        return renderers[0], renderers[0].media_type


# Deeper than any body an interface accepts (a User API schedule is 3 levels) and far below
# where json's recursion would fail with a 500.
MAX_JSON_DEPTH = 32
TOO_DEEP = f"The request body may not be nested more than {MAX_JSON_DEPTH} levels deep."
# A string literal, or what is left of an unterminated one: every match succeeds at once,
# so the scan stays linear whatever quotes and backslashes a body holds.
_JSON_STRING = re.compile(r'"(?:[^"\\]+|\\.?)*"?', re.DOTALL)
_NOT_BRACKET = re.compile(r"[^\[\]{}]+")
_BRACKET_STEP = bytes.maketrans(b"[{]}", b"\x01\x01\xff\xff")


def json_too_deep(text: str) -> bool:
    """Whether ``text`` nests arrays and objects deeper than ``MAX_JSON_DEPTH`` (brackets in
    strings not counted): linear, without recursion, in C loops."""
    if text.count("[") + text.count("{") <= MAX_JSON_DEPTH:
        return False
    brackets = _NOT_BRACKET.sub("", _JSON_STRING.sub("", text))
    steps = array("b", brackets.encode("ascii").translate(_BRACKET_STEP))
    return max(accumulate(steps), default=0) > MAX_JSON_DEPTH


class JSONParser(parsers.JSONParser):
    """DRF's JSON parser, refusing a body nested deeper than ``MAX_JSON_DEPTH`` before
    parsing it: a few thousand "[" would otherwise end in a RecursionError, a 500."""

    def parse(
        self,
        stream: Any,
        media_type: str | None = None,
        parser_context: Mapping[str, Any] | None = None,
    ) -> Any:
        encoding = (parser_context or {}).get("encoding") or settings.DEFAULT_CHARSET
        try:
            # A bytes-to-bytes codec (bz2_codec: a decompression bomb) is a LookupError here.
            text = stream.read().decode(encoding)
        except (LookupError, UnicodeError) as exc:
            raise drf.ParseError(f"JSON parse error - {exc}") from exc
        if json_too_deep(text):
            raise ValidationFailed.one("body", TOO_DEEP)
        try:
            return json.loads(text, parse_constant=json.strict_constant)
        except (ValueError, RecursionError) as exc:
            raise drf.ParseError(f"JSON parse error - {exc}") from exc


def envelope(
    action: str, message: str, *, status: int = 200, **members: Any
) -> Response:
    """The User API's success body: success, action, message, then the operation's members."""
    return Response(
        {"success": True, "action": action, "message": message, **members},
        status=status,
    )


class ApiError(Exception):
    """An error answered in the calling interface's shape; never a 500."""

    status: ClassVar[int] = 400
    default_message: ClassVar[str] = "Bad request."

    def __init__(self, message: str | None = None) -> None:
        self.message = message or self.default_message
        super().__init__(self.message)

    def headers(self) -> dict[str, str]:
        return {}


class InvalidApiKey(ApiError):
    status = 401
    default_message = "Invalid API key"


class Forbidden(ApiError):
    status = 403
    default_message = "Forbidden."


class NotFound(ApiError):
    status = 404
    default_message = "Not found."


class MethodNotAllowed(ApiError):
    status = 405
    default_message = "Method not allowed."


class PayloadTooLarge(ApiError):
    status = 413
    default_message = "The request body is larger than 1 MiB."


class UnsupportedMediaType(ApiError):
    status = 415
    default_message = "Unsupported content type."


class InternalError(ApiError):
    status = 500
    default_message = "Something went wrong on our side. The request can be retried."


class ValidationFailed(ApiError):
    status = 422
    default_message = INVALID_DATA

    def __init__(self, errors: dict[str, list[str]]) -> None:
        super().__init__(INVALID_DATA)
        self.errors = errors

    @classmethod
    def one(cls, field: str, message: str) -> ValidationFailed:
        return cls({field: [message]})


class RateLimited(ApiError):
    status = 429
    default_message = "Too many requests. Please slow down."

    def __init__(self, retry_after: float) -> None:
        super().__init__()
        self.retry_after = max(1, math.ceil(retry_after))

    def headers(self) -> dict[str, str]:
        return {"Retry-After": str(self.retry_after)}


class TooManyFailures(RateLimited):
    """Too many invalid keys from one client address (core/throttling.py)."""

    default_message = "Too many failed authentication attempts. Please try again later."


class ServiceUnavailable(ApiError):
    """The database cannot be reached: the request did nothing and can be retried."""

    status = 503
    default_message = (
        "The service is temporarily unavailable. Please retry in a few seconds."
    )
    retry_after = 5

    def headers(self) -> dict[str, str]:
        return {"Retry-After": str(self.retry_after)}


def json_object(request: Any) -> dict[str, Any]:
    """The request's JSON body, which must be an object; else the validation shape on ``body``."""
    if not isinstance(request.data, dict):
        raise ValidationFailed.one("body", "The request body must be a JSON object.")
    return request.data


def error_body(shape: str, error: ApiError) -> dict[str, Any]:
    """The body of ``error`` in an interface's shape."""
    if shape == REASON:
        if isinstance(error, ValidationFailed):
            first = next(iter(error.errors.values()), [error.message])
            return {"reason": first[0]}
        return {"reason": error.message}
    if isinstance(error, ValidationFailed):
        return {"message": INVALID_DATA, "errors": error.errors}
    return {"success": False, "message": error.message}


def error_response(shape: str, error: ApiError) -> JsonResponse:
    """A plain Django response for errors raised before DRF runs (middleware), written
    compact as DRF's renderer writes every other answer."""
    return JsonResponse(
        error_body(shape, error),
        status=error.status,
        headers=error.headers(),
        content_type="application/json; charset=utf-8",
        json_dumps_params={"separators": (",", ":")},
    )


def as_api_error(exc: Exception, view: Any) -> ApiError | None:
    """Translate framework exceptions into ours; ``None`` for anything unexpected."""
    if isinstance(exc, ApiError):
        return exc
    if isinstance(exc, OperationalError | InterfaceError):
        logger.warning("Answered 503: the database cannot be reached (%s).", exc)
        return ServiceUnavailable()
    if isinstance(exc, drf.ValidationError):
        return ValidationFailed(flatten_errors(exc.detail))
    if isinstance(exc, drf.ParseError):
        return ValidationFailed.one(
            "body", "The request body must be a valid JSON object."
        )
    if isinstance(exc, drf.UnsupportedMediaType):
        return UnsupportedMediaType(
            f'Unsupported content type "{exc.args[0] if exc.args else ""}".'
        )
    if isinstance(exc, drf.NotAuthenticated | drf.AuthenticationFailed):
        return InvalidApiKey()
    if isinstance(exc, drf.Throttled):
        return RateLimited(getattr(exc, "wait", None) or 1)
    if isinstance(exc, drf.MethodNotAllowed):
        return MethodNotAllowed()
    if isinstance(exc, Http404 | drf.NotFound):
        return NotFound(getattr(view, "not_found_message", NotFound.default_message))
    if isinstance(exc, RequestDataTooBig):
        return PayloadTooLarge()
    if isinstance(exc, drf.APIException) and exc.status_code < 500:
        error = ApiError(str(exc.detail))
        error.status = exc.status_code  # type: ignore[misc]
        return error
    return None


def exception_handler(exc: Exception, context: dict[str, Any]) -> Response | None:
    """Render every error of every interface in that interface's documented shape."""
    view = context.get("view")
    error = as_api_error(exc, view)
    if error is None:
        return None
    shape = getattr(view, "error_shape", ENVELOPE)
    return Response(
        error_body(shape, error), status=error.status, headers=error.headers()
    )
