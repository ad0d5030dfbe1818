"""Support's screens for organizations, accounts, teams and credentials.

Keys are issued, rotated and revoked only through ``accounts.services``. A new key is
rendered once, directly in the response to the request that issued it, with caching
off: never in a message (cookie), a URL or a log. Lists show a key's public prefix only.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from datetime import timedelta
from typing import Any

from django import forms
from django.conf import settings
from django.contrib import admin, messages
from django.contrib.admin.helpers import ACTION_CHECKBOX_NAME
from django.contrib.admin.utils import unquote
from django.core.exceptions import PermissionDenied
from django.db import models
from django.db.models import Count, OuterRef, Q, QuerySet, Subquery
from django.db.models.functions import Coalesce, Now
from django.http import Http404, HttpRequest, HttpResponse, HttpResponseRedirect
from django.template.response import TemplateResponse
from django.urls import URLPattern, path, reverse
from django.utils import timezone
from django.utils.cache import add_never_cache_headers
from django.utils.html import format_html
from django_countries.filters import CountryFilter

from accounts.forms import (
    AccountForm,
    ApiCredentialAddForm,
    ApiCredentialChangeForm,
    ScheduleDayForm,
    schedule_day_initial,
    timezone_choice_field,
)
from accounts.keys import key_prefix
from accounts.models import (
    Account,
    AccountScheduleDay,
    ApiCredential,
    ApiKey,
    HashedKey,
    Organization,
    ScoredDataKey,
    Team,
)
from accounts.schedules import WEEKDAYS
from accounts.services import (
    account_update,
    api_credential_issue,
    api_credential_revoke,
    api_credential_update,
    api_key_rotate,
    scored_data_key_issue,
    scored_data_key_revoke,
)

KEYS_PAGE = "admin/accounts/issued_keys.html"
CONFIRM_PAGE = "admin/accounts/confirm_key_action.html"
KEY_TOOLS_CHANGE_FORM = "admin/accounts/change_form_key_tools.html"
# Carries a key issued in save_form() to response_add() within one request; never stored.
_ISSUED_KEY = "_accounts_admin_issued_key"


# --- query helpers: counts and prefixes as subqueries, so list pages stay at a fixed number of queries


def count_of(model: type[models.Model], field: str, *conditions: Q) -> Coalesce:
    """COUNT(*) of ``model`` rows whose ``field`` points at the outer row, as a correlated subquery."""
    rows = (
        model._default_manager.filter(*conditions, **{field: OuterRef("pk")})
        .order_by()
        .values(field)
        .annotate(n=Count("*"))
        .values("n")
    )
    return Coalesce(Subquery(rows), 0)


def m2m_through(model: type[models.Model], relation: str) -> type[models.Model]:
    """The table behind a many-to-many relation, named from either side (no import of the other app)."""
    field = model._meta.get_field(relation)
    if isinstance(field, models.ManyToManyField):
        field = field.remote_field
    assert isinstance(field, models.ManyToManyRel) and field.through is not None
    return field.through


def usable_now() -> Q:
    """A key that works now, evaluated by the database (``HashedKeyQuerySet.usable`` in SQL)."""
    return Q(revoked_at__isnull=True) & (
        Q(expires_at__isnull=True) | Q(expires_at__gt=Now())
    )


def newest_usable_prefix(model: type[HashedKey], field: str) -> Subquery:
    rows = model._default_manager.filter(
        usable_now(), **{field: OuterRef("pk")}
    ).order_by("-created_at")
    return Subquery(rows.values("prefix")[:1])


def last_used_of(model: type[HashedKey], field: str) -> Subquery:
    """The latest ``last_used_at`` of the outer row's keys, as a correlated subquery."""
    rows = model._default_manager.filter(
        last_used_at__isnull=False, **{field: OuterRef("pk")}
    ).order_by("-last_used_at")
    return Subquery(rows.values("last_used_at")[:1])


def describe(delta: timedelta) -> str:
    """``timedelta(hours=24)`` -> "24 hours", for the grace-period notes."""
    minutes = int(delta.total_seconds()) // 60
    if minutes % 60 == 0:
        hours = minutes // 60
        return f"{hours} hour{'s' if hours != 1 else ''}"
    return f"{minutes} minute{'s' if minutes != 1 else ''}"


