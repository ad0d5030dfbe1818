"""Reads of e-mail to leads, each scoped to one account."""

from __future__ import annotations

from datetime import timedelta

from django.utils import timezone

from accounts.models import Account
from core.versioned import VersionedCache
from emails.models import EmailSettings, EmailStatus, LeadEmail

LIMIT_WINDOW = timedelta(days=30)
# Each account's e-mail settings, read for every lead that arrives: kept in the shared
# cache, stale whenever settings are saved or deleted (emails.apps), as texting's are.
settings_cache = VersionedCache("email-settings")


def email_settings_of(account: Account) -> EmailSettings | None:
    """The account's e-mail settings, or None (e-mail to leads off): from the shared
    cache, so asking for every lead costs no query."""
    # A tuple, so an account without settings is cached as such.
    (config,), _ = settings_cache.get(
        f"account:{account.pk}",
        lambda: (EmailSettings.objects.filter(account_id=account.pk).first(),),
    )
    return config


def automatic_emails_sent(*, account_id: int, email: str) -> int:
    """The account's e-mails to the address in the limit's window (those not sent, for
    an opt-out or a setting, do not count)."""
    return (
        LeadEmail.objects.filter(
            account_id=account_id,
            to_email=email,
            created_at__gte=timezone.now() - LIMIT_WINDOW,
        )
        .exclude(status=EmailStatus.CANCELED)
        .count()
    )
