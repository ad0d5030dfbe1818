"""Refuse oversized API bodies before anything reads them; answer API crashes in the
interface's shape, and a database that cannot be reached with 503 and ``Retry-After``;
answer "not found" the same way whatever DEBUG says. The pages' own middleware
(sessions, signed-in user, messages) lets the interfaces' requests go straight past it."""

import sys
from collections.abc import Callable
from typing import Any

from django.conf import settings
from django.contrib.auth import middleware as auth
from django.contrib.messages import middleware as messages
from django.contrib.sessions import middleware as sessions
from django.db.utils import InterfaceError, OperationalError
from django.http import Http404, HttpRequest, HttpResponse
from django.urls import Resolver404, resolve
from django.views import defaults

from core.api import (
    ENVELOPE,
    InternalError,
    NotFound,
    PayloadTooLarge,
    ServiceUnavailable,
    error_response,
)


def is_interface(path: str) -> bool:
    """A path of the four interfaces (User API, lead intake, click-to-call, scored data):
    callers with keys, never a browser session. The API's documentation is pages."""
    return path.startswith("/api/") and not path.startswith(
        ("/api/docs/", "/api/schema/")
    )


class PagesOnly:
    """Mixed into a pages-only middleware: an interface's request goes straight past it.

    Sessions, the signed-in user and messages serve pages; an interface's request never
    reads them (its callers authenticate with keys) and they add nothing to its answer.
    Subclasses of Django's own, so the admin's checks still find them. (CSRF stays
    Django's own: ``check --deploy`` looks for it by name, and DRF's views are exempt.)"""

    get_response: Callable[[HttpRequest], Any]

    def __call__(self, request: HttpRequest) -> Any:
        if is_interface(request.path_info):
            return self.get_response(request)
        return super().__call__(request)  # type: ignore[misc]


class SessionMiddleware(PagesOnly, sessions.SessionMiddleware):
    pass


class AuthenticationMiddleware(PagesOnly, auth.AuthenticationMiddleware):
    pass


class MessageMiddleware(PagesOnly, messages.MessageMiddleware):
    pass


class RequestSizeLimitMiddleware:
    def __init__(self, get_response: Callable[[HttpRequest], HttpResponse]) -> None:
        self.get_response = get_response

    def __call__(self, request: HttpRequest) -> HttpResponse:
        if (
            request.path_info.startswith("/api/")
            and _content_length(request) > settings.API_MAX_BODY_BYTES
        ):
            return error_response(_error_shape(request.path_info), PayloadTooLarge())
        return self.get_response(request)


class NotFoundMiddleware:
    """A 404 answered by ``not_found`` (``handler404``) with DEBUG on as with it off.

    With DEBUG on, Django answers an ``Http404`` (a path that names no view, or a page's
    "no such call") with its technical page instead of ``handler404``: ``make run`` then
    answered an interface's caller HTML where production answers the interface's JSON.
    Last in ``MIDDLEWARE``, so ``CommonMiddleware`` still adds a missing slash."""

    def __init__(self, get_response: Callable[[HttpRequest], HttpResponse]) -> None:
        self.get_response = get_response

    def __call__(self, request: HttpRequest) -> HttpResponse:
        response = self.get_response(request)
        if (
            settings.DEBUG
            and response.status_code == 404
            and request.resolver_match is None  # no view: the path named none
        ):
            return not_found(request, Resolver404())
        return response

    def process_exception(
        self, request: HttpRequest, exception: Exception
    ) -> HttpResponse | None:
        if settings.DEBUG and isinstance(exception, Http404):
            return not_found(request, exception)
        return None


def server_error(request: HttpRequest) -> HttpResponse:
    """``handler500``: an API caller gets JSON in its interface's shape, a person the page.

    A database that cannot be reached (Django calls this inside its ``except``, so the
    exception is at hand) is a 503 with ``Retry-After`` instead: nothing was done and the
    request can be sent again. DRF views answer it themselves (``core.api``)."""
    if isinstance(sys.exc_info()[1], OperationalError | InterfaceError):
        unavailable = ServiceUnavailable()
        if request.path_info.startswith("/api/"):
            return error_response(_error_shape(request.path_info), unavailable)
        return HttpResponse(
            unavailable.message,
            status=unavailable.status,
            headers=unavailable.headers(),
            content_type="text/plain; charset=utf-8",
        )
    if request.path_info.startswith("/api/"):
        return error_response(_error_shape(request.path_info), InternalError())
    return defaults.server_error(request)


def not_found(request: HttpRequest, exception: Exception) -> HttpResponse:
    """``handler404``: a path under ``/api/`` that names no endpoint (``/api/users/``, a
    mistyped one) is answered in JSON, in the shape of the interface it is closest to; a
    person gets the page."""
    if request.path_info.startswith("/api/"):
        return error_response(_error_shape(request.path_info), NotFound())
    return defaults.page_not_found(request, exception)


def _content_length(request: HttpRequest) -> int:
    # From META, not ``request.headers`` (which django-upgrade would write for a direct
    # ``request.META.get``): building every header's name costs more than the rest of
    # this middleware, and the User API's path never needs them otherwise.
    meta = request.META
    try:
        return int(meta.get("CONTENT_LENGTH") or 0)
    except ValueError:
        return 0


def _error_shape(path: str) -> str:
    """The error shape of the interface at ``path``, or at ``path`` without its trailing
    slash (``/api/nl/`` is lead intake's); the envelope for any other."""
    for candidate in dict.fromkeys((path, path.rstrip("/"))):
        try:
            view_class = getattr(resolve(candidate).func, "view_class", None)
        except Resolver404:
            continue
        return getattr(view_class, "error_shape", ENVELOPE)
    return ENVELOPE
