"""Organizations, accounts (with their schedule, teams and scored-data keys) and teams."""

from __future__ import annotations

from typing import Any

from django.conf import settings
from django.contrib import admin, messages
from django.db.models import QuerySet
from django.http import HttpRequest, HttpResponse
from django.urls import reverse
from django.utils.html import format_html
from django_countries.filters import CountryFilter

from accounts.admin.keys import (
    KeyToolsAdmin,
    ScoredDataKeyInline,
    last_used_of,
    newest_usable_prefix,
    usable_now,
)
from accounts.admin.schedules import (
    AccountScheduleDayInline,
    ScheduleDaysMixin,
    TimezoneSelectMixin,
)
from accounts.forms import (
    AccountForm,
)
from accounts.keys import key_prefix
from accounts.models import (
    Account,
    AccountScheduleDay,
    ApiCredential,
    Organization,
    ScoredDataKey,
    Team,
)
from accounts.services import (
    account_create,
    account_update,
    scored_data_key_issue,
    scored_data_key_revoke,
)
from core.admin import (
    ReadOnlyInline,
    ShownKey,
    count_of,
    describe,
    m2m_through,
    render_keys,
)


class TeamInline(admin.TabularInline):
    model = Team
    fields = ["name"]
    extra = 0
    show_change_link = True


class OrganizationAccountInline(ReadOnlyInline):
    model = Account
    fields = readonly_fields = ("name", "city", "timezone", "is_active", "is_test")


class OrganizationCredentialInline(ReadOnlyInline):
    model = ApiCredential
    fields = readonly_fields = ("api_user", "name", "created_at")
    verbose_name_plural = "API credentials"


@admin.register(Organization)
class OrganizationAdmin(admin.ModelAdmin):
    list_display = [
        "name",
        "accounts_count",
        "credentials_count",
        "users_count",
        "created_at",
    ]
    search_fields = ["name"]
    readonly_fields = ["created_at", "issue_credential"]
    inlines = [OrganizationAccountInline, OrganizationCredentialInline]

    @admin.display(description="new API credential")
    def issue_credential(self, obj: Organization) -> str:
        """The credential add page with this organization chosen: its picker lists only its accounts."""
        if not obj.pk:
            return "Save the organization first."
        return format_html(
            '<a href="{}?organization={}">Issue an API credential for this organization</a>',
            reverse("admin:accounts_apicredential_add"),
            obj.pk,
        )

    def get_queryset(self, request: HttpRequest) -> QuerySet[Organization]:
        membership = Organization._meta.get_field("memberships").related_model
        return (
            super()
            .get_queryset(request)
            .annotate(
                n_accounts=count_of(Account, "organization"),
                n_credentials=count_of(ApiCredential, "organization"),
                n_users=count_of(membership, "organization"),  # type: ignore[arg-type]
            )
        )

    @admin.display(description="accounts", ordering="n_accounts")
    def accounts_count(self, obj: Any) -> int:
        return obj.n_accounts

    @admin.display(description="credentials", ordering="n_credentials")
    def credentials_count(self, obj: Any) -> int:
        return obj.n_credentials

    @admin.display(description="users", ordering="n_users")
    def users_count(self, obj: Any) -> int:
        return obj.n_users


