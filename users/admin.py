"""Support's screens for users: who they are, where they work (organizations with their
codes, accounts, teams), when they take calls, and what they may do (permission templates)."""

from __future__ import annotations

from typing import Any

from django import forms
from django.contrib import admin, messages
from django.contrib.auth.admin import UserAdmin as BaseUserAdmin
from django.contrib.auth.forms import AdminUserCreationForm
from django.contrib.auth.forms import UserChangeForm as BaseUserChangeForm
from django.db.models import Prefetch, QuerySet
from django.http import HttpRequest

from accounts.admin import ScheduleDayInline, ScheduleDaysMixin, TimezoneSelectMixin
from accounts.forms import AccountChoiceField, TeamChoiceField
from accounts.models import Account, Team
from users.models import Membership, User, UserScheduleDay
from users.selectors import format_code
from users.services import user_code_allocate, user_delete


class UserCreationForm(AdminUserCreationForm):
    """Django's add form for our user model. Usernames are compared case-sensitively (the
    User API's rule), so only an exact match is "taken"; the model's unique check says so."""

    class Meta(AdminUserCreationForm.Meta):
        model = User
        fields = ("username",)

    def clean_username(self) -> str:
        return self.cleaned_data["username"]


class UserChangeForm(BaseUserChangeForm):
    class Meta(BaseUserChangeForm.Meta):
        model = User
        fields = "__all__"

    def clean(self) -> dict[str, Any]:
        cleaned = super().clean() or {}
        if "teams" in cleaned and "accounts" in cleaned:
            account_ids = {account.pk for account in cleaned["accounts"]}
            outside = [
                f"{team.account.name} / {team.name}"
                for team in cleaned["teams"]
                if team.account_id not in account_ids
            ]
            if outside:
                self.add_error(
                    "teams",
                    f"Teams must belong to the user's accounts; not so: {', '.join(outside)}.",
                )
        return cleaned


class MembershipForm(forms.ModelForm):
    class Meta:
        model = Membership
        fields = ["organization", "code"]
        help_texts = {
            "code": "Digits; stored zero-padded to 4 (42 → 0042). Leave blank for the next free code."
        }

    def clean_code(self) -> str | None:
        code = self.cleaned_data.get("code")
        if not code:
            return None
        code = code.strip()
        if not code.isdigit():
            raise forms.ValidationError("A user code has digits only, e.g. 0042.")
        return format_code(int(code))


class MembershipInline(admin.TabularInline):
    model = Membership
    form = MembershipForm
    extra = 0
    verbose_name = "organization membership"
    verbose_name_plural = "organizations (with the user's code in each)"


class UserScheduleDayInline(ScheduleDayInline):
    model = UserScheduleDay
    verbose_name_plural = (
        "weekly schedule (the user's timezone; an end of 23:59 means until midnight)"
    )


class PermissionTemplateFilter(admin.RelatedFieldListFilter):
    """The ``groups`` filter under the name the User API uses for them."""

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self.title = "permission template"


