"""Users (agents, managers, scorers): the User API's resource and the service's sign-in."""

from __future__ import annotations

from django.contrib.auth.models import AbstractUser
from django.db import models

from accounts.models import E164, Account, Organization, ScheduleDay, Team
from accounts.schedules import validate_timezone


class User(AbstractUser):
    # The interface allows any string up to 75 characters (it defaults to an email address),
    # compared case-sensitively; Django's character rules for usernames do not apply.
    username = models.CharField(
        max_length=150,
        unique=True,
        error_messages={"unique": "The username has already been taken."},
    )
    first_name = models.CharField(max_length=45, blank=True)
    last_name = models.CharField(max_length=45, blank=True)
    email = models.EmailField(
        "email address", max_length=255, blank=True, db_index=True
    )
    phone_number = models.CharField(
        max_length=16, blank=True, db_index=True, validators=[E164]
    )
    company_role = models.CharField(max_length=255, blank=True)
    bio = models.CharField(max_length=255, blank=True)
    timezone = models.CharField(
        max_length=64, default="America/New_York", validators=[validate_timezone]
    )
    country = models.CharField(max_length=255, blank=True)
    twelve_hour_time_format = models.BooleanField(default=False)
    profile_picture = models.ImageField(
        upload_to="profile-pictures/", blank=True, max_length=255
    )
    # None: the user has no schedule of their own (the account's applies).
    schedule_active = models.BooleanField(null=True, blank=True)
    organizations = models.ManyToManyField(
        Organization, through="Membership", related_name="users", blank=True
    )
    accounts = models.ManyToManyField(Account, related_name="users", blank=True)
    teams = models.ManyToManyField(Team, related_name="users", blank=True)

    class Meta:
        ordering = ["id"]

    def __str__(self) -> str:
        return self.get_full_name() or self.username


class Membership(models.Model):
    """A user in an organization, with the user code that is unique there."""

    user = models.ForeignKey(User, on_delete=models.CASCADE, related_name="memberships")
    organization = models.ForeignKey(
        Organization, on_delete=models.CASCADE, related_name="memberships"
    )
    # NULL, not "", for "no code": the unique constraint must allow many users without one.
    code = models.CharField(max_length=10, null=True, blank=True)  # noqa: DJ001

    class Meta:
        ordering = ["organization_id", "code"]
        constraints = [
            models.UniqueConstraint(
                fields=["user", "organization"], name="membership_unique"
            ),
            models.UniqueConstraint(
                fields=["organization", "code"], name="user_code_unique_in_org"
            ),
            models.CheckConstraint(
                condition=models.Q(code__regex=r"^[0-9]+$"), name="user_code_numeric"
            ),
        ]

    def __str__(self) -> str:
        return (
            f"{self.organization} #{self.code}" if self.code else str(self.organization)
        )


class UserScheduleDay(ScheduleDay):
    user = models.ForeignKey(
        User, on_delete=models.CASCADE, related_name="schedule_days"
    )

    class Meta(ScheduleDay.Meta):
        constraints = [
            models.UniqueConstraint(
                fields=["user", "weekday"], name="user_schedule_day_unique"
            ),
            models.CheckConstraint(
                condition=models.Q(end_time__gt=models.F("start_time")),
                name="user_day_end_after_start",
            ),
        ]
