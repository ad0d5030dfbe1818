"""API key material: generation, hashing and constant-time checks. Keys are never stored."""

from __future__ import annotations

import hashlib
import hmac
import secrets
import string

_ALPHABET = string.ascii_lowercase + string.digits


def new_key(kind: str) -> tuple[str, str]:
    """A fresh ``(key, prefix)``: ``<kind>_<8 chars>_<40 hex>``; the prefix is public."""
    prefix = f"{kind}_" + "".join(secrets.choice(_ALPHABET) for _ in range(8))
    return f"{prefix}_{secrets.token_hex(20)}", prefix


def key_prefix(key: str) -> str | None:
    """The public prefix of a well-formed key, else None. Keys are printable ASCII: one
    with anything else (a NUL, which PostgreSQL cannot hold) is never looked up."""
    parts = key.split("_")
    if (
        len(parts) != 3
        or not all(parts)
        or len(key) > 100
        or not (key.isascii() and key.isprintable())
    ):
        return None
    return f"{parts[0]}_{parts[1]}"


def hash_key(key: str) -> str:
    return hashlib.sha256(key.encode()).hexdigest()


def matches(key: str, key_hash: str) -> bool:
    return hmac.compare_digest(hash_key(key).encode(), key_hash.encode())
