"""Keys in the admin: the issue/revoke tools every key owner's page has (each behind a
confirmation page), key lists and inlines showing prefixes only, and their filters.

Keys are issued, rotated and revoked only through ``accounts.services``. A new key is
rendered once, directly in the response to the request that issued it, with caching
off: never in a message (cookie), a URL or a log.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from django.contrib import admin
from django.db.models import OuterRef, Q, QuerySet, Subquery
from django.db.models.functions import Now
from django.http import HttpRequest, HttpResponse

from accounts.models import (
    ApiKey,
    HashedKey,
    Organization,
    ScoredDataKey,
)
from core.admin import (
    ObjectToolsAdmin,
    ReadOnlyAdminMixin,
    ReadOnlyInline,
    render_confirm,
)

# Carries a key issued in save_form() to response_add() within one request; never stored.
ISSUED_KEY = "_accounts_admin_issued_key"


# --- query helpers: counts and prefixes as subqueries, so list pages stay at a fixed number of queries


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


class KeyToolsAdmin(ObjectToolsAdmin):
    """Change pages get two buttons, "issue" and "revoke", each behind a confirmation page,
    backed by the same methods as the changelist actions. Subclasses fill in the four hooks."""

    issue_label = ""  # the buttons
    revoke_label = ""
    issue_action_label = (
        ""  # the changelist actions (``actions``) for the selected rows
    )
    revoke_action_label = ""

    def issue_explanation(self, objects: list[Any]) -> list[str]:
        """What issuing a key for ``objects`` does (whether a current key keeps working)."""
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
            explanation=self.issue_explanation([obj]),
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

    def get_actions(self, request: HttpRequest) -> dict[str, Any]:
        """The two actions below, described by the admin's own labels."""
        actions = super().get_actions(request)
        for name, label in (
            ("issue_selected", self.issue_action_label),
            ("revoke_selected", self.revoke_action_label),
        ):
            action = actions.get(name)
            if action is not None:
                actions[name] = (action[0], name, label)
        return actions

    @admin.action(permissions=["change"])
    def issue_selected(
        self, request: HttpRequest, queryset: QuerySet[Any]
    ) -> HttpResponse:
        return self.issue(request, list(queryset))

    @admin.action(permissions=["change"])
    def revoke_selected(
        self, request: HttpRequest, queryset: QuerySet[Any]
    ) -> HttpResponse | None:
        """Asks first, like "delete selected"."""
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
            action="revoke_selected",
        )


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


# What every key list and page shows after its prefix and owner.
KEY_MOMENTS = ("created_at", "last_used_at", "expires_at", "revoked_at", "usable")


class KeyAdmin(ReadOnlyAdminMixin, admin.ModelAdmin):
    """Read-only: keys are made by services and deleted by the prune task. Find one by its prefix."""

    list_filter = [KeyStateFilter]
    date_hierarchy = "created_at"
    search_fields = ["prefix"]

    @admin.display(boolean=True, description="usable now")
    def usable(self, obj: HashedKey) -> bool:
        return obj.is_usable()


@admin.register(ApiKey)
class ApiKeyAdmin(KeyAdmin):
    list_display = ["prefix", "credential", "organization", *KEY_MOMENTS]
    list_filter = [KeyStateFilter, "credential__organization"]
    list_select_related = ["credential__organization"]
    search_fields = ["prefix", "credential__api_user"]
    fields = readonly_fields = ("prefix", "credential", *KEY_MOMENTS)

    @admin.display(
        description="organization", ordering="credential__organization__name"
    )
    def organization(self, obj: ApiKey) -> Organization:
        return obj.credential.organization


@admin.register(ScoredDataKey)
class ScoredDataKeyAdmin(KeyAdmin):
    list_display = ["prefix", "account", "organization", *KEY_MOMENTS]
    list_filter = [KeyStateFilter, "account__organization"]
    list_select_related = ["account__organization"]
    search_fields = ["prefix", "account__name"]
    fields = readonly_fields = ("prefix", "account", *KEY_MOMENTS)

    @admin.display(description="organization", ordering="account__organization__name")
    def organization(self, obj: ScoredDataKey) -> Organization:
        return obj.account.organization
