"""Every write of the consent ledger: a consent given, a revocation, a re-consent. The
apps above record what happened to them here (lead intake, click-to-call, texting,
the admin); rows are only ever added."""

from __future__ import annotations

from collections.abc import Iterable
from datetime import datetime

from django.contrib.auth.base_user import AbstractBaseUser
from django.utils import timezone

from accounts.models import Account
from consent.models import ConsentEvent, Kind, Source
from consent.signals import consent_recorded


def consent_give(
    *,
    account: Account,
    source: str,
    at: datetime,
    phone: str = "",
    email: str = "",
    calls: bool = True,
    texts: bool = True,
    emails: bool = False,
    detail: str = "",
    reference: str = "",
    by: AbstractBaseUser | None = None,
) -> ConsentEvent | None:
    """Record the person's consent to the account's calls or texts (a lead submitted, a
    click-to-call request, support's entry). Nothing is recorded without an address."""
    if not (phone or email):
        return None
    (event,) = _record(
        accounts=[account],
        kind=Kind.CONSENT,
        source=source,
        at=at,
        phone=phone,
        email=email.strip().lower(),
        calls=calls,
        texts=texts,
        emails=emails,
        detail=detail,
        reference=reference,
        by=by,
    )
    return event


def consent_revoke(
    *,
    accounts: Iterable[Account],
    source: str,
    phone: str = "",
    calls: bool,
    texts: bool,
    email: str = "",
    emails: bool = False,
    at: datetime | None = None,
    detail: str = "",
    reference: str = "",
    by: AbstractBaseUser | None = None,
) -> list[ConsentEvent]:
    """Record that the person at ``phone`` (or ``email``) withdrew consent to the
    accounts' calls, texts or e-mails (a manager's mark for one account; a text opt-out
    for every account texting from the number; an e-mail's opt-out link for its
    account). The accounts are of one organization: a revocation never crosses."""
    return _record(
        accounts=accounts,
        kind=Kind.REVOCATION,
        source=source,
        at=at or timezone.now(),
        phone=phone,
        email=email.strip().lower(),
        calls=calls,
        texts=texts,
        emails=emails,
        detail=detail,
        reference=reference,
        by=by,
    )


def consent_texts_renew(
    *,
    accounts: Iterable[Account],
    phone: str,
    at: datetime,
    detail: str = "",
    reference: str = "",
) -> list[ConsentEvent]:
    """Record the person's START: consent to the accounts' texts again (it lifts a text
    opt-out, and with it the stop on calls a text opt-out holds)."""
    return _record(
        accounts=accounts,
        kind=Kind.RECONSENT,
        source=Source.TEXT,
        at=at,
        phone=phone,
        calls=False,
        texts=True,
        detail=detail,
        reference=reference,
    )


def _record(
    *,
    accounts: Iterable[Account],
    kind: str,
    source: str,
    at: datetime,
    phone: str = "",
    email: str = "",
    calls: bool,
    texts: bool,
    emails: bool = False,
    detail: str = "",
    reference: str = "",
    by: AbstractBaseUser | None = None,
) -> list[ConsentEvent]:
    accounts = sorted(accounts, key=lambda account: account.pk)  # rows in a fixed order
    if len({account.organization_id for account in accounts}) > 1:
        raise ValueError("A consent ledger entry never crosses organizations.")
    rows = [
        ConsentEvent(
            organization_id=account.organization_id,
            account=account,
            phone=phone,
            email=email[:254],
            kind=kind,
            calls=calls,
            texts=texts,
            emails=emails,
            source=source,
            at=at,
            by_id=by.pk if by else None,
            by_name=(str(by) if by else "")[:200],
            # PostgreSQL text cannot hold NUL (a lead's text may); the copy shows where.
            detail=detail.replace("\x00", "\ufffd"),
            reference=reference[:64],
        )
        for account in accounts
    ]
    for row in rows:
        # Choices and lengths; the database holds the constraints.
        row.clean_fields(exclude=["account", "organization", "by"])
    return _recorded(ConsentEvent.objects.bulk_create(rows))


def consent_revoke_many(
    *,
    account: Account,
    phones: Iterable[str],
    source: str,
    detail: str = "",
    reference: str = "",
    by: AbstractBaseUser | None = None,
) -> list[ConsentEvent]:
    """Record a revocation of the account's calls for each of ``phones`` (E.164), in one
    statement: a do-not-call list. All of them or, on an error, none."""
    now = timezone.now()
    rows = [
        ConsentEvent(
            organization_id=account.organization_id,
            account=account,
            phone=phone,
            kind=Kind.REVOCATION,
            calls=True,
            texts=False,
            source=source,
            at=now,
            by_id=by.pk if by else None,
            by_name=(str(by) if by else "")[:200],
            detail=detail.replace("\x00", "\ufffd"),
            reference=reference[:64],
        )
        for phone in dict.fromkeys(phones)
    ]
    return _recorded(ConsentEvent.objects.bulk_create(rows, batch_size=1000))


def _recorded(events: list[ConsentEvent]) -> list[ConsentEvent]:
    """Tell the apps above (their webhook events), in the transaction of the write."""
    if events:
        consent_recorded.send(sender=ConsentEvent, events=events)
    return events