class KeyStateFilter(admin.SimpleListFilter):
    title = "state"
    parameter_name = "state"

    def lookups(self, request: HttpRequest, model_admin: Any) -> list[tuple[str, str]]:
        return [
            ("usable", "Usable"),
            ("grace", "Usable, in rotation grace period"),
            ("stopped", "Expired or revoked"),
        ]

    def queryset(self, request: HttpRequest, queryset: QuerySet[Any]) -> QuerySet[Any]:
        if self.value() == "usable":
            return queryset.filter(usable_now())
        if self.value() == "grace":
            return queryset.filter(usable_now(), expires_at__isnull=False)
        if self.value() == "stopped":
            return queryset.exclude(usable_now())
        return queryset


# --- pages that show keys once and confirm key actions


@dataclass(frozen=True)
class ShownKey:
    """One row of the key page: whose key it is and the secret, shown this once."""

    owner: str
    owner_url: str
    kind: str
    api_user: str
    key: str


KEPT_AS_HASH = "Only a hash is kept; a lost key cannot be recovered, only replaced."


def render_keys(
    model_admin: admin.ModelAdmin,
    request: HttpRequest,
    *,
    title: str,
    keys: list[ShownKey],
    notes: list[str],
    kept: str = KEPT_AS_HASH,
) -> TemplateResponse:
    """The "copy it now" page. Rendered into this response only, and never cached.
    ``kept`` says how the service keeps what is shown (a hash, unless told otherwise)."""
    context = {
        **model_admin.admin_site.each_context(request),
        "opts": model_admin.opts,
        "title": title,
        "keys": keys,
        "notes": notes,
        "kept": kept,
        "changelist_url": reverse(
            f"admin:{model_admin.opts.app_label}_{model_admin.opts.model_name}_changelist"
        ),
    }
    response = TemplateResponse(request, KEYS_PAGE, context)
    add_never_cache_headers(response)
    response["Referrer-Policy"] = "no-referrer"
    return response


def render_confirm(
    model_admin: admin.ModelAdmin,
    request: HttpRequest,
    *,
    title: str,
    objects: list[Any],
    explanation: list[str],
    button: str,
    action: str = "",
) -> TemplateResponse:
    """A confirmation page. With ``action`` it posts back to the changelist action (like
    "delete selected"); without, to the page's own URL."""
    context = {
        **model_admin.admin_site.each_context(request),
        "opts": model_admin.opts,
        "title": title,
        "objects": objects,
        "explanation": explanation,
        "button": button,
        "action": action,
        "action_checkbox_name": ACTION_CHECKBOX_NAME,
    }
    return TemplateResponse(request, CONFIRM_PAGE, context)


class ObjectToolsAdmin(admin.ModelAdmin):
    """Buttons on the change page, each a view of its own under the object's URL
    (``object_tools``: name, URL part, view, label), named ``admin:<app>_<model>_<name>``."""

    change_form_template = KEY_TOOLS_CHANGE_FORM

    def object_tools(self) -> list[tuple[str, str, Callable[..., HttpResponse], str]]:
        raise NotImplementedError

    def _url_name(self, tool: str) -> str:
        return f"{self.opts.app_label}_{self.opts.model_name}_{tool}"

    def get_urls(self) -> list[URLPattern]:  # type: ignore[override]
        wrap = self.admin_site.admin_view
        return [
            path(f"<path:object_id>/{part}/", wrap(view), name=self._url_name(name))
            for name, part, view, _ in self.object_tools()
        ] + super().get_urls()

    def change_view(
        self,
        request: HttpRequest,
        object_id: str,
        form_url: str = "",
        extra_context: dict[str, Any] | None = None,
    ) -> HttpResponse:
        tools = [
            (reverse(f"admin:{self._url_name(name)}", args=[object_id]), label)
            for name, _, _, label in self.object_tools()
        ]
        return super().change_view(
            request, object_id, form_url, {**(extra_context or {}), "key_tools": tools}
        )

    def _changeable(self, request: HttpRequest, object_id: str) -> Any:
        obj = self.get_object(request, unquote(object_id))
        if obj is None:
            raise Http404(f"No {self.opts.verbose_name} with id {object_id}.")
        if not self.has_change_permission(request, obj):
            raise PermissionDenied
        return obj

    def _back_to(self, obj: Any) -> HttpResponseRedirect:
        return HttpResponseRedirect(
            reverse(f"admin:{self._url_name('change')}", args=[obj.pk])
        )


