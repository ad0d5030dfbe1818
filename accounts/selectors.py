"""Reads that authenticate callers: every lookup is by public prefix, then a constant-time hash check."""

from __future__ import annotations

from django.db.models import Exists, OuterRef, Q
from django.utils import timezone

from accounts.keys import key_prefix, matches
from accounts.models import Account, ApiCredential, ApiKey, ScoredDataKey


def api_credential_for_key(
    *, key: str, api_user: str | None = None
) -> ApiCredential | None:
    """The credential a key belongs to, if it is usable (and, when given, its ``apiuser`` matches)."""
    prefix = key_prefix(key)
    if prefix is None:
        return None
    record = (
        ApiKey.objects.select_related("credential__organization")
        .filter(prefix=prefix)
        .first()
    )
    if (
        record is None
        or not record.is_usable(timezone.now())
        or not matches(key, record.key_hash)
    ):
        return None
    if api_user is not None and record.credential.api_user != api_user:
        return None
    return record.credential


def account_for_scored_data_key(*, key: str) -> Account | None:
    """The account whose scored-data key this is, if it is usable."""
    prefix = key_prefix(key)
    if prefix is None:
        return None
    record = (
        ScoredDataKey.objects.select_related("account").filter(prefix=prefix).first()
    )
    if (
        record is None
        or not record.is_usable(timezone.now())
        or not matches(key, record.key_hash)
    ):
        return None
    return record.account


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
