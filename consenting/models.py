"""A spoken revocation suggested from a call's transcript: the lead may have asked not to
be called again. It waits for a person (the call's agent, a manager, staff) to confirm it
(a revocation of the account's calls in the consent ledger) or dismiss it."""

from __future__ import annotations

from django.conf import settings
from django.db import models

from accounts.models import Account
from calls.models import Call


class Decision(models.TextChoices):
    WAITING = "", "Waiting for a person"
    CONFIRMED = "confirmed", "Confirmed: calls stop"
    DISMISSED = "dismissed", "Dismissed"


class SpokenRevocation(models.Model):
    """One per call: the sentence the lead said, and what a person decided."""

    call = models.OneToOneField(
        Call, on_delete=models.CASCADE, related_name="spoken_revocation"
    )
    account = models.ForeignKey(
        Account, on_delete=models.CASCADE, related_name="spoken_revocations"
    )
    phone = models.CharField(max_length=16, help_text="E.164: the lead.")
    sentence = models.TextField(help_text="What the lead said, as transcribed.")
    line = models.PositiveIntegerField(help_text="Its line in the transcript (from 0).")
    suggested_at = models.DateTimeField(auto_now_add=True)
    decision = models.CharField(max_length=12, choices=Decision, blank=True)
    decided_by = models.ForeignKey(
        settings.AUTH_USER_MODEL,
        on_delete=models.SET_NULL,
        null=True,
        blank=True,
        related_name="+",
    )
    decided_at = models.DateTimeField(null=True, blank=True)

    class Meta:
        ordering = ["-suggested_at", "-pk"]
        verbose_name = "spoken revocation"
        indexes = [
            models.Index(fields=["account", "suggested_at"], name="spoken_account_idx")
        ]

    def __str__(self) -> str:
        return f"{self.phone} on call {self.call_id}: {self.get_decision_display()}"

    @property
    def waiting(self) -> bool:
        return self.decision == Decision.WAITING
