"""Texts to and from leads: each account's texting settings, every message of a lead's
thread with its status, and the numbers that opted out."""

from __future__ import annotations

from datetime import time

from django.conf import settings
from django.db import models
from django.db.models import Q

from accounts.models import Account
from calls.models import Call

DEFAULT_NOT_REACHED = (
    "Hi {first_name}, this is {dealer}. We just tried to call you about the {vehicle}. "
    "Reply CALL ME and we will call you right back. Reply STOP to opt out."
)
DEFAULT_NO_AGENT = (
    "Hi {first_name}, thanks for your interest in the {vehicle}. Everyone at {dealer} "
    "is with a customer right now; reply CALL ME and we will call you as soon as "
    "someone is free. Reply STOP to opt out."
)
DEFAULT_WAITING = (
    "Hi {first_name}, thanks for contacting {dealer} about the {vehicle}. We are closed "
    "right now; we will call you at {opening}. Reply STOP to opt out."
)
DEFAULT_INSTANT = (
    "Hi {first_name}, thanks for your interest in the {vehicle}! {dealer} will call you "
    "in a moment. Reply STOP to opt out."
)
DEFAULT_HELP = (
    "{dealer}: texts about your vehicle inquiry. Reply CALL ME for a call, STOP to opt "
    "out. Msg & data rates may apply."
)
DEFAULT_CALL_ME_KEYWORDS = "call me, call now, yes, now, ready, please call"


class TextingSettings(models.Model):
    """How an account texts its leads. An account without a row does not text."""

    account = models.OneToOneField(
        Account, on_delete=models.CASCADE, related_name="texting_settings"
    )
    enabled = models.BooleanField(
        "texting on",
        default=False,
        help_text="Send the automatic texts below and allow replies from the call page.",
    )
    sender = models.CharField(
        "sending number",
        max_length=34,
        blank=True,
        help_text="A Twilio number (E.164) or Messaging Service SID (MG...); "
        "empty: the account's caller ID.",
    )
    quiet_start = models.TimeField(
        "texts from",
        default=time(8),
        help_text="In the lead's local time: automatic texts due earlier wait until then.",
    )
    quiet_end = models.TimeField(
        "texts until",
        default=time(21),
        help_text="In the lead's local time: automatic texts due later wait for the next morning.",
    )
    automatic_limit = models.PositiveSmallIntegerField(
        "automatic texts per lead",
        default=3,
        help_text="At most this many automatic texts to one number in 30 days.",
    )
    not_reached_template = models.TextField(
        "lead not reached",
        default=DEFAULT_NOT_REACHED,
        blank=True,
        help_text="After the last attempt ends NOANSWER, BUSY or FAILED. Empty: none.",
    )
    no_agent_template = models.TextField(
        "no agent available",
        default=DEFAULT_NO_AGENT,
        blank=True,
        help_text="When the call ends NOAGENT. Empty: none.",
    )
    waiting_template = models.TextField(
        "waiting for the schedule",
        default=DEFAULT_WAITING,
        blank=True,
        help_text="When the call waits for the next schedule opening ({opening}). Empty: none.",
    )
    instant_enabled = models.BooleanField(
        "instant text", default=False, help_text="Text the lead the moment it arrives."
    )
    instant_template = models.TextField(
        "instant text wording", default=DEFAULT_INSTANT, blank=True
    )
    help_template = models.TextField(
        "HELP answer", default=DEFAULT_HELP, help_text="Sent when a lead texts HELP."
    )
    call_me_keywords = models.CharField(
        max_length=500,
        default=DEFAULT_CALL_ME_KEYWORDS,
        blank=True,
        help_text="Comma-separated: a reply holding one of them (and no 'not', 'no' or "
        "'don't') queues a new call at once.",
    )

    class Meta:
        verbose_name_plural = "texting settings"

    def __str__(self) -> str:
        return f"Texting settings of {self.account}"


class Direction(models.TextChoices):
    OUT = "out", "To the lead"
    IN = "in", "From the lead"


