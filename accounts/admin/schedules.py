"""Weekly schedules and timezones on the account and user pages."""

from __future__ import annotations

from typing import Any

from django.contrib import admin
from django.db import models
from django.http import HttpRequest

from accounts.forms import (
    ScheduleDayForm,
    schedule_day_initial,
    timezone_choice_field,
)
from accounts.models import (
    AccountScheduleDay,
)
from accounts.schedules import WEEKDAYS


class ScheduleDayInline(admin.TabularInline):
    """The seven days of a weekly schedule. Missing days are offered as blank rows, weekday preset."""

    form = ScheduleDayForm
    fields = ["weekday", "active", "start_time", "end_time"]
    max_num = 7
    verbose_name = "schedule day"
    verbose_name_plural = (
        "weekly schedule (local time; an end of 23:59 means until midnight)"
    )

    def get_extra(self, request: HttpRequest, obj: Any = None, **kwargs: Any) -> int:
        return len(missing_weekdays(obj))


def missing_weekdays(owner: Any) -> list[int]:
    """Weekdays ``owner`` (an account or a user) has no schedule row for."""
    have = (
        set(owner.schedule_days.values_list("weekday", flat=True))
        if owner is not None and owner.pk
        else set()
    )
    return [day for day in range(len(WEEKDAYS)) if day not in have]


class ScheduleDaysMixin(admin.ModelAdmin):
    """Prefills each offered schedule row: its weekday and the default hours (``schedule_day_initial``;
    ``get_formset_kwargs`` is a ModelAdmin hook)."""

    def get_formset_kwargs(
        self, request: HttpRequest, obj: Any, inline: Any, prefix: str
    ) -> dict[str, Any]:
        kwargs: dict[str, Any] = super().get_formset_kwargs(
            request, obj, inline, prefix
        )
        if isinstance(inline, ScheduleDayInline):
            kwargs["initial"] = schedule_day_initial(missing_weekdays(obj))
        return kwargs


class AccountScheduleDayInline(ScheduleDayInline):
    model = AccountScheduleDay


class TimezoneSelectMixin(admin.ModelAdmin):
    """``timezone`` fields as a select of IANA names rather than free text."""

    def formfield_for_dbfield(
        self, db_field: models.Field, request: HttpRequest, **kwargs: Any
    ) -> Any:
        if db_field.name == "timezone":
            return timezone_choice_field(
                label=str(db_field.verbose_name).capitalize(),
                initial=db_field.get_default(),
                required=not db_field.blank,
            )
        return super().formfield_for_dbfield(db_field, request, **kwargs)
