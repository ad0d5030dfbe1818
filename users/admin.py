"""Support's screens for users: who an agent is, how to reach them, where they work (accounts,
teams, with the organizations and codes that follow), what they may do (permission template)
and when they take calls. Django's own sign-in and permission fields are for superusers only.

Every write of an agent goes through ``users.services`` (``user_create`` / ``user_update``),
the same functions as the User API: assigning accounts of an organization makes the agent a
member of it, with a user code.
"""

from __future__ import annotations

from typing import Any

from django import forms
from django.contrib import admin, messages
from django.contrib.auth.admin import UserAdmin as BaseUserAdmin
from django.db.models import Prefetch, Q, QuerySet
from django.forms.models import BaseInlineFormSet
from django.http import HttpRequest, HttpResponse, HttpResponseRedirect

from accounts.admin import ScheduleDayInline, ScheduleDaysMixin, TimezoneSelectMixin
from accounts.models import Account, Organization, Team
from core.api import ValidationFailed
from core.validation import digits_only
from users.forms import AgentAddForm, AgentChangeForm
from users.models import Membership, User, UserScheduleDay
from users.selectors import format_code
from users.services import (
    user_access_set,
    user_create,
    user_delete,
    user_memberships_update,
    user_update,
    user_update_unaffiliated,
)

ADD_FIELDSETS = [
    ("Agent", {"fields": [("first_name", "last_name")]}),
    ("Contact", {"fields": [("email", "phone_number")]}),
    (
        "Accounts, teams and permission template",
        {
            "fields": ["accounts", "teams", "permission_template"],
            "description": "The agent becomes a member of each chosen account's organization and "
            "gets the next free user code there. Timezone and country are the first account's.",
        },
    ),
    ("Schedule", {"fields": ["schedule"]}),
    (
        "Sign-in (optional)",
        {"classes": ["collapse"], "fields": ["username", "password1", "password2"]},
    ),
]
CHANGE_FIELDSETS = [
    ("Agent", {"fields": [("first_name", "last_name"), "is_active"]}),
    ("Contact", {"fields": [("email", "phone_number")]}),
    (
        "Accounts, teams and permission template",
        {
            "fields": ["accounts", "teams", "permission_template"],
            "description": "The organizations and user codes that follow from the accounts are "
            "listed below the schedule.",
        },
    ),
    (
        "Profile",
        {
            "classes": ["collapse"],
            "fields": [
                "company_role",
                "bio",
                "profile_picture",
                "country",
                "twelve_hour_time_format",
            ],
        },
    ),
    (
        "Schedule",
        {
            "fields": [("schedule_active", "timezone")],
            "description": "Unknown: the agent has no schedule of their own (the account's applies). "
            "Yes: the weekly schedule below applies, in the agent's timezone. No: the agent takes no calls.",
        },
    ),
]
# Rendered after the inlines by users/templates/admin/users/user/change_form.html ("internals").
SUPERUSER_FIELDSET = (
    "Sign-in and Django permissions (superusers only)",
    {
        "classes": ["collapse", "internals"],
        "fields": [
            "username",
            "password",
            "is_staff",
            "is_superuser",
            "groups",
            "user_permissions",
            "last_login",
            "date_joined",
        ],
        "description": "Groups are the permission templates of the User API; change the "
        "template above or the groups here, not both.",
    },
)


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
        if not digits_only(code):
            raise forms.ValidationError("A user code has digits only, e.g. 0042.")
        return format_code(int(code))


class MembershipFormSet(BaseInlineFormSet):
    """Leaving an organization while keeping its accounts would contradict itself (the accounts
    would make the agent a member again): say so instead."""

    def clean(self) -> None:
        super().clean()
        leaving = {
            form.instance.organization_id
            for form in self.forms
            if form.instance.pk and self._should_delete_form(form)  # type: ignore[attr-defined]
        }
        if not leaving or not hasattr(self.data, "getlist"):
            return
        chosen = [pk for pk in self.data.getlist("accounts") if digits_only(str(pk))]
        kept = Account.objects.filter(
            pk__in=chosen, organization_id__in=leaving
        ).select_related("organization")
        if kept:
            names = ", ".join(f"{a.organization.name} / {a.name}" for a in kept)
            raise forms.ValidationError(
                f"To take the agent out of an organization, also remove its accounts there: {names}."
            )


class MembershipInline(admin.TabularInline):
    model = Membership
    form = MembershipForm
    formset = MembershipFormSet
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