class KeyToolsAdmin(ObjectToolsAdmin):
    """Change pages get two buttons, "issue" and "revoke", each behind a confirmation page,
    backed by the same methods as the changelist actions. Subclasses fill in the four hooks."""

    issue_label = ""
    revoke_label = ""

    def issue_explanation(self) -> list[str]:
        raise NotImplementedError

    def revoke_explanation(self) -> list[str]:
        raise NotImplementedError

    def issue(self, request: HttpRequest, objects: list[Any]) -> HttpResponse:
        """Issue through the service and render the key page."""
        raise NotImplementedError

    def revoke(self, request: HttpRequest, objects: list[Any]) -> None:
        """Revoke through the service and say so in a message."""
        raise NotImplementedError

    def object_tools(self) -> list[tuple[str, str, Callable[..., HttpResponse], str]]:
        return [
            ("issue_key", "issue-key", self.issue_view, self.issue_label),
            ("revoke_keys", "revoke-keys", self.revoke_view, self.revoke_label),
        ]

    def issue_view(self, request: HttpRequest, object_id: str) -> HttpResponse:
        obj = self._changeable(request, object_id)
        if request.method == "POST":
            return self.issue(request, [obj])
        return render_confirm(
            self,
            request,
            title=f"{self.issue_label}?",
            objects=[obj],
            explanation=self.issue_explanation(),
            button=self.issue_label,
        )

    def revoke_view(self, request: HttpRequest, object_id: str) -> HttpResponse:
        obj = self._changeable(request, object_id)
        if request.method == "POST":
            self.revoke(request, [obj])
            return self._back_to(obj)
        return render_confirm(
            self,
            request,
            title=f"{self.revoke_label}?",
            objects=[obj],
            explanation=self.revoke_explanation(),
            button=self.revoke_label,
        )

    def _revoke_action(
        self, request: HttpRequest, queryset: QuerySet[Any], action: str
    ) -> HttpResponse | None:
        """A changelist action that asks first, like "delete selected"."""
        if request.POST.get("post") == "yes":
            self.revoke(request, list(queryset))
            return None
        return render_confirm(
            self,
            request,
            title=f"{self.revoke_label}?",
            objects=list(queryset),
            explanation=self.revoke_explanation(),
            button=self.revoke_label,
            action=action,
        )


# --- inlines


class ScheduleDayInline(admin.TabularInline):
    """The seven days of a weekly schedule. Missing days are offered as blank rows, weekday preset."""

    form = ScheduleDayForm
    fields = ["weekday", "active", "start_time", "end_time"]
    max_num = 7
    verbose_name = "schedule day"
    verbose_name_plural = (
        "weekly schedule (local time; an end of 23:59 means until midnight)"
    )

    def get_extra(self, request: HttpRequest, obj: Any = None, **kwargs: Any) -> int:
        return len(missing_weekdays(obj))


def missing_weekdays(owner: Any) -> list[int]:
    """Weekdays ``owner`` (an account or a user) has no schedule row for."""
    have = (
        set(owner.schedule_days.values_list("weekday", flat=True))
        if owner is not None and owner.pk
        else set()
    )
    return [day for day in range(len(WEEKDAYS)) if day not in have]


class ScheduleDaysMixin(admin.ModelAdmin):
    """Prefills each offered schedule row: its weekday and the default hours (``schedule_day_initial``;
    ``get_formset_kwargs`` is a ModelAdmin hook)."""

    def get_formset_kwargs(
        self, request: HttpRequest, obj: Any, inline: Any, prefix: str
    ) -> dict[str, Any]:
        kwargs: dict[str, Any] = super().get_formset_kwargs(
            request, obj, inline, prefix
        )
        if isinstance(inline, ScheduleDayInline):
            kwargs["initial"] = schedule_day_initial(missing_weekdays(obj))
        return kwargs


class AccountScheduleDayInline(ScheduleDayInline):
    model = AccountScheduleDay


class TeamInline(admin.TabularInline):
    model = Team
    fields = ["name"]
    extra = 0
    show_change_link = True


class ReadOnlyInline(admin.TabularInline):
    """Shown, linked, never edited here."""

    extra = 0
    can_delete = False
    show_change_link = True

    def has_add_permission(self, request: HttpRequest, obj: Any = None) -> bool:
        return False

    def has_change_permission(self, request: HttpRequest, obj: Any = None) -> bool:
        return False

    def has_delete_permission(self, request: HttpRequest, obj: Any = None) -> bool:
        return False


