"""Support's screens for webhook endpoints and their deliveries.

Endpoints are made, changed and rotated only through ``webhooks.services``; a signing
secret is shown once, on the page that made it (the accounts admin's "copy it now" page).
"""

from __future__ import annotations

import json
from collections.abc import Callable
from datetime import datetime, timedelta
from typing import Any

from django import forms
from django.contrib import admin, messages
from django.core.exceptions import ValidationError
from django.db.models import QuerySet
from django.http import HttpRequest, HttpResponse
from django.template.defaultfilters import pluralize
from django.template.response import TemplateResponse
from django.urls import reverse
from django.utils import timezone
from django.utils.html import format_html

from accounts.models import Account, Organization
from core.admin import (
    ObjectToolsAdmin,
    ReadOnlyAdminMixin,
    ShownKey,
    WithinFilter,
    render_confirm,
    render_keys,
    zoned,
)
from core.validation import digits_only
from webhooks.models import (
    SUBSCRIBABLE,
    DeliveryStatus,
    WebhookDelivery,
    WebhookEndpoint,
)
from webhooks.services import (
    webhook_delivery_resend,
    webhook_endpoint_create,
    webhook_endpoint_delete,
    webhook_endpoint_replay,
    webhook_endpoint_update,
    webhook_secret_rotate,
    webhook_test_send,
    webhook_url_check,
)

REPLAY_PAGE = "admin/webhooks/replay.html"
# How a signing secret is kept (webhooks.signing): encrypted, as the service signs with it.
KEPT_ENCRYPTED = (
    "The service keeps it encrypted, to sign deliveries with, and never shows it again: "
    "a lost secret cannot be recovered, only replaced (rotate it)."
)
# Carries a secret made in save_form() to response_add() within one request; never stored.
_SECRET = "_webhooks_admin_secret"  # noqa: S105  (an attribute name)


class FailingFilter(admin.SimpleListFilter):
    title = "failing"
    parameter_name = "failing"

    def lookups(self, request: HttpRequest, model_admin: Any) -> list[tuple[str, str]]:
        return [("yes", "Failing since its last success")]

    def queryset(self, request: HttpRequest, queryset: QuerySet[Any]) -> QuerySet[Any]:
        if self.value() == "yes":
            return queryset.filter(failing_since__isnull=False)
        return queryset


class AttemptedFilter(WithinFilter):
    title = "last attempt"
    parameter_name = "attempted"
    field = "last_attempt_at"


class WebhookEndpointForm(forms.ModelForm):
    url = forms.URLField(
        label="URL",
        max_length=2000,
        assume_scheme="https",
        help_text="HTTPS; private addresses are refused.",
    )
    event_types = forms.MultipleChoiceField(
        choices=[(t.value, t.label) for t in SUBSCRIBABLE],
        widget=forms.CheckboxSelectMultiple,
        required=False,
        help_text="Leave all unticked for every event type.",
    )

    class Meta:
        model = WebhookEndpoint
        fields = [
            "organization",
            "url",
            "description",
            "accounts",
            "event_types",
            "is_active",
        ]

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        field = self.fields.get("accounts")
        if not isinstance(field, forms.ModelMultipleChoiceField):
            return
        accounts = Account.objects.select_related("organization").order_by(
            "organization__name", "name"
        )
        organization_id = self._organization_id()
        if organization_id is not None:
            # Only the organization's accounts are offered (and accepted: anything else is
            # "not one of the available choices"; the service checks again).
            field.queryset = accounts.filter(organization_id=organization_id)
        else:
            # An add page before the organization is chosen: every account, named with its
            # organization; clean() refuses another organization's.
            field.queryset = accounts
            field.label_from_instance = lambda a: f"{a.organization.name} · {a.name}"  # type: ignore[method-assign,assignment]
            field.help_text = (
                f"{field.help_text} Open this page from an organization "
                "(?organization=ID) to see only its accounts."
            )

    def _organization_id(self) -> int | None:
        """The organization the endpoint is for: its own, the one posted, or the page's."""
        if self.instance.pk:
            return self.instance.organization_id
        chosen = (
            self.data.get("organization")
            if self.is_bound
            else self.initial.get("organization")
        )
        if isinstance(chosen, Organization):
            return chosen.pk
        chosen = str(chosen or "").strip()
        return int(chosen) if digits_only(chosen) else None

    def clean_url(self) -> str:
        url = str(self.cleaned_data["url"])
        if self.instance.pk and url == self.instance.url:
            return url
        try:
            webhook_url_check(url=url)
        except ValidationError as error:
            raise ValidationError(error.message_dict["url"]) from None
        return url

    def clean(self) -> dict[str, Any]:
        data = super().clean() or {}
        organization = data.get("organization") or getattr(
            self.instance, "organization", None
        )
        accounts: list[Account] = list(data.get("accounts") or [])
        if organization and any(a.organization_id != organization.pk for a in accounts):
            self.add_error("accounts", "Choose accounts of the organization.")
        return data


