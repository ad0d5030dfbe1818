"""Dialing settings in the admin: their own list, and the inline the account's page shows
(``backoffice.admin`` puts it there: calls depend on accounts, never the reverse)."""

from __future__ import annotations

import json
from typing import Any

from django import forms
from django.contrib import admin
from django.http import HttpRequest
from django.template.defaultfilters import pluralize

from calls.models import (
    DialingSettings,
    default_retry_cadence,
)

# --- dialing settings


class RetryCadenceField(forms.CharField):
    """Seconds as a comma-separated list ("0, 120, 600"); a JSON list is accepted too."""

    def prepare_value(self, value: Any) -> Any:
        if isinstance(value, list):
            return ", ".join(str(item) for item in value)
        if isinstance(value, str) and value.startswith("["):
            try:
                return ", ".join(str(item) for item in json.loads(value))
            except (ValueError, TypeError):
                return value
        return value

    def to_python(self, value: Any) -> list[int]:  # type: ignore[override]
        text = str(super().to_python(value)).strip().removeprefix("[").removesuffix("]")
        items = [
            item.strip() for item in text.replace(";", ",").split(",") if item.strip()
        ]
        if not items:
            raise forms.ValidationError(
                "Give at least one number of seconds, e.g. 0, 120, 600."
            )
        seconds = []
        for item in items:
            try:
                number = int(item)
            except ValueError:
                raise forms.ValidationError(
                    f"{item!r} is not a whole number of seconds. Write e.g. 0, 120, 600."
                ) from None
            if number < 0:
                raise forms.ValidationError(
                    f"{number} is negative; waits are 0 seconds or more."
                )
            seconds.append(number)
        return seconds


class DialingSettingsForm(forms.ModelForm):
    retry_cadence = RetryCadenceField(
        initial=default_retry_cadence,
        label="retry cadence (seconds)",
        help_text="The first number is the first attempt, made at once; each next number is how long to "
        "wait after a missed attempt before dialing the lead again, e.g. 0, 120, 600: now, 2 minutes "
        "after the first miss, 10 minutes after the second. With fewer numbers than attempts, the last "
        "wait repeats; there cannot be more numbers than attempts.",
    )

    class Meta:
        model = DialingSettings
        fields = [
            "account",
            "ring_mode",
            "agent_ring_seconds",
            "press_one_required",
            "lead_attempt_limit",
            "retry_cadence",
            "agent_rounds",
            "agent_round_pause_seconds",
            "no_agent_policy",
        ]

    def clean(self) -> dict[str, Any]:
        cleaned = super().clean() or {}
        limit, cadence = cleaned.get("lead_attempt_limit"), cleaned.get("retry_cadence")
        if limit is not None and limit < 1:
            self.add_error("lead_attempt_limit", "The lead is dialed at least once.")
        elif limit is not None and cadence is not None and len(cadence) > limit:
            self.add_error(
                "retry_cadence",
                f"{len(cadence)} numbers for {limit} attempt{pluralize(limit)}: the extra "
                f"waits would never be used. Give at most {limit}, or raise the attempt limit.",
            )
        return cleaned


SETTINGS_FIELDS = [
    "ring_mode",
    "agent_ring_seconds",
    "press_one_required",
    "lead_attempt_limit",
    "retry_cadence",
    "agent_rounds",
    "agent_round_pause_seconds",
    "no_agent_policy",
]
RUNS_ON_DEFAULTS = (
    "This account has no dialing settings of its own: it dials with the defaults shown "
    "here. Change any of them and save to give it its own; left as they are, nothing is stored."
)
RUNS_ON_ITS_OWN = (
    "This account dials with its own settings, shown here. Tick “Delete” and save to go back "
    "to the defaults."
)


class DialingSettingsInline(admin.StackedInline):
    """The settings an account actually dials with, on the account's page: its own row, or one
    form prefilled with the defaults (``dialing_settings`` falls back to the same model
    defaults). Saving validates exactly as the dialing settings page does; an untouched
    defaults form stores nothing."""

    model = DialingSettings
    form = DialingSettingsForm
    extra = 1
    max_num = 1
    verbose_name = verbose_name_plural = "dialing settings"

    def get_fieldsets(self, request: HttpRequest, obj: Any = None) -> Any:
        own = (
            obj is not None
            and obj.pk is not None
            and DialingSettings.objects.filter(account=obj).exists()
        )
        return [
            (
                None,
                {
                    "fields": SETTINGS_FIELDS,
                    "description": RUNS_ON_ITS_OWN if own else RUNS_ON_DEFAULTS,
                },
            )
        ]


@admin.register(DialingSettings)
class DialingSettingsAdmin(admin.ModelAdmin):
    """One row per account; an account without one dials with the defaults shown on the add page."""

    form = DialingSettingsForm
    list_display = [
        "account",
        "organization",
        "ring_mode",
        "agent_ring_seconds",
        "press_one_required",
        "lead_attempt_limit",
        "cadence",
        "agent_rounds",
        "no_agent_policy",
    ]
    list_filter = ["account__organization", "account", "ring_mode", "no_agent_policy"]
    list_select_related = ["account__organization"]
    search_fields = ["account__name", "account__organization__name"]
    autocomplete_fields = ["account"]

    def get_readonly_fields(self, request: HttpRequest, obj: Any = None) -> list[str]:
        return ["account"] if obj else []

    @admin.display(description="organization", ordering="account__organization__name")
    def organization(self, obj: DialingSettings) -> str:
        return obj.account.organization.name

    @admin.display(description="retry cadence (s)")
    def cadence(self, obj: DialingSettings) -> str:
        return ", ".join(str(item) for item in obj.retry_cadence or [])
