"""The follow-up cadence: per account, the steps a lead not reached gets (a call or a text,
each so many hours after the lead arrived), and each lead's planned steps as rows with
their due time, handed over by the scheduler when due (``cadence.services``)."""

from __future__ import annotations

from django.conf import settings
from django.core.validators import MaxValueValidator
from django.db import models
from django.db.models import Q

from accounts.models import Account
from calls.models import Call
from texting.models import Text

DEFAULT_FOLLOW_UP = (
    "Hi {first_name}, {dealer} here again about the {vehicle}. Reply CALL ME and we "
    "will call you, or STOP to opt out."
)


class Channel(models.TextChoices):
    """How a step reaches the lead (``cadence.channels`` runs each; a new channel, such
    as e-mail, is a choice here and a runner there)."""

    CALL = "call", "Call"
    TEXT = "text", "Text"


class Template(models.TextChoices):
    NOT_REACHED = "not_reached", "The account's 'lead not reached' text"
    OWN = "own", "The step's own wording"


# The default cadence of an account that turned it on and set no steps of its own:
# (hours after the lead arrived, channel, template, wording).
DEFAULT_STEPS: tuple[tuple[int, str, str, str], ...] = (
    (0, Channel.TEXT, Template.NOT_REACHED, ""),
    (24, Channel.CALL, Template.OWN, ""),
    (3 * 24, Channel.TEXT, Template.OWN, DEFAULT_FOLLOW_UP),
    (7 * 24, Channel.CALL, Template.OWN, ""),
    (14 * 24, Channel.TEXT, Template.OWN, DEFAULT_FOLLOW_UP),
    (30 * 24, Channel.TEXT, Template.OWN, DEFAULT_FOLLOW_UP),
)


class Cadence(models.Model):
    """Whether and how an account follows up its leads not reached. An account without a
    row, or with the cadence off, plans nothing."""

    account = models.OneToOneField(
        Account, on_delete=models.CASCADE, related_name="cadence"
    )
    enabled = models.BooleanField(
        "follow-up cadence on",
        default=False,
        help_text="Plan the steps below (or the default ones) for each lead not reached.",
    )

    class Meta:
        verbose_name = "follow-up cadence"

    def __str__(self) -> str:
        return f"Follow-up cadence of {self.account}"


class CadenceStep(models.Model):
    """One step of an account's cadence: ``after_hours`` after the lead arrived."""

    cadence = models.ForeignKey(Cadence, on_delete=models.CASCADE, related_name="steps")
    after_hours = models.PositiveIntegerField(
        "hours after the lead arrived",
        validators=[MaxValueValidator(90 * 24)],
        help_text="0: at once; 24: day 1; 72: day 3 (at most 90 days).",
    )
    channel = models.CharField(max_length=8, choices=Channel, default=Channel.TEXT)
    template = models.CharField(
        max_length=16, choices=Template, default=Template.NOT_REACHED
    )
    body = models.TextField(
        "wording",
        blank=True,
        help_text="A text step's own wording: {first_name}, {dealer}, {vehicle}, {agent}.",
    )

    class Meta:
        ordering = ["after_hours", "id"]
        verbose_name = "step"

    def __str__(self) -> str:
        return f"{self.get_channel_display()} after {self.after_hours} h"


class StepStatus(models.TextChoices):
    PLANNED = "planned", "Planned"
    HANDED_OVER = "handed_over", "Handed over"  # to a worker, at its due time
    DONE = "done", "Done"
    STOPPED = "stopped", "Stopped"
    SKIPPED = "skipped", "Skipped"


# Not run yet: what a stop marks stopped.
AHEAD = (StepStatus.PLANNED, StepStatus.HANDED_OVER)


class PlannedStep(models.Model):
    """One step planned for the lead at ``phone`` of an account, from the call that did
    not reach them, due at ``due_at`` (moved past quiet hours when it falls in them)."""

    account = models.ForeignKey(
        Account, on_delete=models.CASCADE, related_name="planned_steps"
    )
    phone = models.CharField(max_length=16, help_text="E.164: the lead.")
    call = models.ForeignKey(
        Call,
        on_delete=models.CASCADE,
        related_name="planned_steps",
        help_text="The lead's call that did not reach them.",
    )
    position = models.PositiveSmallIntegerField()
    channel = models.CharField(max_length=8, choices=Channel)
    template = models.CharField(max_length=16, choices=Template)
    body = models.TextField(blank=True)
    due_at = models.DateTimeField()
    status = models.CharField(
        max_length=16, choices=StepStatus, default=StepStatus.PLANNED
    )
    reason = models.TextField(blank=True, help_text="Why it was stopped or skipped.")
    handed_at = models.DateTimeField(
        null=True, blank=True, help_text="When the scheduler handed it to a worker."
    )
    done_at = models.DateTimeField(null=True, blank=True)
    stopped_by = models.ForeignKey(
        settings.AUTH_USER_MODEL,
        null=True,
        blank=True,
        on_delete=models.SET_NULL,
        related_name="+",
        help_text="The person who stopped it on the call page.",
    )
    made_call = models.ForeignKey(
        Call,
        null=True,
        blank=True,
        on_delete=models.SET_NULL,
        related_name="+",
        help_text="The call a call step queued.",
    )
    made_text = models.ForeignKey(
        Text,
        null=True,
        blank=True,
        on_delete=models.SET_NULL,
        related_name="+",
        help_text="The text a text step stored.",
    )
    created_at = models.DateTimeField(auto_now_add=True)

    class Meta:
        ordering = ["due_at", "id"]
        verbose_name = "planned follow-up step"
        constraints = [
            # A call's plan is made once, however often its end is reported.
            models.UniqueConstraint(
                fields=["call", "position"], name="cadence_step_once_per_call"
            )
        ]
        indexes = [
            models.Index(fields=["account", "phone", "status"]),
            # The scheduler's: steps waiting for their time or handed over.
            models.Index(
                fields=["due_at"],
                condition=Q(status__in=["planned", "handed_over"]),
                name="cadence_step_ahead_idx",
            ),
        ]

    def __str__(self) -> str:
        return f"{self.get_channel_display()} to {self.phone} at {self.due_at:%Y-%m-%d %H:%M}"
