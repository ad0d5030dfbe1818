"""Organizations, their accounts (the dealers), teams and the credentials that reach them."""

from __future__ import annotations

from datetime import datetime

from django.core.validators import RegexValidator
from django.db import models
from django.db.models import Q
from django.utils import timezone
from django_countries.fields import CountryField

from accounts.schedules import WEEKDAYS, validate_timezone

E164 = RegexValidator(
    r"^\+[1-9]\d{6,14}$", "Enter a phone number in E.164 format, e.g. +13035550100."
)


class Organization(models.Model):
    name = models.CharField(max_length=200, unique=True)
    created_at = models.DateTimeField(auto_now_add=True)

    class Meta:
        ordering = ["name"]

    def __str__(self) -> str:
        return self.name


class Account(models.Model):
    """A dealer. Its timezone, country and schedule are the defaults of its users."""

    organization = models.ForeignKey(
        Organization, on_delete=models.PROTECT, related_name="accounts"
    )
    name = models.CharField(max_length=45)
    timezone = models.CharField(
        max_length=64, default="America/New_York", validators=[validate_timezone]
    )
    country = CountryField(default="US")
    postal_code = models.CharField(max_length=45, blank=True)
    address = models.CharField(max_length=45, blank=True)
    city = models.CharField(max_length=45, blank=True)
    caller_id = models.CharField(
        "caller ID number",
        max_length=16,
        blank=True,
        validators=[E164],
        help_text="Shown to leads; E.164.",
    )
    schedule_active = models.BooleanField(
        "default schedule active",
        default=True,
        help_text="The weekly schedule new users of this account copy.",
    )
    is_test = models.BooleanField(
        "test account",
        default=False,
        help_text="Leads are processed; no real call is placed.",
    )
    redact_numbers = models.BooleanField(
        "redact card and identity numbers",
        default=True,
        help_text="Card numbers, social security numbers and security codes said on a "
        "call are taken out of its transcript and silenced in its recording, and "
        "Twilio's copy of the recording is deleted once ours is stored.",
    )
    is_active = models.BooleanField(default=True)
    created_at = models.DateTimeField(auto_now_add=True)

    class Meta:
        ordering = ["organization__name", "name"]
        constraints = [
            models.UniqueConstraint(
                fields=["organization", "name"], name="account_name_unique_in_org"
            )
        ]

    def __str__(self) -> str:
        return self.name

    @property
    def country_code(self) -> str:
        """ISO 3166 code: the region national phone numbers are read in."""
        return str(self.country.code)  # type: ignore[attr-defined]

    @property
    def country_name(self) -> str:
        return str(self.country.name)  # type: ignore[attr-defined]


class ScheduleDay(models.Model):
    """One day of a weekly schedule: open from ``start_time`` to ``end_time`` when active."""

    weekday = models.PositiveSmallIntegerField(
        choices=[(i, day.title()) for i, day in enumerate(WEEKDAYS)]
    )
    active = models.BooleanField(default=True)
    start_time = models.TimeField()
    end_time = models.TimeField()

    class Meta:
        abstract = True
        ordering = ["weekday"]

    def __str__(self) -> str:
        hours = (
            f"{self.start_time:%H:%M}-{self.end_time:%H:%M}"
            if self.start_time and self.end_time
            else "(no hours)"
        )
        return f"{WEEKDAYS[self.weekday].title()} {hours}"


class AccountScheduleDay(ScheduleDay):
    account = models.ForeignKey(
        Account, on_delete=models.CASCADE, related_name="schedule_days"
    )

    class Meta(ScheduleDay.Meta):
        constraints = [
            models.UniqueConstraint(
                fields=["account", "weekday"], name="account_schedule_day_unique"
            ),
            models.CheckConstraint(
                condition=Q(end_time__gt=models.F("start_time")),
                name="account_day_end_after_start",
            ),
        ]


class Team(models.Model):
    account = models.ForeignKey(Account, on_delete=models.CASCADE, related_name="teams")
    name = models.CharField(max_length=100)

    class Meta:
        ordering = ["account_id", "name"]
        constraints = [
            models.UniqueConstraint(
                fields=["account", "name"], name="team_name_unique_in_account"
            )
        ]

    def __str__(self) -> str:
        return self.name


class ApiCredential(models.Model):
    """An integrator's ``apiuser``: reaches one organization, optionally only some accounts."""

    organization = models.ForeignKey(
        Organization, on_delete=models.CASCADE, related_name="credentials"
    )
    api_user = models.CharField("API user", max_length=64, unique=True)
    name = models.CharField(
        max_length=200, blank=True, help_text="Who holds it, e.g. the CRM's name."
    )
    accounts = models.ManyToManyField(
        Account,
        blank=True,
        related_name="credentials",
        help_text="Leave empty for every account of the organization.",
    )
    created_at = models.DateTimeField(auto_now_add=True)

    class Meta:
        ordering = ["organization__name", "api_user"]
        verbose_name = "API credential"

    def __str__(self) -> str:
        return self.api_user


class HashedKeyQuerySet(models.QuerySet):
    def usable(self, at: datetime | None = None) -> HashedKeyQuerySet:
        at = at or timezone.now()
        return self.filter(revoked_at__isnull=True).filter(
            Q(expires_at__isnull=True) | Q(expires_at__gt=at)
        )


class HashedKey(models.Model):
    """A secret shown once at issue. Only its SHA-256 is kept; ``prefix`` finds it."""

    prefix = models.CharField(max_length=16, unique=True, editable=False)
    key_hash = models.CharField(max_length=64, editable=False)
    created_at = models.DateTimeField(auto_now_add=True)
    expires_at = models.DateTimeField(
        null=True, blank=True, help_text="Set by rotation: the end of the grace period."
    )
    revoked_at = models.DateTimeField(null=True, blank=True)
    last_used_at = models.DateTimeField(
        "last used",
        null=True,
        blank=True,
        editable=False,
        help_text="When the key last authenticated a request (updated at most once a minute).",
    )

    objects = HashedKeyQuerySet.as_manager()

    class Meta:
        abstract = True
        ordering = ["-created_at"]

    def __str__(self) -> str:
        return f"{self.prefix}…"

    def is_usable(self, at: datetime | None = None) -> bool:
        at = at or timezone.now()
        return self.revoked_at is None and (
            self.expires_at is None or self.expires_at > at
        )


class ApiKey(HashedKey):
    credential = models.ForeignKey(
        ApiCredential, on_delete=models.CASCADE, related_name="keys"
    )

    class Meta(HashedKey.Meta):
        verbose_name = "API key"


class ScoredDataKey(HashedKey):
    """An account's own key for the scored data API ("My Account > API")."""

    account = models.ForeignKey(
        Account, on_delete=models.CASCADE, related_name="scored_data_keys"
    )
