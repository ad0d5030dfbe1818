"""The opt-out link every e-mail to a lead carries: a signed token naming the account and
the address (``django.core.signing``, salted for this use alone), so the link works for
that address at that account only and cannot be made for another. It does not expire:
a lead may opt out from an old e-mail."""

from __future__ import annotations

from dataclasses import dataclass

from django.conf import settings
from django.core import signing
from django.urls import reverse

SALT = "emails.opt-out"


@dataclass(frozen=True)
class OptOut:
    account_id: int
    email: str


def opt_out_token(*, account_id: int, email: str) -> str:
    """The same token each time for one address at one account (no timestamp): the link
    in the body and the one in ``List-Unsubscribe`` are one link."""
    return _signer().sign_object({"a": account_id, "e": email}, compress=True)


def _signer() -> signing.Signer:
    return signing.Signer(salt=SALT)


def opt_out_read(token: str) -> OptOut | None:
    """What a token says, or None for a token not ours (made up, changed, cut short)."""
    try:
        data = _signer().unsign_object(token)
    except signing.BadSignature:
        return None
    if not (isinstance(data, dict) and isinstance(data.get("a"), int)):
        return None
    email = data.get("e")
    return OptOut(account_id=data["a"], email=email) if isinstance(email, str) else None


def opt_out_url(*, account_id: int, email: str) -> str:
    """The page's absolute address (``PUBLIC_BASE_URL``), for the e-mail and its
    ``List-Unsubscribe`` header."""
    token = opt_out_token(account_id=account_id, email=email)
    return settings.PUBLIC_BASE_URL + reverse("emails:opt-out", args=[token])
