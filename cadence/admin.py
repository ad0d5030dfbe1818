"""The follow-up cadence in the admin: each account's cadence (on or off) with its steps
inline (none: the default ones), and every planned step, read only, with its status and
why it was stopped or skipped."""

from __future__ import annotations

from django.contrib import admin

from cadence.models import DEFAULT_STEPS, Cadence, CadenceStep, PlannedStep
from core.admin import ReadOnlyAdminMixin


def _default_words() -> str:
    return ", ".join(
        f"{channel} {'at once' if hours == 0 else f'on day {hours // 24}'}"
        for hours, channel, _, _ in DEFAULT_STEPS
    )


class CadenceStepInline(admin.TabularInline):
    model = CadenceStep
    extra = 0
    verbose_name_plural = f"steps (none: the default, {_default_words()})"


@admin.register(Cadence)
class CadenceAdmin(admin.ModelAdmin):
    list_display = ["account", "enabled"]
    list_filter = ["enabled", "account__organization"]
    list_select_related = ["account"]
    search_fields = ["account__name"]
    raw_id_fields = ["account"]
    inlines = [CadenceStepInline]


@admin.register(PlannedStep)
class PlannedStepAdmin(ReadOnlyAdminMixin, admin.ModelAdmin):
    list_display = [
        "id",
        "account",
        "phone",
        "position",
        "channel",
        "due_at",
        "status",
        "reason",
    ]
    list_filter = ["status", "channel", "account__organization"]
    list_select_related = ["account"]
    search_fields = ["phone", "account__name"]
    raw_id_fields = ["call", "made_call", "made_text", "stopped_by"]
