"""DRF authentication for the interfaces' credential styles. Keys never reach logs or messages."""

from __future__ import annotations

from typing import Any

from django.contrib.auth.models import AnonymousUser
from rest_framework.authentication import BaseAuthentication
from rest_framework.request import Request

from accounts.models import ApiCredential
from accounts.selectors import api_credential_for_key
from config.api import InvalidApiKey


class ApiUserKeyAuthentication(BaseAuthentication):
    """The User API's header pair ``apiuser`` and ``apikey``; ``request.auth`` is the credential."""

    def authenticate(self, request: Request) -> tuple[Any, ApiCredential]:
        api_user = request.META.get("HTTP_APIUSER", "").strip()
        key = request.META.get("HTTP_APIKEY", "").strip()
        credential = api_credential_for_key(key=key, api_user=api_user) if api_user and key else None
        if credential is None:
            raise InvalidApiKey()
        return AnonymousUser(), credential

    def authenticate_header(self, request: Request) -> str:
        return "apikey"
