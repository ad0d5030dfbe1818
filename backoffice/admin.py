"""The account and call pages of support's admin, each registered once with what every
app adds to it; and the toolkit's rows: side effects (core.outbox) with their status and
reason, and sweep items set aside (core.sweeps), each with "send again"."""

from __future__ import annotations

from django.contrib import admin
from django.db import transaction
from django.db.models import QuerySet
from django.http import HttpRequest
from django.template.defaultfilters import pluralize

from accounts.admin import AccountAdmin
from accounts.models import Account
from appointments.admin import AppointmentInline
from calls.admin import CallAdmin, DialingSettingsInline
from calls.models import Call
from core.admin import ReadOnlyAdminMixin, WithinFilter, zoned
from core.models import Effect, EffectStatus, SetAside
from core.outbox import effect_send_again
from core.sweeps import send_again as sweep_item_send_again
from handoffs.admin import HandoffSettingsInline
from notify.admin import AlertSubscriptionInline, NotifySettingsInline
from scoring.admin import ScoredFilter, ScoreInline
from texting.admin import TextingSettingsInline

# Apps depend downward, so accounts and calls never know what the apps above them show on
# their pages: each app supplies its inlines and filters, and the back office, above them
# all, composes them here.


@admin.register(Account)
class AccountWithSettingsAdmin(AccountAdmin):
    """The account admin (``accounts.admin.AccountAdmin``) with the account's dialing
    settings (calls), texting settings (texting), handoff limit (handoffs), CRM write-back
    and alerts (notify)."""

    inlines = [
        *AccountAdmin.inlines,
        DialingSettingsInline,
        TextingSettingsInline,
        HandoffSettingsInline,
        NotifySettingsInline,
        AlertSubscriptionInline,
    ]


@admin.register(Call)
class CallWithScoreAdmin(CallAdmin):
    """The call admin (``calls.admin.CallAdmin``) with the call's score and a scored
    filter (scoring), and its appointments (appointments)."""

    inlines = [*CallAdmin.inlines, ScoreInline, AppointmentInline]
    list_filter = [*CallAdmin.list_filter, ScoredFilter]


class CreatedWithin(WithinFilter):
    title = "created"
    parameter_name = "created"
    field = "created_at"


@admin.register(Effect)
class EffectAdmin(ReadOnlyAdminMixin, admin.ModelAdmin):
    """What each change set off (a write-back, an alert, a text, suggestions), and why
    one failed: the answer to "why did the CRM not hear of this call?"."""

    list_display = ["id", "created", "kind", "about", "status", "tries", "error_short"]
    list_filter = ["status", "kind", CreatedWithin]
    search_fields = ["key", "about"]
    date_hierarchy = "created_at"
    actions = ["send_again"]
    fields = readonly_fields = (
        "kind",
        "about",
        "status",
        "error",
        "tries",
        "params",
        "key",
        "created_at",
        "due_at",
        "dispatched_at",
        "done_at",
    )

    @admin.display(description="created", ordering="created_at")
    def created(self, obj: Effect) -> str:
        return zoned(obj.created_at)

    @admin.display(description="error")
    def error_short(self, obj: Effect) -> str:
        return obj.error[:80]

    def has_resend_permission(self, request: HttpRequest) -> bool:
        return request.user.has_perm("core.change_effect")

    @admin.action(description="Send again", permissions=["resend"])
    def send_again(self, request: HttpRequest, queryset: QuerySet[Effect]) -> None:
        count = 0
        with transaction.atomic():
            for row in queryset.exclude(status=EffectStatus.DONE):
                effect_send_again(effect=row)
                count += 1
        self.message_user(request, f"{count} effect{pluralize(count)} sent again.")


@admin.register(SetAside)
class SetAsideAdmin(ReadOnlyAdminMixin, admin.ModelAdmin):
    """Items a sweep failed on again and again; "sweep again" once the cause is mended."""

    list_display = ["sweep", "item", "set_aside", "failures", "last_failed", "error"]
    list_filter = ["set_aside", "sweep"]
    search_fields = ["sweep", "item"]
    actions = ["sweep_again"]

    @admin.display(description="last failed", ordering="last_failed_at")
    def last_failed(self, obj: SetAside) -> str:
        return zoned(obj.last_failed_at)

    def has_resend_permission(self, request: HttpRequest) -> bool:
        return request.user.has_perm("core.change_setaside")

    @admin.action(description="Sweep again", permissions=["resend"])
    def sweep_again(self, request: HttpRequest, queryset: QuerySet[SetAside]) -> None:
        count = sum(
            sweep_item_send_again(sweep=row.sweep, item=row.item) for row in queryset
        )
        self.message_user(request, f"{count} item{pluralize(count)} swept again.")
