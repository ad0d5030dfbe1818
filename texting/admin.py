"""Texting in the admin: the account's texting settings on its page (beside its dialing
settings), every text with its status, the numbers that opted out, and the texts to a
number of several organizations that joined no thread."""

from __future__ import annotations

import re
from typing import Any

from django import forms
from django.contrib import admin
from django.http import HttpRequest

from accounts.forms import number_taken_check
from accounts.models import E164
from core.admin import ReadOnlyAdminMixin, zoned
from texting.compose import PLACEHOLDERS, placeholders_unknown
from texting.models import OptOut, Text, TextingSettings, UnroutedText

SERVICE_SID = re.compile(r"^MG[0-9a-fA-F]{32}$")
TEMPLATES = [
    "not_reached_template",
    "no_agent_template",
    "waiting_template",
    "instant_template",
    "help_template",
]


class TextingSettingsForm(forms.ModelForm):
    class Meta:
        model = TextingSettings
        fields = [
            "account",
            "enabled",
            "sender",
            "quiet_start",
            "quiet_end",
            "automatic_limit",
            "not_reached_template",
            "no_agent_template",
            "waiting_template",
            "instant_enabled",
            "instant_template",
            "help_template",
            "call_me_keywords",
        ]
        widgets = {name: forms.Textarea(attrs={"rows": 3}) for name in TEMPLATES}

    def clean_sender(self) -> str:
        sender = str(self.cleaned_data.get("sender") or "").strip()
        if sender and not (re.match(E164.regex, sender) or SERVICE_SID.match(sender)):
            raise forms.ValidationError(
                "Give a number in E.164 (+13035550100) or a Twilio Messaging Service SID "
                "(MG followed by 32 hexadecimal digits)."
            )
        return sender

    def clean(self) -> dict[str, Any]:
        cleaned = super().clean() or {}
        for name in TEMPLATES:
            try:
                unknown = placeholders_unknown(cleaned.get(name) or "")
            except ValueError:
                self.add_error(name, "A brace is left open: write {first_name}, etc.")
                continue
            if unknown:
                self.add_error(
                    name,
                    f"Unknown placeholder {{{unknown[0]}}}: use "
                    + ", ".join(f"{{{p}}}" for p in PLACEHOLDERS)
                    + ".",
                )
        start, end = cleaned.get("quiet_start"), cleaned.get("quiet_end")
        if start and end and start >= end:
            self.add_error(
                "quiet_end", "Texts may go until a time after they may start."
            )
        account = cleaned.get("account") or getattr(self.instance, "account", None)
        sender = cleaned.get("sender", "")
        if cleaned.get("enabled") and account and not (sender or account.caller_id):
            self.add_error(
                "sender",
                "Texting needs a sending number: give one, or the account a caller ID.",
            )
        if sender and account and "sender" in self.changed_data:
            # Against every account of another organization, by sending number and by
            # caller ID; an unchanged number is left for the overview's conflicts.
            number_taken_check(self, "sender", account.organization_id, sender)
        return cleaned


class TextingSettingsInline(admin.StackedInline):
    """The account's texting settings, or one form with the defaults (texting off): left
    untouched, saving the account stores nothing."""

    model = TextingSettings
    form = TextingSettingsForm
    extra = 1
    max_num = 1
    verbose_name = verbose_name_plural = "texting settings"


@admin.register(TextingSettings)
class TextingSettingsAdmin(admin.ModelAdmin):
    form = TextingSettingsForm
    list_display = [
        "account",
        "enabled",
        "sender",
        "quiet_start",
        "quiet_end",
        "automatic_limit",
        "instant_enabled",
    ]
    list_filter = ["enabled", "account__organization"]
    list_select_related = ["account"]
    search_fields = ["account__name", "sender"]
    autocomplete_fields = ["account"]

    def get_readonly_fields(self, request: HttpRequest, obj: Any = None) -> list[str]:
        return ["account"] if obj else []


@admin.register(Text)
class TextAdmin(ReadOnlyAdminMixin, admin.ModelAdmin):
    """Every text, as sent or received, with its status: support's answer to "did the
    lead get it?"."""

    list_display = [
        "sent",
        "account",
        "lead_phone",
        "direction",
        "purpose",
        "status",
        "short_body",
        "error",
    ]
    list_filter = ["status", "direction", "purpose", "account__organization"]
    list_select_related = ["account"]
    search_fields = ["lead_phone", "to_number", "provider_id", "body"]
    raw_id_fields = ["call", "queued_call", "sent_by", "recipient"]
    date_hierarchy = "created_at"

    @admin.display(description="created", ordering="created_at")
    def sent(self, obj: Text) -> str:
        return zoned(obj.created_at, obj.account.timezone)

    @admin.display(description="text")
    def short_body(self, obj: Text) -> str:
        return obj.body if len(obj.body) <= 60 else obj.body[:59] + "…"


@admin.register(OptOut)
class OptOutAdmin(ReadOnlyAdminMixin, admin.ModelAdmin):
    """Numbers that texted STOP (and START, when they did), and replies that read like an
    opt-out: paused until a person on the call page confirms or dismisses them."""

    list_display = [
        "phone",
        "account",
        "opted_out_at",
        "message",
        "state",
        "decided_by",
        "opted_in_at",
    ]
    list_filter = ["confirmed", "account__organization", "account"]
    list_select_related = ["account", "decided_by"]
    search_fields = ["phone"]


@admin.register(UnroutedText)
class UnroutedTextAdmin(ReadOnlyAdminMixin, admin.ModelAdmin):
    """Leads' texts to a number accounts of several organizations use: in no thread, for
    support to read (a STOP among them is honoured by hand) once the number is settled."""

    list_display = ["received", "to_number", "from_number", "body", "reason"]
    search_fields = ["to_number", "from_number", "body"]
    date_hierarchy = "received_at"

    def has_delete_permission(self, request: HttpRequest, obj: Any = None) -> bool:
        # Support clears a text once the number is settled and the lead answered.
        return admin.ModelAdmin.has_delete_permission(self, request, obj)

    @admin.display(description="received", ordering="received_at")
    def received(self, obj: UnroutedText) -> str:
        return zoned(obj.received_at)
