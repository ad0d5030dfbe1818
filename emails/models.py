"""E-mail to leads: an account's settings (off by default) and every e-mail stored before
it is sent, with its status."""

from __future__ import annotations

from django.db import models

from accounts.models import Account
from calls.models import Call


class EmailSettings(models.Model):
    """Whether the account also e-mails its leads the first-touch and not-reached
    messages, and from and to which addresses."""

    account = models.OneToOneField(
        Account, on_delete=models.CASCADE, related_name="email_settings"
    )
    enabled = models.BooleanField(
        "e-mail leads",
        default=False,
        help_text="Also e-mail the first-touch and not-reached messages to leads "
        "that gave an e-mail address.",
    )
    from_email = models.EmailField(
        "from",
        blank=True,
        help_text="The account's sending address (its domain needs SPF and DKIM for "
        "the mail provider). Empty: the service's DEFAULT_FROM_EMAIL.",
    )
    from_name = models.CharField(
        max_length=100,
        blank=True,
        help_text="Shown beside it; empty: the account's name.",
    )
    reply_to = models.EmailField(
        "reply-to",
        blank=True,
        help_text="Where the lead's reply goes: the account's CRM or sales address.",
    )
    automatic_limit = models.PositiveSmallIntegerField(
        default=3,
        help_text="At most this many automatic e-mails to one address in 30 days.",
    )

    class Meta:
        verbose_name = verbose_name_plural = "e-mail settings"

    def __str__(self) -> str:
        return f"E-mail settings of {self.account}"


class Purpose(models.TextChoices):
    # Texting's own values (texting.models.Purpose), so one word means one message.
    INSTANT = "instant", "First touch"
    NOT_REACHED = "not_reached", "Lead not reached"


class EmailStatus(models.TextChoices):
    QUEUED = "queued", "Queued"  # stored, waiting for a worker (or its next try)
    SENDING = "sending", "Sending"  # handed to the mail server
    SENT = "sent", "Sent"  # the mail server took it
    FAILED = "failed", "Failed"  # refused, or given up after the last try
    CANCELED = "canceled", "Not sent"  # opted out or switched off before it went


class LeadEmail(models.Model):
    """One e-mail to a lead, stored before it is sent (``emails.services``)."""

    account = models.ForeignKey(
        Account, on_delete=models.CASCADE, related_name="lead_emails"
    )
    call = models.ForeignKey(
        Call,
        null=True,
        blank=True,
        on_delete=models.SET_NULL,
        related_name="lead_emails",
        help_text="The lead's call the e-mail is about.",
    )
    key = models.CharField(
        max_length=200,
        unique=True,
        help_text="What it is for, once: a purpose and call, or a cadence's step.",
    )
    lead_phone = models.CharField(max_length=16, blank=True, help_text="E.164.")
    to_email = models.CharField("to", max_length=254)
    purpose = models.CharField(max_length=16, choices=Purpose)
    from_email = models.CharField("from", max_length=300)
    reply_to = models.CharField(max_length=254, blank=True)
    subject = models.CharField(max_length=255)
    text = models.TextField()
    html = models.TextField(blank=True)
    status = models.CharField(
        max_length=10, choices=EmailStatus, default=EmailStatus.QUEUED
    )
    error = models.TextField(blank=True, help_text="Why it was not sent (yet).")
    attempts = models.PositiveSmallIntegerField(default=0)
    message_id = models.CharField("Message-ID", max_length=255, blank=True)
    due_at = models.DateTimeField()
    dispatched_at = models.DateTimeField(null=True, blank=True)
    status_at = models.DateTimeField()
    sent_at = models.DateTimeField(null=True, blank=True)
    created_at = models.DateTimeField(auto_now_add=True)

    class Meta:
        verbose_name = "e-mail to a lead"
        verbose_name_plural = "e-mails to leads"
        indexes = [
            models.Index(fields=["status", "due_at"], name="lead_email_due"),
            models.Index(
                fields=["account", "to_email", "created_at"], name="lead_email_to"
            ),
        ]

    def __str__(self) -> str:
        return f"{self.get_purpose_display()} to {self.to_email}"