@admin.register(WebhookEndpoint)
class WebhookEndpointAdmin(ObjectToolsAdmin):
    form = WebhookEndpointForm
    list_display = [
        "__str__",
        "organization",
        "url",
        "is_active",
        "disabled_reason",
        "failing_since",
        "secret_prefix",
        "deliveries_link",
    ]
    list_filter = ["is_active", FailingFilter, "organization"]
    list_select_related = ["organization"]
    search_fields = ["url", "description", "organization__name"]
    filter_horizontal = ["accounts"]
    readonly_fields = [
        "secret_prefix",
        "previous_secret_expires_at",
        "failing_since",
        "disabled_at",
        "disabled_reason",
        "created_at",
        "deliveries_link",
    ]

    def get_readonly_fields(self, request: HttpRequest, obj: Any = None) -> list[str]:
        fields = list(self.readonly_fields)
        # Moving an endpoint to another organization would send it someone else's events.
        return [*fields, "organization"] if obj else fields

    # Deleting an endpoint deletes its deliveries with it (webhook_endpoint_delete): they
    # are its attempts to reach that URL, pending ones must stop, and the events stay for
    # every other endpoint. Deliveries are read-only here, so the admin would otherwise
    # refuse ("no permission to delete webhook deliveries") whenever one exists.
    def get_deleted_objects(self, objs: Any, request: HttpRequest) -> Any:
        deleted, counts, perms_needed, protected = super().get_deleted_objects(
            objs, request
        )
        perms_needed.discard(WebhookDelivery._meta.verbose_name)
        return deleted, counts, perms_needed, protected

    def delete_model(self, request: HttpRequest, obj: WebhookEndpoint) -> None:
        webhook_endpoint_delete(endpoint=obj)

    def delete_queryset(
        self, request: HttpRequest, queryset: QuerySet[WebhookEndpoint]
    ) -> None:
        for endpoint in queryset:
            webhook_endpoint_delete(endpoint=endpoint)

    @admin.display(description="deliveries")
    def deliveries_link(self, obj: WebhookEndpoint) -> str:
        if not obj.pk:
            return "—"
        return format_html(
            '<a href="{}?endpoint__id__exact={}">Deliveries</a>',
            reverse("admin:webhooks_webhookdelivery_changelist"),
            obj.pk,
        )

    # --- made and changed through the services

    def save_form(self, request: HttpRequest, form: Any, change: bool) -> Any:
        if change:
            return form.save(commit=False)
        data = form.cleaned_data
        endpoint, secret = webhook_endpoint_create(
            organization=data["organization"],
            url=data["url"],
            description=data["description"],
            accounts=list(data["accounts"]),
            event_types=data["event_types"],
            is_active=data["is_active"],
        )
        setattr(request, _SECRET, secret)
        return endpoint

    def save_model(
        self, request: HttpRequest, obj: WebhookEndpoint, form: Any, change: bool
    ) -> None:
        if change:
            data = form.cleaned_data
            current = WebhookEndpoint.objects.get(pk=obj.pk)
            webhook_endpoint_update(
                endpoint=current,
                url=data["url"],
                description=data["description"],
                accounts=list(data["accounts"]),
                event_types=data["event_types"],
                is_active=data["is_active"],
            )

    def save_related(
        self, request: HttpRequest, form: Any, formsets: Any, change: bool
    ) -> None:
        pass  # the services set the accounts

    def response_add(
        self,
        request: HttpRequest,
        obj: WebhookEndpoint,
        post_url_continue: str | None = None,
    ) -> HttpResponse:
        secret = getattr(request, _SECRET)
        delattr(request, _SECRET)
        return self._show_secret(request, obj, secret, "New webhook endpoint")

    def _show_secret(
        self, request: HttpRequest, endpoint: WebhookEndpoint, secret: str, title: str
    ) -> HttpResponse:
        return render_keys(
            self,
            request,
            title=title,
            keys=[
                ShownKey(
                    str(endpoint),
                    reverse(
                        "admin:webhooks_webhookendpoint_change", args=[endpoint.pk]
                    ),
                    "Signing secret",
                    "",
                    secret,
                )
            ],
            notes=[
                "The receiver verifies each delivery's webhook-signature header with this "
                "secret (docs/integrators-guide.md, Webhooks)."
            ],
            kept=KEPT_ENCRYPTED,
        )

    # --- tools on the change page: rotate the secret, send a test event, replay since

    def object_tools(self) -> list[tuple[str, str, Callable[..., HttpResponse], str]]:
        return [
            ("send_test", "send-test", self.send_test_view, "Send test event"),
            ("replay", "replay", self.replay_view, "Replay since…"),
            ("rotate", "rotate-secret", self.rotate_view, "Rotate signing secret"),
        ]

    def rotate_view(self, request: HttpRequest, object_id: str) -> HttpResponse:
        endpoint = self._changeable(request, object_id)
        if request.method == "POST":
            secret = webhook_secret_rotate(endpoint=endpoint)
            return self._show_secret(request, endpoint, secret, "New signing secret")
        return render_confirm(
            self,
            request,
            title="Rotate signing secret?",
            objects=[endpoint],
            explanation=[
                "A new secret is made and shown once. Deliveries carry a signature under "
                "both secrets for the overlap period, so the receiver can switch without "
                "missing a delivery; after it, the old secret no longer signs."
            ],
            button="Rotate signing secret",
        )

    def send_test_view(self, request: HttpRequest, object_id: str) -> HttpResponse:
        endpoint = self._changeable(request, object_id)
        if request.method == "POST":
            event = webhook_test_send(endpoint=endpoint)
            level = messages.SUCCESS if endpoint.is_active else messages.WARNING
            note = (
                "" if endpoint.is_active else " It is sent once the endpoint is active."
            )
            self.message_user(
                request,
                f"Test event {event.public_id} queued for {endpoint}.{note}",
                level,
            )
            return self._back_to(endpoint)
        return render_confirm(
            self,
            request,
            title="Send a test event?",
            objects=[endpoint],
            explanation=[
                "A test_event is signed and sent to this endpoint only; its delivery is "
                "listed with the endpoint's deliveries."
            ],
            button="Send test event",
        )

    def replay_view(self, request: HttpRequest, object_id: str) -> HttpResponse:
        endpoint = self._changeable(request, object_id)
        form = ReplayForm(request.POST or None)
        if request.method == "POST" and form.is_valid():
            count = webhook_endpoint_replay(
                endpoint=endpoint, since=form.cleaned_data["since"]
            )
            self.message_user(
                request,
                f"{count} event{pluralize(count)} queued again for {endpoint}.",
            )
            return self._back_to(endpoint)
        context = {
            **self.admin_site.each_context(request),
            "opts": self.opts,
            "title": f"Replay events to {endpoint}",
            "endpoint": endpoint,
            "form": form,
        }
        return TemplateResponse(request, REPLAY_PAGE, context)