class Purpose(models.TextChoices):
    INSTANT = "instant", "Instant text"
    NOT_REACHED = "not_reached", "Lead not reached"
    NO_AGENT = "no_agent", "No agent available"
    WAITING = "waiting", "Waiting for the schedule"
    REPLY = "reply", "Reply from the call page"
    HELP = "help", "HELP answer"
    OPT_OUT = "opt_out", "Opt-out confirmation"
    OPT_IN = "opt_in", "Opt-in confirmation"
    FORWARD = "forward", "Forwarded to the team"
    ALERT = "alert", "Alert to a manager"
    REMINDER = "reminder", "Appointment reminder"
    INBOUND = "inbound", "From the lead"


# The texts sent without a person asking: counted against the account's limit per lead
# and held back in quiet hours.
AUTOMATIC = frozenset(
    {
        Purpose.INSTANT,
        Purpose.NOT_REACHED,
        Purpose.NO_AGENT,
        Purpose.WAITING,
        Purpose.REMINDER,
    }
)
# The texts to the account's own people, not to the lead: never held by a lead's opt-out.
STAFF = frozenset({Purpose.FORWARD, Purpose.ALERT})


class TextStatus(models.TextChoices):
    SCHEDULED = "scheduled", "Scheduled"  # stored, waiting for its time (quiet hours)
    SENDING = "sending", "Sending"  # being handed to the provider
    QUEUED = "queued", "Queued"  # the provider took it
    SENT = "sent", "Sent"
    DELIVERED = "delivered", "Delivered"
    UNDELIVERED = "undelivered", "Undelivered"
    FAILED = "failed", "Failed"
    CANCELED = "canceled", "Not sent"  # opted out or texting turned off before its time
    RECEIVED = "received", "Received"  # from the lead


# A status only ever moves forward along this order (a late callback changes nothing), and
# a final one (``FINAL``) never changes again.
FINAL = 4
STATUS_ORDER = {
    TextStatus.SCHEDULED: 0,
    TextStatus.SENDING: 1,
    TextStatus.QUEUED: 2,
    TextStatus.SENT: 3,
    TextStatus.DELIVERED: FINAL,
    TextStatus.UNDELIVERED: FINAL,
    TextStatus.FAILED: FINAL,
    TextStatus.CANCELED: FINAL,
    TextStatus.RECEIVED: FINAL,
}


class Text(models.Model):
    """One message of a lead's thread (an account and the lead's number), or a lead's
    message forwarded to the team (``purpose`` forward, ``to_number`` the agent's)."""

    account = models.ForeignKey(Account, on_delete=models.CASCADE, related_name="texts")
    lead_phone = models.CharField(max_length=16, help_text="E.164: the thread's lead.")
    call = models.ForeignKey(
        Call,
        null=True,
        blank=True,
        on_delete=models.SET_NULL,
        related_name="texts",
        help_text="The lead's call the text is about (the latest one for a reply).",
    )
    direction = models.CharField(max_length=3, choices=Direction)
    purpose = models.CharField(max_length=16, choices=Purpose)
    to_number = models.CharField(max_length=34)
    from_number = models.CharField(max_length=34, blank=True)
    body = models.TextField()
    status = models.CharField(
        max_length=16, choices=TextStatus, default=TextStatus.SCHEDULED
    )
    error = models.TextField(blank=True, help_text="Why it was not sent or delivered.")
    provider = models.CharField(max_length=16, blank=True)
    provider_id = models.CharField(max_length=64, blank=True, db_index=True)
    sent_by = models.ForeignKey(
        settings.AUTH_USER_MODEL,
        null=True,
        blank=True,
        on_delete=models.SET_NULL,
        related_name="+",
        help_text="Who wrote a reply from the call page.",
    )
    recipient = models.ForeignKey(
        settings.AUTH_USER_MODEL,
        null=True,
        blank=True,
        on_delete=models.SET_NULL,
        related_name="+",
        help_text="The agent or manager a lead's text was forwarded to.",
    )
    queued_call = models.ForeignKey(
        Call,
        null=True,
        blank=True,
        on_delete=models.SET_NULL,
        related_name="+",
        help_text="The call a 'call me' reply queued.",
    )
    created_at = models.DateTimeField(auto_now_add=True)
    due_at = models.DateTimeField(help_text="Not sent before this (quiet hours).")
    dispatched_at = models.DateTimeField(
        null=True,
        blank=True,
        help_text="When a send task was last handed to the broker.",
    )
    handed_at = models.DateTimeField(
        null=True, blank=True, help_text="When the provider took it."
    )
    status_at = models.DateTimeField(null=True, blank=True)

    class Meta:
        ordering = ["created_at", "id"]
        indexes = [
            models.Index(fields=["account", "lead_phone", "created_at"]),
            # The sweep: texts waiting for their time, or lost while being sent.
            models.Index(
                fields=["due_at"],
                condition=Q(status__in=["scheduled", "sending"]),
                name="texting_text_pending_idx",
            ),
        ]
        constraints = [
            # A provider's message is stored once, however often it posts it.
            models.UniqueConstraint(
                fields=["provider", "provider_id"],
                condition=~Q(provider_id=""),
                name="texting_text_provider_id_unique",
            )
        ]

    def __str__(self) -> str:
        return f"Text {self.pk} {self.direction} {self.status}"

    @property
    def automatic(self) -> bool:
        return self.purpose in AUTOMATIC