def _by_organization(
    accounts: list[Account], teams: list[Team]
) -> dict[Organization, dict[str, list[int]]]:
    """The accounts and teams of each organization, in the order chosen (first account first)."""
    split: dict[Organization, dict[str, list[int]]] = {}
    for account in accounts:
        split.setdefault(account.organization, {"account_ids": [], "team_ids": []})[
            "account_ids"
        ].append(account.pk)
    for team in teams:
        split.setdefault(
            team.account.organization, {"account_ids": [], "team_ids": []}
        )["team_ids"].append(team.pk)
    return split


@admin.register(User)
class UserAdmin(ScheduleDaysMixin, TimezoneSelectMixin, BaseUserAdmin):
    form = AgentChangeForm
    add_form = AgentAddForm
    # Django's user add template says "first username and password"; ours is the change form's.
    add_form_template = None
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
    filter_horizontal = ["groups", "user_permissions"]
    inlines = [UserScheduleDayInline, MembershipInline]

    def get_fieldsets(self, request: HttpRequest, obj: Any = None) -> Any:
        if obj is None:
            return ADD_FIELDSETS
        if getattr(request.user, "is_superuser", False):
            return [*CHANGE_FIELDSETS, SUPERUSER_FIELDSET]
        return CHANGE_FIELDSETS

    def get_readonly_fields(self, request: HttpRequest, obj: Any = None) -> list[str]:
        return ["last_login", "date_joined"] if obj else []

    def get_inlines(self, request: HttpRequest, obj: Any) -> Any:
        # Adding copies the account's schedule (or none); the next page shows it to adjust.
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

    def changeform_view(
        self,
        request: HttpRequest,
        object_id: str | None = None,
        form_url: str = "",
        extra_context: dict[str, Any] | None = None,
    ) -> HttpResponse:
        try:
            return super().changeform_view(request, object_id, form_url, extra_context)
        except ValidationFailed as error:
            # The form's checks passed, then a concurrent save took the username or code:
            # the view's transaction rolled back, so nothing was saved.
            problems = "; ".join(
                message for messages_ in error.errors.values() for message in messages_
            )
            self.message_user(request, f"Nothing was saved: {problems}", messages.ERROR)
            return HttpResponseRedirect(request.get_full_path())

    # Saving: user_create on the add page; on the change page the inlines first (a membership
    # added there is then found by the service), then user_update once per organization.

    def save_form(self, request: HttpRequest, form: Any, change: bool) -> Any:
        if change:
            return form.save(commit=False)
        return self._create_agent(form)

    def save_model(
        self, request: HttpRequest, obj: User, form: Any, change: bool
    ) -> None:
        return

    def save_related(
        self, request: HttpRequest, form: Any, formsets: Any, change: bool
    ) -> None:
        if not change:
            return
        for formset in formsets:
            self.save_formset(request, form, formset, change=change)
        self._update_agent(form, form.instance)
        changed = {
            name: form.cleaned_data[name]
            for name in ("groups", "user_permissions")
            if name in form.fields and name in form.changed_data
        }
        if changed:
            user_access_set(
                user=form.instance,
                groups=changed.get("groups"),
                permissions=changed.get("user_permissions"),
            )

    def _create_agent(self, form: AgentAddForm) -> User:
        cleaned = form.cleaned_data
        accounts = list(cleaned["accounts"])
        teams = list(cleaned["teams"]) or list(
            Team.objects.filter(account__in=accounts).select_related(
                "account__organization"
            )
        )
        split = _by_organization(accounts, teams)
        (first, scope), *others = split.items()
        user = user_create(organization=first, data={**form.service_data(), **scope})
        for organization, more in others:
            user_update(user=user, organization=organization, data=more)
        return user

    def _update_agent(self, form: AgentChangeForm, user: User) -> None:
        cleaned = form.cleaned_data
        split = _by_organization(list(cleaned["accounts"]), list(cleaned["teams"]))
        # Organizations the agent leaves accounts of, or is a member of, are updated too
        # (read afresh: the page's prefetched relations predate the inlines just saved).
        for organization in Organization.objects.filter(
            Q(accounts__users=user) | Q(memberships__user=user)
        ).distinct():
            split.setdefault(organization, {"account_ids": [], "team_ids": []})
        data = form.service_data()
        if not split:
            # In no organization (e.g. support staff): nothing for the services to scope by.
            user_update_unaffiliated(user=user, data=data)
            return
        for organization in sorted(split, key=lambda o: o.name):
            user_update(
                user=user,
                organization=organization,
                data={**data, **split[organization]},
            )
            data = {}

    def save_formset(
        self, request: HttpRequest, form: Any, formset: Any, change: bool
    ) -> None:
        if formset.model is not Membership:
            super().save_formset(request, form, formset, change)
            return
        user_memberships_update(
            save=formset.save(commit=False), delete=formset.deleted_objects
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
