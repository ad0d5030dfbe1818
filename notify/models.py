"""What the service tells people outside it by e-mail: the dealer's CRM (the call's
outcome as an ADF document), the managers (alerts) and the morning report. Every
message is a row of the outbox, written in the transaction that caused it and sent by a
worker; the row is the record of what was sent, when and how it went."""

from __future__ import annotations

from django.conf import settings
from django.core.exceptions import ValidationError
from django.core.validators import validate_email
from django.db import models

from accounts.models import Account
from calls.models import Call


class CrmSendOn(models.TextChoices):
    FINAL = "final", "When the call reaches its final status"
    SCORED = "scored", "When the call is scored"
    BOTH = "both", "Both"


def crm_addresses(value: str) -> list[str]:
    """The addresses of a CRM address list: one per line, or separated by commas."""
    return [
        part.strip() for part in value.replace(",", "\n").splitlines() if part.strip()
    ]


def validate_addresses(value: str) -> None:
    wrong = []
    for address in crm_addresses(value):
        try:
            validate_email(address)
        except ValidationError:
            wrong.append(address)
    if wrong:
        raise ValidationError(f"Not an e-mail address: {', '.join(wrong)}")


class NotifySettings(models.Model):
    """Per account: where the CRM takes its leads by e-mail, and the alerts' thresholds."""

    account = models.OneToOneField(
        Account, on_delete=models.CASCADE, related_name="notify_settings"
    )
    crm_addresses = models.TextField(
        blank=True,
        validators=[validate_addresses],
        help_text=(
            "The CRM's lead addresses (ADF by e-mail), one per line. Empty: nothing is "
            "written back."
        ),
    )
    crm_send_on = models.CharField(
        max_length=8, choices=CrmSendOn, default=CrmSendOn.FINAL
    )
    waiting_minutes = models.PositiveSmallIntegerField(
        "alert after minutes waiting",
        default=5,
        help_text="A lead waiting this long for an agent while the account is open alerts.",
    )

    class Meta:
        verbose_name = "CRM write-back and alerts"
        verbose_name_plural = "CRM write-back and alerts"

    def __str__(self) -> str:
        return f"CRM write-back and alerts of {self.account}"


class AlertKind(models.TextChoices):
    NOT_REACHED = "not_reached", "Lead not reached after the last attempt"
    NO_AGENT = "no_agent", "Call ended NOAGENT"
    WAITING = "waiting", "Lead waiting for an agent"
    ALERT_TAG = "alert_tag", "Call scored with an alert tag"
    MISSED_OFFERS = "missed_offers", "Agent missed three offers in a row"
    HANDOFF = "handoff", "Handoff waiting for a person"


class AlertSubscription(models.Model):
    """How one user hears of one kind of alert on one account. Without a row, the
    account's managers are told by e-mail and global managers are not told."""

    user = models.ForeignKey(
        settings.AUTH_USER_MODEL, on_delete=models.CASCADE, related_name="alerts"
    )
    account = models.ForeignKey(
        Account, on_delete=models.CASCADE, related_name="alert_subscriptions"
    )
    kind = models.CharField(max_length=16, choices=AlertKind)
    by_email = models.BooleanField(default=True)
    by_text = models.BooleanField(
        default=False, help_text="Only when texting is on for the account."
    )
    outside_hours = models.BooleanField(
        default=False, help_text="Also outside the user's schedule."
    )

    class Meta:
        constraints = [
            models.UniqueConstraint(
                fields=["user", "account", "kind"], name="notify_one_subscription"
            )
        ]

    def __str__(self) -> str:
        return f"{self.user} / {self.account} / {self.get_kind_display()}"


class MessageKind(models.TextChoices):
    CRM = "crm", "CRM write-back"
    ALERT = "alert", "Alert"
    REPORT = "report", "Morning report"


class Channel(models.TextChoices):
    EMAIL = "email", "E-mail"
    TEXT = "text", "Text"


class MessageStatus(models.TextChoices):
    PENDING = "pending", "Pending"
    SENDING = "sending", "Sending"
    SENT = "sent", "Sent"
    FAILED = "failed", "Failed"
    HELD = "held", "Not sent"


class Message(models.Model):
    """One message to send, once: ``key`` names the event it tells of and its recipient,
    so the same event never makes a second message."""

    key = models.CharField(max_length=200, unique=True)
    kind = models.CharField(max_length=8, choices=MessageKind)
    channel = models.CharField(max_length=8, choices=Channel, default=Channel.EMAIL)
    account = models.ForeignKey(
        Account,
        null=True,
        blank=True,
        on_delete=models.CASCADE,
        related_name="messages",
    )
    call = models.ForeignKey(
        Call, null=True, blank=True, on_delete=models.SET_NULL, related_name="messages"
    )
    user = models.ForeignKey(
        settings.AUTH_USER_MODEL,
        null=True,
        blank=True,
        on_delete=models.SET_NULL,
        related_name="messages",
        help_text="The user told (alerts and reports).",
    )
    alert = models.CharField(max_length=16, choices=AlertKind, blank=True)
    to = models.TextField(help_text="The addresses (or phone number), one per line.")
    subject = models.CharField(max_length=255)
    text = models.TextField()
    html = models.TextField(blank=True)
    adf = models.TextField(
        blank=True, help_text="The ADF document of a CRM write-back."
    )
    # Inline images of the HTML part: [{"cid", "subtype" (png), "data" (base64)}].
    images = models.JSONField(default=list, blank=True)
    status = models.CharField(
        max_length=8,
        choices=MessageStatus,
        default=MessageStatus.PENDING,
        db_index=True,
    )
    error = models.TextField(blank=True)
    attempts = models.PositiveSmallIntegerField(default=0)
    created_at = models.DateTimeField(auto_now_add=True, db_index=True)
    due_at = models.DateTimeField(help_text="When the next try is due.")
    dispatched_at = models.DateTimeField(
        null=True, blank=True, help_text="When it was last handed to a worker."
    )
    status_at = models.DateTimeField(null=True, blank=True)
    sent_at = models.DateTimeField(null=True, blank=True)

    class Meta:
        ordering = ["-created_at", "-id"]
        indexes = [
            models.Index(
                fields=["due_at"],
                condition=models.Q(status="pending"),
                name="notify_message_due_idx",
            )
        ]

    def __str__(self) -> str:
        return f"{self.get_kind_display()}: {self.subject}"

    @property
    def recipients(self) -> list[str]:
        return crm_addresses(self.to) if self.channel == Channel.EMAIL else [self.to]
