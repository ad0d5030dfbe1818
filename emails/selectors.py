"""Reads of e-mail to leads, each scoped to one account."""

from __future__ import annotations

from datetime import timedelta

from django.utils import timezone

from accounts.models import Account
from emails.models import EmailSettings, EmailStatus, LeadEmail

LIMIT_WINDOW = timedelta(days=30)


def email_settings_of(account: Account) -> EmailSettings | None:
    """The account's e-mail settings, or None (e-mail to leads off)."""
    return EmailSettings.objects.filter(account_id=account.pk).first()


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
