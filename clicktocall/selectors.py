"""Reads for click-to-call, scoped to the caller: accounts its key reaches, agents of one account."""

from __future__ import annotations

import re

from django.db.models import QuerySet

from accounts.models import Account, ApiCredential
from accounts.selectors import credential_reaches
from users.models import User
from users.selectors import format_code

_DIGITS = re.compile(r"[0-9]+")
_MAX_ID = 2**63 - 1  # BigAutoField
_MAX_CODE_DIGITS = 10  # Membership.code


def account_reachable(*, credential: ApiCredential, account_id: int) -> Account | None:
    """The active account with this id, if the credential reaches it."""
    return Account.objects.filter(
        credential_reaches(credential, account_id_field="pk"),
        pk=account_id,
        organization_id=credential.organization_id,
        is_active=True,
    ).first()


def _agents(account: Account) -> QuerySet[User]:
    return User.objects.filter(accounts=account, is_active=True).order_by("pk")


def agent_by_id_or_code(*, account: Account, user_id: str) -> User | None:
    """An active user of the account whose id is ``user_id``, failing that whose code in the
    account's organization is. Leading zeros mark a code: "0012" is never user 12."""
    if not _DIGITS.fullmatch(user_id):
        return None
    number = int(user_id)
    if str(number) == user_id and number <= _MAX_ID:
        agent = _agents(account).filter(pk=number).first()
        if agent is not None:
            return agent
    if len(str(number)) > _MAX_CODE_DIGITS:
        return None
    return (
        _agents(account)
        .filter(
            memberships__organization_id=account.organization_id,
            memberships__code__in={format_code(number), user_id},
        )
        .first()
    )


def agent_by_phone(*, account: Account, phone_number: str) -> User | None:
    """The (oldest) active user of the account with this E.164 phone number."""
    return _agents(account).filter(phone_number=phone_number).first()