class ReplayForm(forms.Form):
    since = forms.DateTimeField(
        help_text="Every event since then (your timezone) is sent again, oldest first.",
        widget=forms.DateTimeInput(attrs={"type": "datetime-local"}),
        initial=lambda: (timezone.localtime() - timedelta(hours=1)).strftime(
            "%Y-%m-%dT%H:%M"
        ),
    )

    def clean_since(self) -> datetime:
        since: datetime = self.cleaned_data["since"]
        if since > timezone.now():
            raise ValidationError("Choose a moment in the past.")
        return since


def _shortened(text: str, most: int) -> str:
    """``text`` cut to ``most`` characters with an ellipsis, the whole of it on hover; a long
    word (a host name, an exception's name) breaks rather than widen its column."""
    if not text:
        return "—"
    shown = text if len(text) <= most else text[: most - 1] + "…"
    return format_html(
        '<span title="{}" style="overflow-wrap: anywhere">{}</span>', text, shown
    )


@admin.register(WebhookDelivery)
class WebhookDeliveryAdmin(ReadOnlyAdminMixin, admin.ModelAdmin):
    """Read-only: deliveries are written by the services; "send again" is an action."""

    # Fits a 1,280 px screen: the status first, the endpoint and the outcome cut short (in
    # full on the delivery's page), the event id searched for rather than shown.
    list_display = [
        "id",
        "status",
        "event_type",
        "endpoint_short",
        "attempts_shown",
        "last_attempt_at",
        "outcome",
    ]
    list_filter = ["status", AttemptedFilter, "event__type", "endpoint"]
    list_select_related = ["event", "endpoint"]
    search_fields = ["event__public_id"]
    date_hierarchy = "created_at"
    actions = ["send_again"]
    fields = readonly_fields = (
        "event_type",
        "event_id",
        "endpoint",
        "status",
        "attempts",
        "created_at",
        "last_attempt_at",
        "next_attempt_at",
        "retry_until",
        "delivered_at",
        "response_status",
        "response_ms",
        "response_excerpt",
        "error",
        "body_sent",
    )

    @admin.display(description="event", ordering="event__type")
    def event_type(self, obj: WebhookDelivery) -> str:
        return obj.event.type

    @admin.display(description="event id", ordering="event__public_id")
    def event_id(self, obj: WebhookDelivery) -> str:
        return obj.event.public_id

    @admin.display(description="endpoint", ordering="endpoint__url")
    def endpoint_short(self, obj: WebhookDelivery) -> str:
        return _shortened(str(obj.endpoint), 40)

    @admin.display(description="attempts", ordering="attempts")
    def attempts_shown(self, obj: WebhookDelivery) -> str:
        if obj.status == DeliveryStatus.PENDING and obj.next_attempt_at:
            return f"{obj.attempts}, next at {zoned(obj.next_attempt_at)}"
        return str(obj.attempts)

    @admin.display(description="last answer or error")
    def outcome(self, obj: WebhookDelivery) -> str:
        answer = (
            f"{obj.response_status} in {obj.response_ms or 0:,} ms"
            if obj.response_status is not None
            else ""
        )
        return _shortened(" · ".join(part for part in (answer, obj.error) if part), 60)

    @admin.display(description="body sent")
    def body_sent(self, obj: WebhookDelivery) -> str:
        pretty = json.dumps(json.loads(obj.event.body), indent=2, ensure_ascii=False)
        return format_html("<pre>{}</pre>", pretty)

    def has_resend_permission(self, request: HttpRequest) -> bool:
        return request.user.has_perm("webhooks.change_webhookdelivery")

    @admin.action(description="Send again", permissions=["resend"])
    def send_again(
        self, request: HttpRequest, queryset: QuerySet[WebhookDelivery]
    ) -> None:
        count = 0
        for delivery in queryset:
            webhook_delivery_resend(delivery=delivery)
            count += 1
        self.message_user(
            request, f"{count} deliver{pluralize(count, 'y,ies')} queued again."
        )
