"""The consent ledger: per account, each consent a person gave to be called or texted
(where it came from), each revocation and each re-consent, with who and when. Rows are
never changed: what holds now is read from the latest rows (``consent.selectors``)."""

from __future__ import annotations

from datetime import UTC

from django.conf import settings
from django.db import models
from django.db.models import Q

from accounts.models import Account, Organization


class Kind(models.TextChoices):
    CONSENT = "consent", "Consent"
    REVOCATION = "revocation", "Revocation"
    # The lead's own START after a text opt-out: the only thing that lifts one.
    RECONSENT = "reconsent", "Re-consent"


class Source(models.TextChoices):
    LEAD = "lead", "Lead submission"
    CLICK_TO_CALL = "click_to_call", "Click-to-call request"
    SUPPORT = "support", "Entered by support"
    TEXT = "text", "Text from the lead"
    MANAGER = "manager", "Marked by a manager"
    EMAIL = "email", "Opt-out link in an e-mail"
    SPOKEN = "spoken", "Said on a call (confirmed by a person)"
    INTEGRATOR = "integrator", "Sent by an integrator"
    DO_NOT_CALL = "do_not_call", "Do-not-call list"


# Who a row is from when no user of the service recorded it: the person themselves.
THE_PERSON = frozenset({Source.LEAD, Source.CLICK_TO_CALL, Source.TEXT, Source.EMAIL})


class ConsentEvent(models.Model):
    """One consent, revocation or re-consent of a phone number (E.164) or an e-mail
    address, for calls, texts or e-mails, from one account of one organization."""

    organization = models.ForeignKey(
        Organization, on_delete=models.PROTECT, related_name="+"
    )
    account = models.ForeignKey(
        Account, on_delete=models.CASCADE, related_name="consent_events"
    )
    phone = models.CharField(max_length=16, blank=True, help_text="E.164.")
    email = models.CharField(max_length=254, blank=True)
    kind = models.CharField(max_length=12, choices=Kind)
    calls = models.BooleanField(help_text="Covers the account's calls.")
    texts = models.BooleanField(help_text="Covers the account's texts.")
    emails = models.BooleanField(
        default=False, help_text="Covers the account's e-mails to the address."
    )
    source = models.CharField(max_length=16, choices=Source)
    at = models.DateTimeField(help_text="When the person gave or withdrew it.")
    by = models.ForeignKey(
        settings.AUTH_USER_MODEL,
        on_delete=models.SET_NULL,
        null=True,
        blank=True,
        related_name="+",
        help_text="The user who recorded it, when a person of the dealer or support did.",
    )
    by_name = models.CharField(
        "who",
        max_length=200,
        blank=True,
        help_text="Who it is from, as written then (kept when the user is deleted).",
    )
    detail = models.TextField(
        blank=True,
        help_text="Its words or its context: the lead's source, the text, the reason.",
    )
    reference = models.CharField(
        max_length=64, blank=True, help_text="What it came with: a lead, call or text."
    )
    recorded_at = models.DateTimeField(auto_now_add=True)

    class Meta:
        ordering = ["-at", "-pk"]
        verbose_name = "consent ledger entry"
        verbose_name_plural = "consent ledger"
        indexes = [
            models.Index(
                fields=["account", "phone", "at"], name="consent_account_phone"
            ),
            models.Index(fields=["organization", "at"], name="consent_organization_at"),
            models.Index(
                fields=["account", "email", "at"], name="consent_account_email"
            ),
        ]
        constraints = [
            models.CheckConstraint(
                condition=Q(calls=True) | Q(texts=True) | Q(emails=True),
                name="consent_has_a_scope",
            ),
            models.CheckConstraint(
                condition=~Q(phone="") | ~Q(email=""), name="consent_has_an_address"
            ),
        ]

    def __str__(self) -> str:
        return (
            f"{self.get_kind_display()} of {self.phone or self.email} ({self.account})"
        )

    @property
    def scope(self) -> str:
        return " and ".join(
            name
            for name, on in (
                ("calls", self.calls),
                ("texts", self.texts),
                ("e-mails", self.emails),
            )
            if on
        )

    @property
    def who(self) -> str:
        if self.by_name:
            return self.by_name
        return "The person" if self.source in THE_PERSON else ""

    def reason(self) -> str:
        """Why the account's calls to the number stop, for a call's notes and the admin."""
        by = f" ({self.by_name})" if self.by_name else ""
        said = f": {self.detail}" if self.detail else ""
        return (
            f"Not called: consent to {self.scope} withdrawn "
            f"{self.at.astimezone(UTC):%Y-%m-%d %H:%M} UTC, "
            f"{self.get_source_display().lower()}{by}{said}"
        )
