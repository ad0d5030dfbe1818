"""DRF authentication for the interfaces' credential styles. Keys never reach logs or messages."""

from __future__ import annotations

from typing import Any, cast

from django.contrib.auth.models import AnonymousUser
from rest_framework.authentication import BaseAuthentication
from rest_framework.request import Request

from accounts.models import ApiCredential
from accounts.selectors import api_credential_for_key
from config.api import Forbidden, InvalidApiKey


def credential_of(request: Request) -> ApiCredential:
    """The credential an authentication class of this module put on the request."""
    return cast(ApiCredential, request.auth)


class ApiUserKeyAuthentication(BaseAuthentication):
    """The User API's header pair ``apiuser`` and ``apikey``; ``request.auth`` is the credential."""

    def authenticate(self, request: Request) -> tuple[Any, ApiCredential]:
        api_user = request.META.get("HTTP_APIUSER", "").strip()
        key = request.META.get("HTTP_APIKEY", "").strip()
        credential = (
            api_credential_for_key(key=key, api_user=api_user)
            if api_user and key
            else None
        )
        if credential is None:
            raise InvalidApiKey()
        return AnonymousUser(), credential

    def authenticate_header(self, request: Request) -> str:
        return "apikey"


class LeadFormAuthentication(BaseAuthentication):
    """Lead intake's ``apiuser`` and ``apikey`` form fields (or headers), checked in the
    documented order, each failure a 403 with its documented reason."""

    USER_BLANK = "API Username cannot be blank"
    KEY_BLANK = "API Key cannot be blank"
    NO_ACCOUNT = "No account found with the given API username/password. Please check your credentials and try again."

    def authenticate(self, request: Request) -> tuple[Any, ApiCredential]:
        api_user = _form_or_header(request, "apiuser")
        key = _form_or_header(request, "apikey")
        if not api_user:
            raise Forbidden(self.USER_BLANK)
        if not key:
            raise Forbidden(self.KEY_BLANK)
        credential = api_credential_for_key(key=key, api_user=api_user)
        if credential is None:
            raise Forbidden(self.NO_ACCOUNT)
        return AnonymousUser(), credential


def _form_or_header(request: Request, name: str) -> str:
    value = request.data.get(name) if hasattr(request.data, "get") else None
    if not isinstance(value, str) or not value.strip():
        value = request.META.get(f"HTTP_{name.upper()}", "")
    return value.strip()
