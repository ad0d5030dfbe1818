"""The admin's building blocks every app's admin uses: moments in a dealer's timezone,
"within the last day/week" filters, read-only admins and inlines, correlated counts, and
change-page tools with their confirmation and "copy it now" pages
(``core/templates/admin/core/``). No models, and nothing imported from the apps."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from datetime import datetime, timedelta
from typing import Any
from zoneinfo import ZoneInfo, ZoneInfoNotFoundError

from django.contrib import admin
from django.contrib.admin.helpers import ACTION_CHECKBOX_NAME
from django.contrib.admin.utils import unquote
from django.core.exceptions import PermissionDenied
from django.db import models
from django.db.models import Count, OuterRef, Q, Subquery
from django.db.models.functions import Coalesce
from django.http import Http404, HttpRequest, HttpResponse, HttpResponseRedirect
from django.template.defaultfilters import pluralize
from django.template.response import TemplateResponse
from django.urls import URLPattern, path, reverse
from django.utils import timezone
from django.utils.cache import add_never_cache_headers

KEYS_PAGE = "admin/core/issued_keys.html"
CONFIRM_PAGE = "admin/core/confirm_action.html"
TOOLS_CHANGE_FORM = "admin/core/change_form_tools.html"


# --- moments and windows


def zoned(at: datetime | None, zone: str | None = None) -> str:
    """A moment to the second in ``zone`` (an account's timezone) or, without one, the active
    timezone (the signed-in user's), labelled with the zone: "2026-11-22 09:14:03 MST"."""
    if at is None:
        return "—"
    return f"{at.astimezone(zoneinfo_or_current(zone)):%Y-%m-%d %H:%M:%S %Z}"


def zoned_field(
    field: str, *, zone: str = "", description: str = ""
) -> Callable[[Any, Any], str]:
    """An admin method showing a row's datetime ``field`` with ``zoned``: in the timezone at
    the dotted path ``zone`` from the row ("call.account.timezone", the dealer's) or, without
    one, the viewer's. Django's own display would give the viewer's time, unlabelled, beside
    the dealer's. Assign it to a name in the admin and list that name::

        scored = zoned_field("scored_at", zone="call.account.timezone")
    """

    def shown(model_admin: Any, obj: Any) -> str:
        return zoned(getattr(obj, field), zone_at(obj, zone))

    return admin.display(
        description=description or field.replace("_", " "), ordering=field
    )(shown)


def zone_at(obj: Any, path: str) -> str | None:
    """The timezone name at the dotted ``path`` from ``obj``; None for an empty path or one
    through a missing row (a lead routed to no account)."""
    if not path:
        return None
    value = obj
    for name in path.split("."):
        value = getattr(value, name, None)
        if value is None:
            return None
    return str(value) or None


def zoneinfo_or_current(zone: str | None) -> Any:
    """``zone`` as a tzinfo or, when it is empty or unknown, the active timezone."""
    try:
        return ZoneInfo(zone) if zone else timezone.get_current_timezone()
    except (ZoneInfoNotFoundError, ValueError):
        return timezone.get_current_timezone()


class WithinFilter(admin.SimpleListFilter):
    """Rows whose ``field`` falls in the last 24 hours or 7 days (the overview links here)."""

    field = ""
    windows = {
        "24h": ("In the last 24 hours", timedelta(hours=24)),
        "7d": ("In the last 7 days", timedelta(days=7)),
    }

    def lookups(self, request: HttpRequest, model_admin: Any) -> list[tuple[str, str]]:
        return [(value, label) for value, (label, _) in self.windows.items()]

    def queryset(self, request: HttpRequest, queryset: Any) -> Any:
        window = self.windows.get(self.value() or "")
        if window is None:
            return queryset
        return queryset.filter(**{f"{self.field}__gte": timezone.now() - window[1]})


# --- read-only admins and inlines


class ReadOnlyAdminMixin:
    """Rows that a workflow owns (leads, calls): support looks, and acts only through actions."""

    def has_add_permission(self, request: HttpRequest, obj: Any = None) -> bool:
        return False

    def has_change_permission(self, request: HttpRequest, obj: Any = None) -> bool:
        return False

    def has_delete_permission(self, request: HttpRequest, obj: Any = None) -> bool:
        return False


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


# --- query helpers: counts as subqueries, so list pages stay at a fixed number of queries


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
    assert isinstance(field, models.ManyToManyRel)
    assert field.through is not None
    return field.through


def describe(delta: timedelta) -> str:
    """``timedelta(hours=24)`` -> "24 hours", for the grace-period notes."""
    minutes = int(delta.total_seconds()) // 60
    if minutes % 60 == 0:
        hours = minutes // 60
        return f"{hours} hour{pluralize(hours)}"
    return f"{minutes} minute{pluralize(minutes)}"


# --- pages that show keys once and confirm actions


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

    change_form_template = TOOLS_CHANGE_FORM

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

    def change_url(self, obj: Any) -> str:
        """The object's change page."""
        return reverse(f"admin:{self._url_name('change')}", args=[obj.pk])

    def _back_to(self, obj: Any) -> HttpResponseRedirect:
        return HttpResponseRedirect(self.change_url(obj))
