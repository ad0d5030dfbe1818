"""Handoff timers: each moment a person must act on a lead opens one (a text reply, a
callback asked for on a call, a proposed appointment, a call ended NOAGENT, a reply that
reads like an opt-out, a call where the lead may have asked not to be called); a person's act closes it; one left open past the account's limit
is escalated to its managers once."""

from __future__ import annotations

from django.conf import settings
from django.core.validators import MinValueValidator
from django.db import models

from accounts.models import Account
from calls.models import Call

DEFAULT_LIMIT_MINUTES = 15


class HandoffKind(models.TextChoices):
    REPLY = "reply", "The lead texted a reply"
    CALLBACK = "callback", "A callback asked for on a call"
    APPOINTMENT = "appointment", "An appointment proposed"
    NO_AGENT = "no_agent", "The call ended NOAGENT"
    OPT_OUT = "opt_out", "A reply that reads like an opt-out"
    SPOKEN_OPT_OUT = (
        "spoken_opt_out",
        "A call where the lead may have asked not to be called",
    )


# What reaching the lead closes (an agent connected, a person's text); a proposal and a
# possible opt-out wait for a decision on the page.
REACHED = (HandoffKind.REPLY, HandoffKind.CALLBACK, HandoffKind.NO_AGENT)


class ClosedBy(models.TextChoices):
    CALL = "call", "An agent connected with the lead"
    TEXT = "text", "A person texted the lead"
    DECISION = "decision", "A person decided on the page"
    LEAD = "lead", "The lead decided (STOP)"


class HandoffSettings(models.Model):
    """Per account: how long a handoff may wait before the managers are told."""

    account = models.OneToOneField(
        Account, on_delete=models.CASCADE, related_name="handoff_settings"
    )
    limit_minutes = models.PositiveSmallIntegerField(
        "escalate after minutes",
        default=DEFAULT_LIMIT_MINUTES,
        validators=[MinValueValidator(1)],
        help_text="A handoff open this long is escalated to the account's managers once.",
    )

    class Meta:
        verbose_name = verbose_name_plural = "handoff limit"

    def __str__(self) -> str:
        return f"Handoff limit of {self.account}"


class Handoff(models.Model):
    """One moment a person must act on the lead at ``phone``: at most one open per
    account, phone and kind."""

    account = models.ForeignKey(
        Account, on_delete=models.CASCADE, related_name="handoffs"
    )
    phone = models.CharField(max_length=16, help_text="E.164: the lead.")
    kind = models.CharField(max_length=16, choices=HandoffKind)
    call = models.ForeignKey(
        Call,
        null=True,
        blank=True,
        on_delete=models.SET_NULL,
        related_name="handoffs",
        help_text="The lead's call it is about (for the link).",
    )
    opened_at = models.DateTimeField()
    opened_by = models.CharField(
        max_length=40, help_text='What opened it: "text 12", "call 7", "appointment 3".'
    )
    wait_from = models.DateTimeField(
        help_text="The limit counts from here: when it opened, or the callback's time."
    )
    closed_at = models.DateTimeField(null=True, blank=True)
    closed_by = models.CharField(max_length=16, choices=ClosedBy, blank=True)
    closed_by_user = models.ForeignKey(
        settings.AUTH_USER_MODEL,
        null=True,
        blank=True,
        on_delete=models.SET_NULL,
        related_name="+",
    )
    escalated_at = models.DateTimeField(null=True, blank=True)

    class Meta:
        ordering = ["opened_at", "id"]
        constraints = [
            models.UniqueConstraint(
                fields=["account", "phone", "kind"],
                condition=models.Q(closed_at__isnull=True),
                name="handoffs_one_open",
            ),
            models.CheckConstraint(
                condition=models.Q(closed_at__isnull=True) | ~models.Q(closed_by=""),
                name="handoffs_closed_by_someone",
            ),
        ]
        indexes = [
            # The sweep's: open handoffs not yet escalated, oldest wait first.
            models.Index(
                fields=["wait_from"],
                condition=models.Q(closed_at__isnull=True, escalated_at__isnull=True),
                name="handoffs_waiting_idx",
            ),
            models.Index(fields=["account", "opened_at"], name="handoffs_account_idx"),
        ]

    def __str__(self) -> str:
        return f"{self.get_kind_display()}: {self.phone}"


class RollupSpeed(models.Model):
    """How many leads of one account's day, taken by one agent (or none), were first
    touched (``kind`` "touch") or first reached by a person ("human") after each whole
    second, and how many leads the day had ("lead", ``seconds`` 0): the per-second
    histograms the speed numbers' percentiles are read from (handoffs/rollup.py), as
    scoring's RollupResponse keeps response times."""

    account = models.ForeignKey(Account, on_delete=models.CASCADE, related_name="+")
    day = models.DateField()
    agent_id = models.IntegerField(null=True)
    kind = models.CharField(max_length=5)
    seconds = models.PositiveIntegerField()
    calls = models.PositiveIntegerField()

    class Meta:
        indexes = [models.Index(fields=["account", "day"])]

    def __str__(self) -> str:
        return f"{self.calls} leads {self.kind} in {self.seconds} s on {self.day}"
