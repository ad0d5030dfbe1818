"""Signing secrets and signatures, as Standard Webhooks (and Svix) define them.

A secret is ``whsec_`` and the base64 of 32 random bytes; those bytes are the HMAC key.
A delivery carries ``webhook-id`` (the event id), ``webhook-timestamp`` (Unix seconds) and
``webhook-signature``: ``v1,<base64 HMAC-SHA256 of "{id}.{timestamp}.{body}">``, one per
valid secret, space-separated (two while a rotated-out secret is still in its overlap).

Secrets are stored encrypted (Fernet) under keys derived from ``WEBHOOK_SECRET_KEYS``
(default: ``SECRET_KEY``); the first key encrypts, any of them decrypts.
"""

from __future__ import annotations

import base64
import hashlib
import hmac
import secrets
from collections.abc import Mapping

from cryptography.fernet import Fernet, MultiFernet
from django.conf import settings

PREFIX = "whsec_"


def secret_new() -> str:
    """A fresh signing secret."""
    return PREFIX + base64.b64encode(secrets.token_bytes(32)).decode()


def secret_prefix(secret: str) -> str:
    """The public part support sees in lists, to tell secrets apart."""
    return secret[: len(PREFIX) + 6]


def _fernet() -> MultiFernet:
    keys = settings.WEBHOOK_SECRET_KEYS or [settings.SECRET_KEY]
    return MultiFernet(
        [
            Fernet(base64.urlsafe_b64encode(hashlib.sha256(key.encode()).digest()))
            for key in keys
        ]
    )


def secret_encrypt(secret: str) -> str:
    return _fernet().encrypt(secret.encode()).decode()


def secret_decrypt(token: str) -> str:
    return _fernet().decrypt(token.encode()).decode()


def signature(secret: str, *, event_id: str, timestamp: int, body: bytes) -> str:
    """``v1,<base64 signature>`` of one delivery under one secret."""
    key = base64.b64decode(secret.removeprefix(PREFIX))
    signed = f"{event_id}.{timestamp}.".encode() + body
    digest = hmac.new(key, signed, hashlib.sha256).digest()
    return "v1," + base64.b64encode(digest).decode()


def signed_headers(
    secrets_: list[str], *, event_id: str, timestamp: int, body: bytes
) -> dict[str, str]:
    """The headers that let a receiver check a delivery is ours, untouched and fresh."""
    return {
        "webhook-id": event_id,
        "webhook-timestamp": str(timestamp),
        "webhook-signature": " ".join(
            signature(s, event_id=event_id, timestamp=timestamp, body=body)
            for s in secrets_
        ),
    }


TOLERANCE_SECONDS = 5 * 60  # a receiver refuses older timestamps (a replayed delivery)


def delivery_verify(
    secret: str, *, headers: Mapping[str, str], body: bytes, now: float
) -> bool:
    """Whether a delivery's headers (lower-case names) carry a fresh signature of ``body``
    under ``secret``: what the integrator's guide tells receivers to check."""
    try:
        event_id = headers["webhook-id"]
        timestamp = int(headers["webhook-timestamp"])
        offered = headers["webhook-signature"].split()
    except (KeyError, ValueError):
        return False
    if abs(now - timestamp) > TOLERANCE_SECONDS:
        return False
    expected = signature(secret, event_id=event_id, timestamp=timestamp, body=body)
    return any(hmac.compare_digest(expected, candidate) for candidate in offered)