@admin.register(User)
class UserAdmin(ScheduleDaysMixin, TimezoneSelectMixin, BaseUserAdmin):
    form = UserChangeForm
    add_form = UserCreationForm
    list_display = [
        "username",
        "full_name",
        "email",
        "phone_number",
        "organizations_with_codes",
        "accounts_list",
        "permission_templates",
        "is_active",
    ]
    list_filter = [
        "is_active",
        ("groups", PermissionTemplateFilter),
        "organizations",
        "accounts",
        "is_staff",
        "is_superuser",
    ]
    search_fields = [
        "username",
        "first_name",
        "last_name",
        "email",
        "phone_number",
        "memberships__code",
    ]
    search_help_text = (
        "Username, name, email, phone number (E.164, e.g. +13035550101) or user code."
    )
    ordering = ["username"]
    date_hierarchy = "date_joined"
    filter_horizontal = ["groups", "user_permissions", "accounts", "teams"]
    fieldsets = [
        (None, {"fields": ["username", "password"]}),
        (
            "Personal info",
            {
                "fields": [
                    "first_name",
                    "last_name",
                    "email",
                    "phone_number",
                    "company_role",
                    "bio",
                    "profile_picture",
                ]
            },
        ),
        ("Preferences", {"fields": ["timezone", "country", "twelve_hour_time_format"]}),
        (
            "Accounts and teams",
            {
                "fields": ["accounts", "teams"],
                "description": "Teams must belong to the chosen accounts. Organizations and user codes are below.",
            },
        ),
        (
            "Schedule",
            {
                "fields": ["schedule_active"],
                "description": "Unknown: the user has no schedule of their own. Yes: the weekly schedule below "
                "applies. No: the user takes no calls.",
            },
        ),
        (
            "Permissions",
            {
                "fields": [
                    "is_active",
                    "is_staff",
                    "is_superuser",
                    "groups",
                    "user_permissions",
                ],
                "description": "Groups are the permission templates of the User API: Agent, Manager, Global Manager.",
            },
        ),
        ("Important dates", {"fields": ["last_login", "date_joined"]}),
    ]
    inlines = [MembershipInline, UserScheduleDayInline]

    def get_inlines(self, request: HttpRequest, obj: Any) -> Any:
        # The add page is Django's username-and-password form; the rest follows on the change page.
        return self.inlines if obj else []

    def get_queryset(self, request: HttpRequest) -> QuerySet[User]:
        return (
            super()
            .get_queryset(request)
            .prefetch_related(
                Prefetch(
                    "memberships",
                    queryset=Membership.objects.select_related("organization"),
                ),
                Prefetch("accounts", queryset=Account.objects.only("id", "name")),
                "groups",
            )
        )

    def formfield_for_manytomany(
        self, db_field: Any, request: HttpRequest, **kwargs: Any
    ) -> Any:
        # Names repeat ("Sales" in every account): label choices with where they belong.
        if db_field.name == "accounts":
            kwargs["queryset"] = Account.objects.select_related("organization")
            kwargs["form_class"] = AccountChoiceField
        elif db_field.name == "teams":
            kwargs["queryset"] = Team.objects.select_related("account").order_by(
                "account__name", "name"
            )
            kwargs["form_class"] = TeamChoiceField
        return super().formfield_for_manytomany(db_field, request, **kwargs)

    def save_formset(
        self, request: HttpRequest, form: Any, formset: Any, change: bool
    ) -> None:
        if formset.model is not Membership:
            super().save_formset(request, form, formset, change)
            return
        memberships = formset.save(commit=False)
        for membership in formset.deleted_objects:
            membership.delete()
        for membership in memberships:
            if membership.code is None:
                membership.code = user_code_allocate(
                    organization_id=membership.organization_id
                )
            membership.save()

    def save_related(
        self, request: HttpRequest, form: Any, formsets: Any, change: bool
    ) -> None:
        super().save_related(request, form, formsets, change)
        user = form.instance
        if not change:
            return
        member_of = set(user.memberships.values_list("organization_id", flat=True))
        strays = [
            account
            for account in user.accounts.select_related("organization")
            if account.organization_id not in member_of
        ]
        if strays:
            names = ", ".join(
                f"{account.name} ({account.organization.name})" for account in strays
            )
            self.message_user(
                request,
                f"{user} works in {names} but is not a member of that organization: add the membership "
                "below, or the User API will not find them there.",
                messages.WARNING,
            )

    def delete_model(self, request: HttpRequest, obj: User) -> None:
        user_delete(user=obj)

    def delete_queryset(self, request: HttpRequest, queryset: QuerySet[User]) -> None:
        for user in queryset:
            user_delete(user=user)

    @admin.display(description="name", ordering="last_name")
    def full_name(self, obj: User) -> str:
        return obj.get_full_name()

    @admin.display(description="organizations (code)")
    def organizations_with_codes(self, obj: User) -> str:
        return ", ".join(str(membership) for membership in obj.memberships.all())

    @admin.display(description="accounts")
    def accounts_list(self, obj: User) -> str:
        return ", ".join(account.name for account in obj.accounts.all())

    @admin.display(description="permission template")
    def permission_templates(self, obj: User) -> str:
        return ", ".join(group.name for group in obj.groups.all())
