"""Appointments with a life: made on a call (by its agent, a manager, a scorer, or
proposed by the service from the transcript), then confirmed, kept or missed, cancelled or
moved to another time, every change kept with who made it and when (issue 39)."""

from __future__ import annotations

from django.conf import settings
from django.db import models

from accounts.models import Account
from calls.models import Call
from texting.models import Text


class Kind(models.TextChoices):
    SALES_VISIT = "sales_visit", "Sales visit"
    TEST_DRIVE = "test_drive", "Test drive"
    SERVICE = "service", "Service"


class Status(models.TextChoices):
    PROPOSED = "proposed", "Proposed (waiting for a person)"
    SET = "set", "Set"
    CONFIRMED = "confirmed", "Confirmed"  # by the lead
    KEPT = "kept", "Kept"
    NO_SHOW = "no_show", "No-show"
    CANCELLED = "cancelled", "Cancelled"
    RESCHEDULED = "rescheduled", "Rescheduled"


# Still to happen: the lead may come.
OPEN = (Status.PROPOSED, Status.SET, Status.CONFIRMED)
# Set with the lead, so due: kept, missed or not yet marked.
AGREED = (Status.SET, Status.CONFIRMED, Status.KEPT, Status.NO_SHOW)


class Actor(models.TextChoices):
    """Who made a change: a person in a role, the service itself, the lead, an integrator."""

    AGENT = "agent", "Agent"
    MANAGER = "manager", "Manager"
    SCORER = "scorer", "Scorer"
    STAFF = "staff", "Support"
    SERVICE = "service", "The service (from the transcript)"
    LEAD = "lead", "The lead (by text)"
    INTEGRATOR = "integrator", "Integrator (API)"


class Appointment(models.Model):
    """One appointment of a lead with an account, at one time. A new time is a new
    appointment: the old one ends ``rescheduled`` and the new one ``replaces`` it."""

    account = models.ForeignKey(
        Account, on_delete=models.CASCADE, related_name="appointments"
    )
    call = models.ForeignKey(
        Call,
        null=True,
        blank=True,
        on_delete=models.SET_NULL,
        related_name="appointments",
        help_text="The call it was made on or about.",
    )
    # The lead, as the call knew them (a click-to-call lead has no lead row).
    phone = models.CharField(max_length=16, blank=True)
    first_name = models.CharField(max_length=100, blank=True)
    last_name = models.CharField(max_length=100, blank=True)
    starts_at = models.DateTimeField(help_text="Shown in the account's timezone.")
    kind = models.CharField(max_length=16, choices=Kind, default=Kind.SALES_VISIT)
    vehicle = models.CharField(max_length=200, blank=True)
    status = models.CharField(max_length=16, choices=Status, default=Status.SET)
    set_by = models.CharField(max_length=16, choices=Actor)
    set_by_user = models.ForeignKey(
        settings.AUTH_USER_MODEL,
        null=True,
        blank=True,
        on_delete=models.SET_NULL,
        related_name="+",
    )
    evidence = models.TextField(
        blank=True, help_text="What it was made from: the transcript's line, a text."
    )
    change_requested = models.TextField(
        blank=True,
        help_text="The lead's reply asking to move it (R, or a new time), for a person "
        "to act on; cleared when it is moved or marked.",
    )
    replaces = models.OneToOneField(
        "self",
        null=True,
        blank=True,
        on_delete=models.SET_NULL,
        related_name="replaced_by",
        help_text="The appointment this one moved (rescheduled).",
    )
    created_at = models.DateTimeField(auto_now_add=True)
    changed_at = models.DateTimeField(auto_now=True)

    class Meta:
        ordering = ["starts_at", "pk"]
        indexes = [
            models.Index(fields=["account", "starts_at"], name="appointment_day_idx"),
            models.Index(fields=["account", "phone"], name="appointment_lead_idx"),
        ]

    def __str__(self) -> str:
        return f"Appointment {self.pk} ({self.status})"

    @property
    def lead_name(self) -> str:
        return f"{self.first_name} {self.last_name}".strip() or self.phone or "Lead"


class AppointmentChange(models.Model):
    """One step of an appointment's life: from which status to which, by whom, when."""

    appointment = models.ForeignKey(
        Appointment, on_delete=models.CASCADE, related_name="changes"
    )
    status_from = models.CharField(max_length=16, choices=Status, blank=True)
    status_to = models.CharField(max_length=16, choices=Status)
    by = models.CharField(max_length=16, choices=Actor)
    by_user = models.ForeignKey(
        settings.AUTH_USER_MODEL,
        null=True,
        blank=True,
        on_delete=models.SET_NULL,
        related_name="+",
    )
    note = models.TextField(blank=True)
    at = models.DateTimeField(auto_now_add=True)

    class Meta:
        ordering = ["at", "pk"]

    def __str__(self) -> str:
        return f"{self.status_from or 'new'} → {self.status_to} by {self.by}"


class ReminderKind(models.TextChoices):
    BOOKED = "booked", "When set"
    DAY_BEFORE = "day_before", "The day before"
    TWO_HOURS = "two_hours", "Two hours before"


class Reminder(models.Model):
    """A reminder text of an appointment: the text itself waits in texting's table for its
    time (texting's sweep hands it to the provider when due), and is canceled if the
    appointment is moved, cancelled or marked first."""

    appointment = models.ForeignKey(
        Appointment, on_delete=models.CASCADE, related_name="reminders"
    )
    kind = models.CharField(max_length=16, choices=ReminderKind)
    text = models.OneToOneField(
        Text, null=True, blank=True, on_delete=models.SET_NULL, related_name="+"
    )
    created_at = models.DateTimeField(auto_now_add=True)

    class Meta:
        constraints = [
            models.UniqueConstraint(
                fields=["appointment", "kind"], name="one_reminder_of_a_kind"
            )
        ]

    def __str__(self) -> str:
        return (
            f"{self.get_kind_display()} reminder of appointment {self.appointment_id}"
        )


class RollupAppointment(models.Model):
    """The appointment counts of one account's day (appointments/rollup.py), per agent
    and source of the call (None: no call): ``leads_set``, the answered leads received
    that day an appointment was set for; ``due_*``, the agreed appointments starting that
    day by status. Beside the dashboard's rollup (scoring), computed with its days."""

    account = models.ForeignKey(Account, on_delete=models.CASCADE, related_name="+")
    day = models.DateField()
    agent_id = models.IntegerField(null=True)
    # None (not ""): an appointment without a call has no source, as the data says.
    source = models.CharField(max_length=45, null=True)  # noqa: DJ001
    leads_set = models.PositiveIntegerField(default=0)
    due_set = models.PositiveIntegerField(default=0)
    due_confirmed = models.PositiveIntegerField(default=0)
    due_kept = models.PositiveIntegerField(default=0)
    due_no_show = models.PositiveIntegerField(default=0)

    class Meta:
        indexes = [models.Index(fields=["account", "day"])]

    def __str__(self) -> str:
        return f"Appointments of account {self.account_id} on {self.day}"
