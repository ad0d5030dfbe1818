"""DRF authentication for the interfaces' credential styles. Keys never reach logs or messages.

Every refusal goes through ``key_refused``: past ``AUTH_FAILURE_LIMIT`` failures from one
client address it becomes a 429 with ``Retry-After``, whichever API was tried.
"""

from __future__ import annotations

from typing import Any, NoReturn, cast

from django.contrib.auth.models import AnonymousUser
from rest_framework.authentication import BaseAuthentication
from rest_framework.request import Request

from accounts.models import Account, ApiCredential
from accounts.selectors import account_for_scored_data_key, api_credential_for_key
from core.api import ApiError, Forbidden, InvalidApiKey, TooManyFailures
from core.throttling import auth_failure


def key_refused(request: Request, error: ApiError) -> NoReturn:
    """Refuse a missing or invalid key with ``error``, counting the failure against the
    client address; once the address is over its limit, with 429 instead."""
    retry_after = auth_failure(request)
    if retry_after is not None:
        raise TooManyFailures(retry_after)
    raise error


def credential_of(request: Request) -> ApiCredential:
    """The credential an authentication class of this module put on the request."""
    return cast(ApiCredential, request.auth)


class ApiUserKeyAuthentication(BaseAuthentication):
    """The User API's header pair ``apiuser`` and ``apikey``; ``request.auth`` is the credential."""

    def authenticate(self, request: Request) -> tuple[Any, ApiCredential]:
        api_user = request.headers.get("apiuser", "").strip()
        key = request.headers.get("apikey", "").strip()
        credential = (
            api_credential_for_key(key=key, api_user=api_user)
            if api_user and key
            else None
        )
        if credential is None:
            key_refused(request, InvalidApiKey())
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
            key_refused(request, Forbidden(self.USER_BLANK))
        if not key:
            key_refused(request, Forbidden(self.KEY_BLANK))
        credential = api_credential_for_key(key=key, api_user=api_user)
        if credential is None:
            key_refused(request, Forbidden(self.NO_ACCOUNT))
        return AnonymousUser(), credential


class ScoredDataKeyAuthentication(BaseAuthentication):
    """The scored data API's ``apikey`` (or ``apiKey``) query parameter: an account's own
    scored-data key; ``request.auth`` is the account."""

    def authenticate(self, request: Request) -> tuple[Any, Account]:
        params = request.query_params
        key = str(params.get("apikey") or params.get("apiKey") or "").strip()
        account = account_for_scored_data_key(key=key) if key else None
        if account is None:
            key_refused(request, InvalidApiKey())
        return AnonymousUser(), account

    def authenticate_header(self, request: Request) -> str:
        return "apikey"


def _form_or_header(request: Request, name: str) -> str:
    value = request.data.get(name) if hasattr(request.data, "get") else None
    if not isinstance(value, str) or not value.strip():
        value = request.META.get(f"HTTP_{name.upper()}", "")
    return value.strip()
