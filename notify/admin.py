"""Notify in the admin: on the account's page its CRM addresses, alert wait and who is
told what; every message sent (the CRM write-backs, alerts and reports) with its status
and content, and "send again"."""

from __future__ import annotations

from django.contrib import admin
from django.db.models import QuerySet
from django.http import HttpRequest
from django.template.defaultfilters import pluralize
from django.utils.html import format_html

from core.admin import ReadOnlyAdminMixin, zoned
from notify.models import AlertSubscription, Message, MessageStatus, NotifySettings
from notify.services import message_email, message_send_again


class NotifySettingsInline(admin.StackedInline):
    """The account's CRM write-back and alert wait; left untouched, nothing is stored."""

    model = NotifySettings
    extra = 1
    max_num = 1
    verbose_name = verbose_name_plural = "CRM write-back and alerts"


class AlertSubscriptionInline(admin.TabularInline):
    """Who is told what. Without a row, the account's managers get every alert by e-mail."""

    model = AlertSubscription
    extra = 0
    autocomplete_fields = ["user"]
    verbose_name_plural = "alerts (without a row, the account's managers are told of every alert by e-mail)"


@admin.register(AlertSubscription)
class AlertSubscriptionAdmin(admin.ModelAdmin):
    list_display = ["user", "account", "kind", "by_email", "by_text", "outside_hours"]
    list_filter = ["kind", "by_email", "by_text", "account__organization"]
    list_select_related = ["user", "account"]
    search_fields = ["user__email", "user__username", "account__name"]
    autocomplete_fields = ["user", "account"]


@admin.register(Message)
class MessageAdmin(ReadOnlyAdminMixin, admin.ModelAdmin):
    """Every message: support's answer to "did the CRM get it?"; "send again" for one."""

    list_display = [
        "id",
        "created",
        "kind",
        "channel",
        "status",
        "to_short",
        "subject",
        "attempts",
        "error_short",
    ]
    list_filter = ["status", "kind", "alert", "channel", "account__organization"]
    list_select_related = ["account"]
    search_fields = ["to", "subject", "key"]
    date_hierarchy = "created_at"
    raw_id_fields = ["call", "user", "account"]
    actions = ["send_again"]
    fields = readonly_fields = (
        "kind",
        "alert",
        "channel",
        "status",
        "error",
        "account",
        "call",
        "user",
        "to",
        "subject",
        "attempts",
        "created_at",
        "due_at",
        "sent_at",
        "key",
        "message_sent",
    )

    @admin.display(description="created", ordering="created_at")
    def created(self, obj: Message) -> str:
        return zoned(obj.created_at, obj.account.timezone if obj.account else None)

    @admin.display(description="to")
    def to_short(self, obj: Message) -> str:
        return ", ".join(obj.recipients)[:60]

    @admin.display(description="error")
    def error_short(self, obj: Message) -> str:
        return obj.error[:60]

    @admin.display(description="message sent")
    def message_sent(self, obj: Message) -> str:
        """The whole e-mail as the mail server gets it (headers, parts, the ADF)."""
        if obj.channel != "email":
            return format_html("<pre>{}</pre>", obj.text)
        raw = message_email(obj).message().as_string()
        return format_html("<pre style='white-space: pre-wrap'>{}</pre>", raw[:200_000])

    def has_resend_permission(self, request: HttpRequest) -> bool:
        return request.user.has_perm("notify.change_message")

    @admin.action(description="Send again", permissions=["resend"])
    def send_again(self, request: HttpRequest, queryset: QuerySet[Message]) -> None:
        count = 0
        for message in queryset.filter(channel="email").exclude(
            status=MessageStatus.SENDING
        ):
            message_send_again(message=message)
            count += 1
        self.message_user(request, f"{count} message{pluralize(count)} queued again.")

    def get_queryset(self, request: HttpRequest) -> QuerySet[Message]:
        return super().get_queryset(request).defer("images")
