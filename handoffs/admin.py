"""Handoffs in the admin: the account's limit (an inline on the account's page) and every
timer, read only, with its opening, closing and escalation."""

from __future__ import annotations

from django.contrib import admin

from core.admin import ReadOnlyAdminMixin
from handoffs.models import Handoff, HandoffSettings


class HandoffSettingsInline(admin.StackedInline):
    """The account's handoff limit; left untouched, the default (15 minutes) holds."""

    model = HandoffSettings
    extra = 1
    max_num = 1
    verbose_name = verbose_name_plural = "handoff limit"


@admin.register(Handoff)
class HandoffAdmin(ReadOnlyAdminMixin, admin.ModelAdmin):
    list_display = [
        "id",
        "account",
        "phone",
        "kind",
        "opened_at",
        "opened_by",
        "closed_at",
        "closed_by",
        "escalated_at",
    ]
    list_filter = ["kind", "closed_by", "account__organization"]
    list_select_related = ["account"]
    search_fields = ["phone", "account__name"]
    raw_id_fields = ["call"]