class KeyInline(ReadOnlyInline):
    """Keys of a credential or an account: prefix and dates only; the hash is never shown."""

    fields = readonly_fields = (
        "prefix",
        "created_at",
        "last_used_at",
        "expires_at",
        "revoked_at",
        "usable",
    )
    show_change_link = False

    @admin.display(boolean=True, description="usable now")
    def usable(self, obj: HashedKey) -> bool:
        return obj.is_usable()


class ApiKeyInline(KeyInline):
    model = ApiKey
    verbose_name_plural = "keys (rotate or revoke with the buttons above)"


class ScoredDataKeyInline(KeyInline):
    model = ScoredDataKey
    verbose_name_plural = "scored-data keys (issue or revoke with the buttons above)"


class OrganizationAccountInline(ReadOnlyInline):
    model = Account
    fields = readonly_fields = ("name", "city", "timezone", "is_active", "is_test")


class OrganizationCredentialInline(ReadOnlyInline):
    model = ApiCredential
    fields = readonly_fields = ("api_user", "name", "created_at")
    verbose_name_plural = "API credentials"


# --- model admins


class TimezoneSelectMixin(admin.ModelAdmin):
    """``timezone`` fields as a select of IANA names rather than free text."""

    def formfield_for_dbfield(
        self, db_field: models.Field, request: HttpRequest, **kwargs: Any
    ) -> Any:
        if db_field.name == "timezone":
            return timezone_choice_field(
                label=str(db_field.verbose_name).capitalize(),
                initial=db_field.get_default(),
                required=not db_field.blank,
            )
        return super().formfield_for_dbfield(db_field, request, **kwargs)


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


