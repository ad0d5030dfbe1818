"""Writes for organizations, accounts and credentials. Keys are returned once, never stored."""

from __future__ import annotations

import secrets
from collections.abc import Iterable
from dataclasses import dataclass
from datetime import timedelta
from typing import Any

from django.conf import settings
from django.core.exceptions import ValidationError
from django.db import connection, transaction
from django.db.models import Q
from django.utils import timezone
from django.utils.text import slugify

from accounts.keys import hash_key, new_key
from accounts.models import (
    Account,
    AccountScheduleDay,
    ApiCredential,
    ApiKey,
    HashedKey,
    Organization,
    ScoredDataKey,
)
from accounts.selectors import credentials_changed, number_holders
from accounts.signals import account_created, duty_changed
from core.locks import lock_key

# What an account's agents' duty depends on (calls.routing reads them), with its schedule
# days: the hours they keep when they have none of their own.
DUTY_FIELDS = ("timezone", "schedule_active")
API_KEY_KIND = "lc"
SCORED_DATA_KEY_KIND = "sd"


@dataclass(frozen=True)
class IssuedKey:
    """A key as issued: ``key`` is the secret, shown this once."""

    record: HashedKey
    key: str


def _issue(model: type[HashedKey], kind: str, **owner: object) -> IssuedKey:
    key, prefix = new_key(kind)
    record = model.objects.create(prefix=prefix, key_hash=hash_key(key), **owner)
    return IssuedKey(record=record, key=key)


def _retire(keys: object, grace: timedelta) -> None:
    """Let the owner's current keys live ``grace`` longer, then stop."""
    ends = timezone.now() + grace
    keys.usable().filter(expires_at__isnull=True).update(expires_at=ends)  # type: ignore[attr-defined]
    keys.usable().filter(expires_at__gt=ends).update(expires_at=ends)  # type: ignore[attr-defined]


class ForeignAccountError(ValueError):
    """Narrowing a credential to accounts of another organization; ``names`` are those accounts."""

    def __init__(self, names: list[str]) -> None:
        super().__init__(
            "A credential can only be narrowed to accounts of its own organization."
        )
        self.names = names


def api_credential_accounts_check(
    *, organization: Organization, accounts: list[Account]
) -> None:
    """Refuse accounts of another organization: a credential never reaches past its own."""
    foreign = [
        account.name
        for account in accounts
        if account.organization_id != organization.pk
    ]
    if foreign:
        raise ForeignAccountError(foreign)


@transaction.atomic
def api_credential_issue(
    *,
    organization: Organization,
    name: str = "",
    api_user: str = "",
    accounts: list[Account] | None = None,
) -> tuple[ApiCredential, str]:
    """Create a credential with its first key; returns the key, which is shown only now."""
    api_credential_accounts_check(organization=organization, accounts=accounts or [])
    api_user = api_user or f"{slugify(organization.name)[:40]}-{secrets.token_hex(3)}"
    credential = ApiCredential.objects.create(
        organization=organization, api_user=api_user, name=name
    )
    if accounts:
        credential.accounts.set(accounts)
    return credential, _issue(ApiKey, API_KEY_KIND, credential=credential).key


@transaction.atomic
def api_credential_update(
    *, credential: ApiCredential, name: str, accounts: list[Account]
) -> ApiCredential:
    """Rename a credential and narrow it (no accounts: every account of its organization)."""
    api_credential_accounts_check(
        organization=credential.organization, accounts=accounts
    )
    credential.name = name
    credential.save(update_fields=["name"])
    credential.accounts.set(accounts)
    return credential


@transaction.atomic
def api_key_rotate(*, credential: ApiCredential, grace: timedelta | None = None) -> str:
    """Issue a new key; the old ones keep working for the grace period (default a setting)."""
    _retire(
        credential.keys, settings.API_KEY_ROTATION_GRACE if grace is None else grace
    )
    credentials_changed()
    return _issue(ApiKey, API_KEY_KIND, credential=credential).key


def api_credential_revoke(*, credential: ApiCredential) -> int:
    """Stop every key of the credential now; returns how many were still usable."""
    stopped = credential.keys.usable().update(revoked_at=timezone.now())
    credentials_changed()
    return stopped


