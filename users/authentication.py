"""The User API's authentication: ``accounts``' header pair, with the request counted
against its credential's rate limit in the round trip that reads the cache's versions.

A request makes two round trips to Redis otherwise: the versions, at authentication's
first read, and the rate-limit counter, in the throttle. When this process already holds
the key's record (``api_keys.peek``) and the request's key and ``apiuser`` pass every
check of it, the counter is sent along with the versions. Only a request bearing the
credential's own key is counted so; should the versions then say the record has changed
and the request be refused, or authenticate another credential, the hit is taken back.
A refused request is never counted against a credential, as before.
"""

from __future__ import annotations

from typing import Any

from django.contrib.auth.models import AnonymousUser
from django.utils import timezone
from rest_framework.request import Request

from accounts.authentication import ApiUserKeyAuthentication, key_refused
from accounts.keys import key_prefix, matches
from accounts.models import ApiCredential
from accounts.selectors import api_credential_for_key, api_keys
from core.api import InvalidApiKey
from core.throttling import credential_rate_key, rate_period, unhit_or_log, window
from core.versioned import scope_read_counting


class UserApiKeyAuthentication(ApiUserKeyAuthentication):
    """``ApiUserKeyAuthentication``; the view's ``throttle_scope`` counted with the
    versions' read when this process knows the key (``request.rate_counted``)."""

    def authenticate(self, request: Request) -> tuple[Any, ApiCredential]:
        # The headers as ``ApiUserKeyAuthentication`` reads them, from META: nothing on
        # this path builds ``request.headers`` then.
        meta = request.META
        api_user = meta.get("HTTP_APIUSER", "").strip()
        key = meta.get("HTTP_APIKEY", "").strip()
        counted = _count_known_key(request, api_user, key)
        try:
            credential = (
                api_credential_for_key(key=key, api_user=api_user)
                if api_user and key
                else None
            )
            if credential is None:
                key_refused(request, InvalidApiKey())
        except BaseException:
            if counted is not None:
                unhit_or_log(counted[0])
            raise
        if counted is not None:
            if credential.pk == counted[2]:
                request.rate_counted = counted[:2]  # type: ignore[attr-defined]
            else:
                unhit_or_log(counted[0])
        return AnonymousUser(), credential


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
