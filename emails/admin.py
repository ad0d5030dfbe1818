"""E-mail to leads in the admin: each account's settings, and every e-mail with its status
(support's answer to "did the lead get it?")."""

from __future__ import annotations

from typing import Any

from django.contrib import admin, messages
from django.db.models import QuerySet
from django.http import HttpRequest

from core.admin import ReadOnlyAdminMixin, zoned
from emails.models import EmailSettings, LeadEmail
from emails.services import lead_email_send_again


@admin.register(EmailSettings)
class EmailSettingsAdmin(admin.ModelAdmin):
    list_display = ["account", "enabled", "from_email", "reply_to", "automatic_limit"]
    list_filter = ["enabled", "account__organization"]
    list_select_related = ["account"]
    search_fields = ["account__name", "from_email", "reply_to"]
    autocomplete_fields = ["account"]

    def get_readonly_fields(self, request: HttpRequest, obj: Any = None) -> list[str]:
        return ["account"] if obj else []


@admin.register(LeadEmail)
class LeadEmailAdmin(ReadOnlyAdminMixin, admin.ModelAdmin):
    list_display = [
        "created",
        "account",
        "to_email",
        "purpose",
        "status",
        "attempts",
        "subject",
        "error",
    ]
    list_filter = ["status", "purpose", "account__organization", "account"]
    list_select_related = ["account"]
    search_fields = ["to_email", "lead_phone", "message_id"]
    raw_id_fields = ["call"]
    date_hierarchy = "created_at"
    actions = ["send_again"]

    @admin.action(description="Send the selected failed e-mails again")
    def send_again(self, request: HttpRequest, queryset: QuerySet[LeadEmail]) -> None:
        sent = sum(lead_email_send_again(email=email) for email in queryset)
        self.message_user(
            request,
            f"{sent} e-mail(s) will be sent again; only failed ones are.",
            messages.SUCCESS,
        )

    @admin.display(description="created", ordering="created_at")
    def created(self, obj: LeadEmail) -> str:
        return zoned(obj.created_at, obj.account.timezone)