@transaction.atomic
def scored_data_key_issue(*, account: Account, grace: timedelta | None = None) -> str:
    """Issue the account's scored-data key; an earlier one lives on for the grace period."""
    _retire(
        account.scored_data_keys,
        settings.API_KEY_ROTATION_GRACE if grace is None else grace,
    )
    return _issue(ScoredDataKey, SCORED_DATA_KEY_KIND, account=account).key


def scored_data_key_revoke(*, account: Account) -> int:
    """Stop every scored-data key of the account now."""
    return account.scored_data_keys.usable().update(revoked_at=timezone.now())


def api_keys_prune(*, older_than: timedelta = timedelta(days=90)) -> int:
    """Delete keys that stopped working long ago; they can never be used again."""
    cutoff = timezone.now() - older_than
    deleted = 0
    for model in (ApiKey, ScoredDataKey):
        stale = model.objects.filter(
            Q(revoked_at__lt=cutoff) | Q(expires_at__lt=cutoff)
        )
        # Each deletion tells the key cache itself (accounts.apps).
        deleted += stale.delete()[0]
    return deleted


class NumberTakenError(ValidationError):
    """A number that accounts of another organization call or text from; ``holders`` are
    those accounts (for support's eyes only: they belong to another tenant)."""

    def __init__(self, number: str, holders: list[Account]) -> None:
        super().__init__(
            f"{number} is already a number of another organization. A number an account "
            "calls or texts from belongs to one organization, so that a lead's reply or "
            "STOP reaches it and no other.",
            code="number_taken",
        )
        self.number = number
        self.holders = holders


def account_numbers_check(*, organization_id: int, numbers: Iterable[str]) -> None:
    """Refuse a number (caller ID, sending number or Messaging Service) that an account of
    another organization calls or texts from: each number belongs to one organization. In
    a transaction, the number stays locked until it ends, so two organizations cannot take
    one number at the same moment."""
    for number in sorted({number for number in numbers if number}):
        if connection.vendor == "postgresql" and connection.in_atomic_block:
            with connection.cursor() as cursor:
                cursor.execute(
                    "SELECT pg_advisory_xact_lock(%s)", [lock_key(f"number:{number}")]
                )
        foreign = [
            holder
            for holder in number_holders(number=number)
            if holder.organization_id != organization_id
        ]
        if foreign:
            raise NumberTakenError(number, foreign)


@transaction.atomic
def account_create(*, account: Account) -> Account:
    """Save a new account (built, unsaved, by the admin's form or a caller); the apps above
    are told (``account_created``), in this transaction, to set it up. A caller ID another
    organization calls or texts from is refused (``NumberTakenError``)."""
    account_numbers_check(
        organization_id=account.organization_id, numbers=[account.caller_id]
    )
    account.save(force_insert=True)
    account_created.send(sender=Account, account=account)
    return account


@transaction.atomic
def account_update(
    *,
    account: Account,
    data: dict[str, Any],
    schedule_save: Iterable[AccountScheduleDay] = (),
    schedule_delete: Iterable[AccountScheduleDay] = (),
) -> Account:
    """Change an account's fields (``data``, by model name) and schedule days (added or
    changed ones saved, others deleted). When its hours changed (timezone, schedule switch
    or days) the call pipeline is told, as agents may have come on duty (``duty_changed``).
    A caller ID another organization calls or texts from is refused (``NumberTakenError``)."""
    stored = Account.objects.select_for_update().get(pk=account.pk)
    if data.get("caller_id"):
        account_numbers_check(
            organization_id=stored.organization_id, numbers=[data["caller_id"]]
        )
    hours = [getattr(stored, name) for name in DUTY_FIELDS]
    for name, value in data.items():
        setattr(account, name, value)
    if data:
        account.save(update_fields=list(data))
    days_changed = False
    for day in schedule_delete:
        day.delete()
        days_changed = True
    for day in schedule_save:
        day.account = account
        day.save()
        days_changed = True
    if days_changed or [getattr(account, name) for name in DUTY_FIELDS] != hours:
        duty_changed.send(sender=Account, account_ids=[account.pk])
    return account
