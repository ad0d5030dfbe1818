"""Spoken revocations in the admin: each "don't call me again" read from a transcript,
the sentence, and who decided what (a confirmed one is in the consent ledger too)."""

from __future__ import annotations

from django.contrib import admin

from consenting.models import SpokenRevocation
from core.admin import ReadOnlyAdminMixin


@admin.register(SpokenRevocation)
class SpokenRevocationAdmin(ReadOnlyAdminMixin, admin.ModelAdmin):
    list_display = [
        "suggested_at",
        "phone",
        "account",
        "call",
        "sentence",
        "decision",
        "decided_by",
        "decided_at",
    ]
    list_filter = ["decision", "account__organization", "account"]
    list_select_related = ["account", "call", "decided_by"]
    search_fields = ["phone"]
    date_hierarchy = "suggested_at"
