"""The toolkit's own rows, of no domain: side effects waiting for their task (the one
outbox, ``core.outbox``) and sweep items set aside after failing again and again
(``core.sweeps``). Both are shown on the support overview with their reasons."""

from __future__ import annotations

from django.db import models


class EffectStatus(models.TextChoices):
    PENDING = "pending", "Pending"
    DONE = "done", "Done"
    FAILED = "failed", "Failed"


class Effect(models.Model):
    """One side effect of a change (a write-back, an alert, a text, suggestions), written
    in the change's transaction as a name and ids alone, so writing it cannot fail on the
    data; it is built and sent by its own task. ``key`` names the change it follows, so one
    change makes one effect of each kind."""

    key = models.CharField(max_length=200, unique=True)
    kind = models.CharField(max_length=64, db_index=True)
    params = models.JSONField(default=dict)
    # What it is about, for people: "call 12", "score 7".
    about = models.CharField(max_length=100, blank=True)
    status = models.CharField(
        max_length=8, choices=EffectStatus, default=EffectStatus.PENDING
    )
    tries = models.PositiveSmallIntegerField(default=0)
    error = models.TextField(blank=True)
    created_at = models.DateTimeField(auto_now_add=True)
    due_at = models.DateTimeField(help_text="When the next try is due.")
    dispatched_at = models.DateTimeField(
        null=True, blank=True, help_text="When it was last handed to a worker."
    )
    done_at = models.DateTimeField(null=True, blank=True)

    class Meta:
        ordering = ["-created_at", "-id"]
        indexes = [
            models.Index(
                fields=["due_at"],
                condition=models.Q(status="pending"),
                name="core_effect_due_idx",
            ),
            models.Index(
                fields=["-created_at"],
                condition=models.Q(status="failed"),
                name="core_effect_failed_idx",
            ),
        ]

    def __str__(self) -> str:
        return f"{self.kind} of {self.about or self.key}"


class SetAside(models.Model):
    """A sweep's item that failed the same way again and again: after
    ``core.sweeps.SET_ASIDE_AFTER`` failures in a row the sweep leaves it alone until a
    person sends it again (deletes this row). Fewer failures are counted here too."""

    sweep = models.CharField(max_length=64)
    item = models.CharField(max_length=64, help_text="The item's id in its sweep.")
    failures = models.PositiveIntegerField(default=0)
    error = models.TextField(blank=True, help_text="The last failure's type and text.")
    set_aside = models.BooleanField(default=False)
    first_failed_at = models.DateTimeField(auto_now_add=True)
    last_failed_at = models.DateTimeField(auto_now=True)

    class Meta:
        verbose_name = "sweep item set aside"
        verbose_name_plural = "sweep items set aside"
        constraints = [
            models.UniqueConstraint(fields=["sweep", "item"], name="core_set_aside_one")
        ]

    def __str__(self) -> str:
        return f"{self.sweep}: {self.item}"
