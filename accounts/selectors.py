"""Reads that authenticate callers: every lookup is by public prefix, then a constant-time hash check.

A key that authenticates also has its ``last_used_at`` refreshed, at most once a minute.

An API key's record, its credential, organization and reach (``narrowed``) are kept in the
shared cache (``core.versioned``), so a request of a known key reads no table to
authenticate; the services that change keys or reach make every entry stale at once
(``credentials_changed``): a revoked key never works a moment longer.
"""

from __future__ import annotations

from collections.abc import Iterable
from datetime import datetime, timedelta
from typing import cast

from django.contrib.postgres.expressions import ArraySubquery
from django.db import connection
from django.db.models import Exists, OuterRef, Q
from django.utils import timezone

from accounts.keys import key_prefix, matches
from accounts.models import (
    Account,
    ApiCredential,
    ApiKey,
    HashedKey,
    Organization,
    ScoredDataKey,
)
from accounts.signals import number_used
from core.validation import digits_only
from core.versioned import VersionedCache

# API keys with their credential, organization and reach, by prefix.
api_keys = VersionedCache("credentials")

# "Last used" is kept to this resolution, so most requests write nothing.
LAST_USED_RESOLUTION = timedelta(seconds=60)


def api_credential_for_key(
    *, key: str, api_user: str | None = None
) -> ApiCredential | None:
    """The credential a key belongs to, if it is usable (and, when given, its ``apiuser``
    matches), with its reach in ``credential.narrowed`` (see ``credential_narrowed``)."""
    prefix = key_prefix(key)
    if prefix is None:
        return None
    record, version = api_keys.get(prefix, lambda: _api_key_read(prefix))
    now = timezone.now()
    if record is None or not record.is_usable(now) or not matches(key, record.key_hash):
        return None
    if api_user is not None and record.credential.api_user != api_user:
        return None
    if _mark_used(record, now):
        # The cached copy learns of the use too (under the version read before: a change
        # committed meanwhile still makes it stale).
        api_keys.put(prefix, record, version)
    return record.credential


def credentials_changed() -> None:
    """Make every cached credential stale: services call it after changing keys or a
    credential's reach."""
    api_keys.changed()


def credential_narrowed(credential: ApiCredential) -> tuple[int, ...] | None:
    """The accounts a narrowed credential reaches, or None for every account of its
    organization: as authentication loaded it, else read now."""
    if not hasattr(credential, "narrowed"):
        through = ApiCredential.accounts.through.objects.filter(
            apicredential_id=credential.pk
        )
        ids = list(through.values_list("account_id", flat=True))
        credential.narrowed = tuple(sorted(ids)) or None  # type: ignore[attr-defined]
    return credential.narrowed  # type: ignore[attr-defined,no-any-return]


def _api_key_read(prefix: str) -> ApiKey | None:
    """The key of this prefix with its credential, organization and reach."""
    keys = ApiKey.objects.select_related("credential__organization").filter(
        prefix=prefix
    )
    if connection.vendor == "postgresql":
        through = ApiCredential.accounts.through.objects.filter(
            apicredential_id=OuterRef("credential_id")
        ).order_by("account_id")
        keys = keys.annotate(reach=ArraySubquery(through.values("account_id")))
    record = keys.first()
    if record is None:
        return None
    if hasattr(record, "reach"):  # read with the key (PostgreSQL)
        record.credential.narrowed = tuple(record.reach) or None  # type: ignore[attr-defined]
    else:
        credential_narrowed(record.credential)  # a query of its own
    return record


def account_for_scored_data_key(*, key: str) -> Account | None:
    """The account whose scored-data key this is, if it is usable."""
    prefix = key_prefix(key)
    if prefix is None:
        return None
    record = (
        ScoredDataKey.objects.select_related("account").filter(prefix=prefix).first()
    )
    now = timezone.now()
    if record is None or not record.is_usable(now) or not matches(key, record.key_hash):
        return None
    _mark_used(record, now)
    return record.account


def _mark_used(record: HashedKey, now: datetime) -> bool:
    """Refresh ``last_used_at`` when the loaded value is unset or a minute old; True when
    it was. The UPDATE repeats the condition, so concurrent requests of one key write
    once between them."""
    stale = now - LAST_USED_RESOLUTION
    if record.last_used_at is not None and record.last_used_at >= stale:
        return False
    type(record)._default_manager.filter(pk=record.pk).filter(
        Q(last_used_at__isnull=True) | Q(last_used_at__lt=stale)
    ).update(last_used_at=now)
    record.last_used_at = now
    return True


def credential_reaches(
    credential: ApiCredential, *, account_id_field: str = "account_id"
) -> Q:
    """A filter for rows whose account the credential reaches (its narrowed list, or any
    account when it has none): one query with the rows instead of a lookup first."""
    narrowed = ApiCredential.accounts.through.objects.filter(
        apicredential_id=credential.pk
    )
    return Q(~Exists(narrowed)) | Q(
        Exists(narrowed.filter(account_id=OuterRef(account_id_field)))
    )


def credential_account_ids(*, credential: ApiCredential) -> set[int]:
    """Accounts a credential reaches: its narrowed list, else every account of its organization."""
    reached = Account.objects.filter(
        credential_reaches(credential, account_id_field="pk")
    )
    return set(
        reached.filter(organization_id=credential.organization_id).values_list(
            "id", flat=True
        )
    )


def organization_by_ref(ref: str) -> Organization | None:
    """The organization a command line names: by id when the reference is a number, else
    by its exact name."""
    ref = ref.strip()
    found = (
        Organization.objects.filter(pk=int(ref)).first() if digits_only(ref) else None
    )
    return found or Organization.objects.filter(name=ref).first()


def keys_recently_used(*, limit: int) -> list[ApiKey | ScoredDataKey]:
    """The API and scored-data keys used last, newest use first, at most ``limit``, with
    their owner and organization loaded (support's overview)."""
    used = {"last_used_at__isnull": False}
    keys: list[ApiKey | ScoredDataKey] = [
        *ApiKey.objects.filter(**used)
        .select_related("credential__organization")
        .order_by("-last_used_at")[:limit],
        *ScoredDataKey.objects.filter(**used)
        .select_related("account__organization")
        .order_by("-last_used_at")[:limit],
    ]
    keys.sort(
        key=lambda key: key.last_used_at.timestamp() if key.last_used_at else 0.0,
        reverse=True,
    )
    return keys[:limit]


def number_holders(*, number: str) -> list[Account]:
    """Every account that calls or texts from ``number``: by caller ID here, by what the
    apps above answer to ``number_used`` (texting's sending numbers), with organizations,
    ordered by organization and name."""
    if not number:
        return []
    ids: set[int] = set()
    for _receiver, answer in number_used.send(sender=Account, number=number):
        ids.update(cast("Iterable[int]", answer))
    return list(
        Account.objects.filter(Q(caller_id=number) | Q(pk__in=ids))
        .select_related("organization")
        .order_by("organization__name", "name", "pk")
    )