class AccountAdmin(ScheduleDaysMixin, TimezoneSelectMixin, KeyToolsAdmin):
    form = AccountForm
    list_display = [
        "name",
        "organization",
        "city",
        "timezone",
        "country",
        "teams_count",
        "users_count",
        "scored_data_key",
        "key_last_used",
        "is_active",
        "is_test",
    ]
    list_filter = ["organization", "is_active", "is_test", ("country", CountryFilter)]
    search_fields = ["name", "city", "postal_code", "caller_id", "organization__name"]
    list_select_related = ["organization"]
    autocomplete_fields = ["organization"]
    date_hierarchy = "created_at"
    fieldsets = [
        (
            None,
            {"fields": ["organization", "name", "is_active", "is_test", "created_at"]},
        ),
        (
            "Location",
            {"fields": ["address", "city", "postal_code", "country", "timezone"]},
        ),
        ("Calls", {"fields": ["caller_id", "schedule_active", "redact_numbers"]}),
    ]
    inlines = [TeamInline, AccountScheduleDayInline, ScoredDataKeyInline]
    actions = ["issue_selected", "revoke_selected"]
    issue_label = "Issue scored-data key"
    issue_action_label = "Issue scored-data key (shown once)"
    revoke_label = revoke_action_label = "Revoke scored-data keys"

    def get_readonly_fields(self, request: HttpRequest, obj: Any = None) -> list[str]:
        # Moving an account to another organization would silently change who can reach it.
        return ["created_at", "organization"] if obj else ["created_at"]

    def get_queryset(self, request: HttpRequest) -> QuerySet[Account]:
        return (
            super()
            .get_queryset(request)
            .annotate(
                n_teams=count_of(Team, "account"),
                n_users=count_of(m2m_through(Account, "users"), "account"),
                scored_data_prefix=newest_usable_prefix(ScoredDataKey, "account"),
                last_used=last_used_of(ScoredDataKey, "account"),
            )
        )

    @admin.display(
        description="key last used", ordering="last_used", empty_value="never"
    )
    def key_last_used(self, obj: Any) -> Any:
        return obj.last_used

    @admin.display(description="teams", ordering="n_teams")
    def teams_count(self, obj: Any) -> int:
        return obj.n_teams

    @admin.display(description="users", ordering="n_users")
    def users_count(self, obj: Any) -> int:
        return obj.n_users

    @admin.display(description="scored-data key")
    def scored_data_key(self, obj: Any) -> str:
        return f"{obj.scored_data_prefix}…" if obj.scored_data_prefix else "—"

    def issue_explanation(self, objects: list[Any]) -> list[str]:
        first = "A new scored-data key is issued and shown once, on the next page."
        if not ScoredDataKey.objects.filter(usable_now(), account__in=objects).exists():
            return [
                first,
                "This account has no scored-data key yet: the new key works at once.",
            ]
        return [
            first,
            f"The account's current key keeps working for {describe(settings.API_KEY_ROTATION_GRACE)}, then stops.",
        ]

    def revoke_explanation(self) -> list[str]:
        return [
            "Every scored-data key of the accounts below stops working now. This cannot be undone."
        ]

    def issue(self, request: HttpRequest, objects: list[Any]) -> HttpResponse:
        shown = []
        for account in objects:
            key = scored_data_key_issue(account=account)
            self.log_change(
                request, account, f"Issued scored-data key {key_prefix(key)}…"
            )
            shown.append(
                ShownKey(
                    str(account), self.change_url(account), "scored-data key", "", key
                )
            )
        return render_keys(
            self,
            request,
            title="New scored-data keys" if len(shown) > 1 else "New scored-data key",
            keys=shown,
            notes=[
                "This is the apikey of the scored call data API for this account only.",
                f"A previous key keeps working for {describe(settings.API_KEY_ROTATION_GRACE)}, then stops.",
            ],
        )

    def revoke(self, request: HttpRequest, objects: list[Any]) -> None:
        for account in objects:
            count = scored_data_key_revoke(account=account)
            self.log_change(request, account, f"Revoked {count} scored-data key(s).")
        names = ", ".join(str(account) for account in objects)
        self.message_user(
            request,
            f"Scored-data keys of {names} revoked: they stop working now.",
            messages.SUCCESS,
        )

    # Saving: a new account as the form built it, by account_create (no agent can be on its
    # duty yet), its inlines after it; a change by account_update in save_related, with its
    # schedule days from the inline.

    def save_model(
        self, request: HttpRequest, obj: Account, form: Any, change: bool
    ) -> None:
        if not change:
            account_create(account=obj)

    def save_related(
        self, request: HttpRequest, form: Any, formsets: Any, change: bool
    ) -> None:
        if not change:
            super().save_related(request, form, formsets, change)
            return
        days = None
        for formset in formsets:
            if formset.model is AccountScheduleDay:
                days = formset
            else:
                self.save_formset(request, form, formset, change=change)
        account_update(
            account=form.instance,
            data={
                name: form.cleaned_data[name]
                for name in form.changed_data
                if name in form._meta.fields
            },
            schedule_save=days.save(commit=False) if days else [],
            schedule_delete=days.deleted_objects if days else [],
        )


@admin.register(Team)
class TeamAdmin(admin.ModelAdmin):
    list_display = ["name", "account", "organization", "users_count"]
    list_filter = ["account__organization"]
    search_fields = ["name", "account__name", "account__organization__name"]
    list_select_related = ["account__organization"]
    autocomplete_fields = ["account"]

    def get_queryset(self, request: HttpRequest) -> QuerySet[Team]:
        return (
            super()
            .get_queryset(request)
            .annotate(n_users=count_of(m2m_through(Team, "users"), "team"))
        )

    @admin.display(description="organization", ordering="account__organization__name")
    def organization(self, obj: Team) -> Organization:
        return obj.account.organization

    @admin.display(description="users", ordering="n_users")
    def users_count(self, obj: Any) -> int:
        return obj.n_users
