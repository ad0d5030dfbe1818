"""DRF authentication for the interfaces' credential styles. Keys never reach logs or messages.

Every refusal goes through ``key_refused``: past ``AUTH_FAILURE_LIMIT`` failures from one
client address it becomes a 429 with ``Retry-After``, whichever API was tried.

The ``apiuser`` and ``apikey`` pair (the User API's headers, lead intake's form fields)
counts the request against its credential's rate limit in the round trip that reads the
cache's versions (``credential_counted``). Otherwise a request makes two round trips to
Redis: the versions, at authentication's first read, and the rate-limit counter, in the
throttle. When this process already holds the key's record (``api_keys.peek``) and the
request's key and ``apiuser`` pass every check of it, the counter is sent along with the
versions. Only a request bearing the credential's own key is counted so; should the
versions then say the record has changed and the request be refused, or authenticate
another credential, the hit is taken back. A refused request is never counted against a
credential.
"""

from __future__ import annotations

from typing import Any, NoReturn, cast

from django.contrib.auth.models import AnonymousUser
from django.utils import timezone
from rest_framework.authentication import BaseAuthentication
from rest_framework.request import Request
from rest_framework.views import APIView

from accounts.keys import key_prefix, matches
from accounts.models import Account, ApiCredential
from accounts.selectors import (
    account_for_scored_data_key,
    api_credential_for_key,
    api_keys,
)
from core.api import (
    ENVELOPE,
    ApiError,
    ContentNegotiation,
    Forbidden,
    InvalidApiKey,
    TooManyFailures,
)
from core.throttling import (
    CredentialRateThrottle,
    auth_failure,
    credential_rate_key,
    rate_period,
    unhit_or_log,
    window,
)
from core.versioned import scope_read_counting


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
        # The headers read from META: nothing on this path builds ``request.headers``.
        meta = request.META
        api_user = meta.get("HTTP_APIUSER", "").strip()
        key = meta.get("HTTP_APIKEY", "").strip()
        return AnonymousUser(), credential_counted(
            request, api_user, key, InvalidApiKey()
        )

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
        return AnonymousUser(), credential_counted(
            request, api_user, key, Forbidden(self.NO_ACCOUNT)
        )


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


class AccountKeyApi(APIView):
    """An account's own small interface under its scored-data key (appointments,
    consent): JSON in the house's error envelope, counted per key under the subclass's
    ``throttle_scope``; ``account(request)`` is the key's account."""

    authentication_classes = [ScoredDataKeyAuthentication]
    content_negotiation_class = ContentNegotiation
    throttle_classes = [CredentialRateThrottle]
    error_shape = ENVELOPE

    def account(self, request: Request) -> Account:
        return cast(Account, request.auth)  # ScoredDataKeyAuthentication's


def credential_counted(
    request: Request, api_user: str, key: str, refusal: ApiError
) -> ApiCredential:
    """The credential of the ``apiuser`` and ``apikey`` pair, else ``key_refused`` with
    ``refusal``; the view's ``throttle_scope`` counted with the versions' read when this
    process knows the key (``request.rate_counted``, which ``CredentialRateThrottle``
    uses)."""
    counted = _count_known_key(request, api_user, key)
    try:
        credential = (
            api_credential_for_key(key=key, api_user=api_user)
            if api_user and key
            else None
        )
        if credential is None:
            key_refused(request, refusal)
    except BaseException:
        if counted is not None:
            unhit_or_log(counted[0])
        raise
    if counted is not None:
        if credential.pk == counted[2]:
            request.rate_counted = counted[:2]  # type: ignore[attr-defined]
        else:
            unhit_or_log(counted[0])
    return credential


def _count_known_key(
    request: Request, api_user: str, key: str
) -> tuple[str, int, int] | None:
    """The counter's key, its count and the credential's id, when the request was
    counted with the versions' read; None when it was not (nothing counted)."""
    view = (request.parser_context or {}).get("view")
    scope = getattr(view, "throttle_scope", None)
    if scope is None:
        return None
    prefix = key_prefix(key) if api_user and key else None
    record = api_keys.peek(prefix) if prefix is not None else None
    if (
        record is None
        or record.credential.api_user != api_user
        or not record.is_usable(timezone.now())
        or not matches(key, record.key_hash)
    ):
        return None
    period = rate_period(scope)
    number, _ = window(period)
    counter = credential_rate_key(scope, record.credential, number)
    count = scope_read_counting(counter, period)
    if count is None:
        return None
    return counter, count, record.credential.pk


def _form_or_header(request: Request, name: str) -> str:
    value = request.data.get(name) if hasattr(request.data, "get") else None
    if not isinstance(value, str) or not value.strip():
        value = request.META.get(f"HTTP_{name.upper()}", "")
    return value.strip()
