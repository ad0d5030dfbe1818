"""Click-to-call's key: the ``api_key`` request header, else the ``api_key`` body member."""

from __future__ import annotations

from typing import Any

from django.contrib.auth.models import AnonymousUser
from rest_framework.authentication import BaseAuthentication
from rest_framework.request import Request

from accounts.authentication import key_refused
from accounts.models import ApiCredential
from accounts.selectors import api_credential_for_key
from core.api import InvalidApiKey

HEADER = "api_key"


class ClickToCallKeyAuthentication(BaseAuthentication):
    """``request.auth`` is the credential the key belongs to; a missing or unusable key is a 401.

    The header wins when both are sent. The header's underscore is dropped by most servers'
    defaults; the shipped gunicorn configuration keeps it (``header_map = "dangerous"``).
    """

    def authenticate(self, request: Request) -> tuple[Any, ApiCredential]:
        key = _header_key(request) or _body_key(request)
        credential = api_credential_for_key(key=key) if key else None
        if credential is None:
            key_refused(request, InvalidApiKey())
        return AnonymousUser(), credential

    def authenticate_header(self, request: Request) -> str:
        return HEADER


def _header_key(request: Request) -> str:
    value = request.headers.get("api-key", "")
    return value.strip() if isinstance(value, str) else ""


def _body_key(request: Request) -> str:
    # Reading the body here lets a malformed JSON body surface as the 422 it is.
    body = request.data
    value = body.get("api_key") if isinstance(body, dict) else None
    return value.strip() if isinstance(value, str) else ""