@admin.register(Account)
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
        ("Calls", {"fields": ["caller_id", "schedule_active"]}),
    ]
    inlines = [TeamInline, AccountScheduleDayInline, ScoredDataKeyInline]
    actions = ["issue_scored_data_keys", "revoke_scored_data_keys"]
    issue_label = "Issue scored-data key"
    revoke_label = "Revoke scored-data keys"

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

    def issue_explanation(self) -> list[str]:
        return [
            "A new scored-data key is issued and shown once, on the next page.",
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
                    str(account), self._change_url(account), "scored-data key", "", key
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

    # Saving: a new account as the form made it (no agent can be on its duty yet); a change
    # by account_update in save_related, with its schedule days from the inline.

    def save_model(
        self, request: HttpRequest, obj: Account, form: Any, change: bool
    ) -> None:
        if not change:
            super().save_model(request, obj, form, change)

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

    def _change_url(self, account: Account) -> str:
        return reverse("admin:accounts_account_change", args=[account.pk])

    @admin.action(
        description="Issue scored-data key (shown once)", permissions=["change"]
    )
    def issue_scored_data_keys(
        self, request: HttpRequest, queryset: QuerySet[Account]
    ) -> HttpResponse:
        return self.issue(request, list(queryset))

    @admin.action(description="Revoke scored-data keys", permissions=["change"])
    def revoke_scored_data_keys(
        self, request: HttpRequest, queryset: QuerySet[Account]
    ) -> HttpResponse | None:
        return self._revoke_action(request, queryset, "revoke_scored_data_keys")


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


@admin.register(ApiCredential)
class ApiCredentialAdmin(KeyToolsAdmin):
    list_display = [
        "api_user",
        "name",
        "organization",
        "scope",
        "current_key",
        "usable",
        "key_last_used",
        "created_at",
    ]
    list_filter = ["organization"]
    search_fields = ["api_user", "name", "organization__name", "keys__prefix"]
    search_help_text = (
        "API user, name, organization, or a key's prefix (e.g. lc_ab12cd34)."
    )
    list_select_related = ["organization"]
    autocomplete_fields = ["organization"]
    date_hierarchy = "created_at"
    form = ApiCredentialChangeForm
    actions = ["rotate_keys", "revoke_keys"]
    issue_label = "Rotate key"
    revoke_label = "Revoke keys"

    def get_queryset(self, request: HttpRequest) -> QuerySet[ApiCredential]:
        return (
            super()
            .get_queryset(request)
            .annotate(
                n_usable=count_of(ApiKey, "credential", usable_now()),
                current_prefix=newest_usable_prefix(ApiKey, "credential"),
                last_used=last_used_of(ApiKey, "credential"),
            )
            .prefetch_related("accounts")
        )

    @admin.display(
        description="key last used", ordering="last_used", empty_value="never"
    )
    def key_last_used(self, obj: Any) -> Any:
        return obj.last_used

    def get_fieldsets(self, request: HttpRequest, obj: Any = None) -> Any:
        if obj is None:
            return [
                (
                    None,
                    {
                        "fields": ["organization", "name", "api_user", "accounts"],
                        "description": "Saving issues the credential and its key. The key is shown once, on the next page.",
                    },
                )
            ]
        return [
            (
                None,
                {
                    "fields": [
                        "api_user",
                        "organization",
                        "name",
                        "accounts",
                        "created_at",
                    ]
                },
            )
        ]

    def get_readonly_fields(self, request: HttpRequest, obj: Any = None) -> list[str]:
        # Integrators are configured with the apiuser; the organization decides what it reaches.
        return ["api_user", "organization", "created_at"] if obj else []

    def get_form(
        self, request: HttpRequest, obj: Any = None, change: bool = False, **kwargs: Any
    ) -> type[forms.ModelForm]:
        if obj is None:
            kwargs["form"] = ApiCredentialAddForm
        return super().get_form(request, obj, change, **kwargs)

    def get_inlines(
        self, request: HttpRequest, obj: Any
    ) -> list[type[admin.options.InlineModelAdmin]]:
        return [ApiKeyInline] if obj else []

    # Adding goes through api_credential_issue: the form only collects its arguments.

    def save_form(self, request: HttpRequest, form: Any, change: bool) -> Any:
        if change:
            return super().save_form(request, form, change)
        data = form.cleaned_data
        credential, key = api_credential_issue(
            organization=data["organization"],
            name=data["name"],
            api_user=data["api_user"],
            accounts=list(data["accounts"]),
        )
        setattr(request, _ISSUED_KEY, key)
        return credential

    def save_model(
        self, request: HttpRequest, obj: ApiCredential, form: Any, change: bool
    ) -> None:
        if change:
            # The form checked the accounts with the service's own rule; the service checks again.
            api_credential_update(
                credential=obj,
                name=form.cleaned_data["name"],
                accounts=list(form.cleaned_data["accounts"]),
            )

    def save_related(
        self, request: HttpRequest, form: Any, formsets: Any, change: bool
    ) -> None:
        # The accounts were set by the service above (not form.save_m2m); the key inline is read-only.
        for formset in formsets:
            self.save_formset(request, form, formset, change=change)

    def construct_change_message(
        self, request: HttpRequest, form: Any, formsets: Any, add: bool = False
    ) -> Any:
        if add:
            return f"Issued with key {key_prefix(getattr(request, _ISSUED_KEY))}…"
        return super().construct_change_message(request, form, formsets, add)

    def response_add(
        self,
        request: HttpRequest,
        obj: ApiCredential,
        post_url_continue: str | None = None,
    ) -> HttpResponse:
        key = getattr(request, _ISSUED_KEY)
        delattr(request, _ISSUED_KEY)
        return render_keys(
            self,
            request,
            title="New API credential",
            keys=[
                ShownKey(
                    str(obj.organization),
                    self._change_url(obj),
                    "API key",
                    obj.api_user,
                    key,
                )
            ],
            notes=["The integrator sends both values: apiuser and apikey."],
        )

    # Rotation and revocation.

    def issue_explanation(self) -> list[str]:
        return [
            "A new key is issued and shown once, on the next page.",
            f"The current key keeps working for {describe(settings.API_KEY_ROTATION_GRACE)}, then stops, so the "
            "integrator has time to switch.",
        ]

    def revoke_explanation(self) -> list[str]:
        return [
            "Every key of the credentials below stops working now, including keys in a rotation grace period.",
            "Integrators using them get “Invalid API key” until they receive a new key (use “Rotate key”).",
        ]

    def issue(self, request: HttpRequest, objects: list[Any]) -> HttpResponse:
        grace = settings.API_KEY_ROTATION_GRACE
        until = timezone.localtime(timezone.now() + grace)
        shown = []
        for credential in objects:
            key = api_key_rotate(credential=credential)
            self.log_change(
                request, credential, f"Rotated key; new key {key_prefix(key)}…"
            )
            shown.append(
                ShownKey(
                    str(credential.organization),
                    self._change_url(credential),
                    "API key",
                    credential.api_user,
                    key,
                )
            )
        return render_keys(
            self,
            request,
            title="Rotated API keys" if len(shown) > 1 else "Rotated API key",
            keys=shown,
            notes=[
                f"The previous key keeps working for the grace period of {describe(grace)} "
                f"(until {until:%Y-%m-%d %H:%M %Z}), then stops. Revoke the credential to stop it sooner.",
            ],
        )

    def revoke(self, request: HttpRequest, objects: list[Any]) -> None:
        for credential in objects:
            count = api_credential_revoke(credential=credential)
            self.log_change(request, credential, f"Revoked {count} key(s).")
        names = ", ".join(str(credential) for credential in objects)
        self.message_user(
            request,
            f"Every key of {names} revoked: they stop working now.",
            messages.SUCCESS,
        )

    def _change_url(self, credential: ApiCredential) -> str:
        return reverse("admin:accounts_apicredential_change", args=[credential.pk])

    @admin.action(
        description="Rotate key (new key shown once; the old one works for the grace period)",
        permissions=["change"],
    )
    def rotate_keys(
        self, request: HttpRequest, queryset: QuerySet[ApiCredential]
    ) -> HttpResponse:
        return self.issue(request, list(queryset.select_related("organization")))

    @admin.action(description="Revoke keys (stop working now)", permissions=["change"])
    def revoke_keys(
        self, request: HttpRequest, queryset: QuerySet[ApiCredential]
    ) -> HttpResponse | None:
        return self._revoke_action(request, queryset, "revoke_keys")

    @admin.display(description="accounts")
    def scope(self, obj: ApiCredential) -> str:
        names = [account.name for account in obj.accounts.all()]
        return ", ".join(names) if names else "All accounts"

    @admin.display(description="current key", ordering="current_prefix")
    def current_key(self, obj: Any) -> str:
        return f"{obj.current_prefix}…" if obj.current_prefix else "—"

    @admin.display(description="usable", boolean=True, ordering="n_usable")
    def usable(self, obj: Any) -> bool:
        return obj.n_usable > 0


class KeyAdmin(admin.ModelAdmin):
    """Read-only: keys are made by services and deleted by the prune task. Find one by its prefix."""

    list_filter = [KeyStateFilter]
    date_hierarchy = "created_at"
    search_fields = ["prefix"]

    def has_add_permission(self, request: HttpRequest) -> bool:
        return False

    def has_change_permission(self, request: HttpRequest, obj: Any = None) -> bool:
        return False

    def has_delete_permission(self, request: HttpRequest, obj: Any = None) -> bool:
        return False

    @admin.display(boolean=True, description="usable now")
    def usable(self, obj: HashedKey) -> bool:
        return obj.is_usable()


@admin.register(ApiKey)
class ApiKeyAdmin(KeyAdmin):
    list_display = [
        "prefix",
        "credential",
        "organization",
        "created_at",
        "last_used_at",
        "expires_at",
        "revoked_at",
        "usable",
    ]
    list_filter = [KeyStateFilter, "credential__organization"]
    list_select_related = ["credential__organization"]
    search_fields = ["prefix", "credential__api_user"]
    fields = readonly_fields = (
        "prefix",
        "credential",
        "created_at",
        "last_used_at",
        "expires_at",
        "revoked_at",
        "usable",
    )

    @admin.display(
        description="organization", ordering="credential__organization__name"
    )
    def organization(self, obj: ApiKey) -> Organization:
        return obj.credential.organization


@admin.register(ScoredDataKey)
class ScoredDataKeyAdmin(KeyAdmin):
    list_display = [
        "prefix",
        "account",
        "organization",
        "created_at",
        "last_used_at",
        "expires_at",
        "revoked_at",
        "usable",
    ]
    list_filter = [KeyStateFilter, "account__organization"]
    list_select_related = ["account__organization"]
    search_fields = ["prefix", "account__name"]
    fields = readonly_fields = (
        "prefix",
        "account",
        "created_at",
        "last_used_at",
        "expires_at",
        "revoked_at",
        "usable",
    )

    @admin.display(description="organization", ordering="account__organization__name")
    def organization(self, obj: ScoredDataKey) -> Organization:
        return obj.account.organization