class OptOut(models.Model):
    """A number that asked the account to stop texting: no text of any kind goes to it
    until it texts START (``opted_in_at``). A reply that only reads like one
    (``confirmed`` false) pauses texting the same way until a person confirms it or
    dismisses it on the thread (``decided_by``; a dismissal sets ``opted_in_at``)."""

    account = models.ForeignKey(
        Account, on_delete=models.CASCADE, related_name="text_opt_outs"
    )
    phone = models.CharField(max_length=16)
    opted_out_at = models.DateTimeField()
    message = models.TextField(help_text="What the lead sent.")
    opted_in_at = models.DateTimeField(null=True, blank=True)
    opt_in_message = models.TextField(blank=True)
    text = models.ForeignKey(
        Text,
        on_delete=models.SET_NULL,
        null=True,
        blank=True,
        related_name="+",
        help_text="The lead's text it came from.",
    )
    confirmed = models.BooleanField(
        default=True,
        help_text="False: a possible opt-out, texting paused until a person decides.",
    )
    decided_by = models.ForeignKey(
        settings.AUTH_USER_MODEL,
        on_delete=models.SET_NULL,
        null=True,
        blank=True,
        related_name="+",
        help_text="Who confirmed or dismissed a possible opt-out.",
    )
    decided_at = models.DateTimeField(null=True, blank=True)

    class Meta:
        ordering = ["-opted_out_at"]
        verbose_name = "opt-out"
        constraints = [
            models.UniqueConstraint(
                fields=["account", "phone"],
                condition=Q(opted_in_at__isnull=True),
                name="texting_one_opt_out_in_force",
            )
        ]

    def __str__(self) -> str:
        return f"{self.phone} opted out of {self.account}"

    @property
    def state(self) -> str:
        if not self.confirmed:
            return "dismissed" if self.opted_in_at else "possible opt-out, paused"
        return "opted in again" if self.opted_in_at else "opted out"


class UnroutedText(models.Model):
    """A lead's text to a number that accounts of more than one organization use: kept
    here, in no organization's thread, for support (the admin overview) until the number
    belongs to one organization again. A lead's STOP among them is for support to honour."""

    to_number = models.CharField(max_length=34)
    from_number = models.CharField(max_length=34)
    body = models.TextField()
    reason = models.TextField(help_text="Why it reached no thread.")
    provider = models.CharField(max_length=16, blank=True)
    provider_id = models.CharField(max_length=64, blank=True)
    received_at = models.DateTimeField(auto_now_add=True)

    class Meta:
        ordering = ["-received_at", "-id"]
        verbose_name = "text not routed"
        verbose_name_plural = "texts not routed"
        constraints = [
            # A provider's message is kept once, however often it posts it.
            models.UniqueConstraint(
                fields=["provider", "provider_id"],
                condition=~Q(provider_id=""),
                name="texting_unrouted_provider_id_unique",
            )
        ]

    def __str__(self) -> str:
        return f"Text to {self.to_number}, not routed"
