"""What the admin pages of several apps share."""

import math
from dataclasses import dataclass
from datetime import datetime, timedelta
from typing import Any
from zoneinfo import ZoneInfo, ZoneInfoNotFoundError

from django.contrib import admin
from django.contrib.admin.forms import AdminAuthenticationForm
from django.core.exceptions import ValidationError
from django.http import HttpRequest
from django.template.response import TemplateResponse
from django.urls import reverse
from django.utils import timezone
from django.utils.http import urlencode

from config.throttling import login_attempt


def zoned(at: datetime | None, zone: str | None = None) -> str:
    """A moment to the second in ``zone`` (an account's timezone) or, without one, the active
    timezone (the signed-in user's), labelled with the zone: "2026-11-22 09:14:03 MST"."""
    if at is None:
        return "—"
    return f"{at.astimezone(zoneinfo_or_current(zone)):%Y-%m-%d %H:%M:%S %Z}"


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


# --- the index page: support's overview above Django's app list


@dataclass(frozen=True)
class OverviewRow:
    label: str
    count: int
    url: str
    detail: bool = False  # a breakdown of the row above it


@dataclass(frozen=True)
class KeyRow:
    kind: str
    owner: str
    owner_url: str
    organization: str
    prefix: str
    last_used: str
    usable: bool


RECENT_KEYS = 10


def support_overview(request: HttpRequest) -> dict[str, Any]:
    """What support checks first, each part for those who may see its rows: leads received
    and refused, calls queued, dialing and stuck, calls ended badly, transcriptions waiting
    and failed, keys used lately."""
    # Imported here: config sits under every app; this page alone reads across them.
    from accounts.models import ApiKey, ScoredDataKey
    from calls.selectors import (
        DIALING_SILENT_AFTER,
        QUEUED_OVERDUE_AFTER,
        calls_summary,
    )
    from leads.models import Outcome
    from leads.selectors import REFUSED, leads_intake_summary

    now, user = timezone.now(), request.user
    overview: dict[str, Any] = {}
    if user.has_perm("leads.view_lead"):
        intake = leads_intake_summary(since=now - timedelta(hours=24))
        leads = reverse("admin:leads_lead_changelist")

        def lead_row(
            label: str, count: int, detail: bool = False, **query: str
        ) -> OverviewRow:
            return OverviewRow(
                label,
                count,
                f"{leads}?{urlencode({'received': '24h', **query})}",
                detail,
            )

        overview["leads"] = [
            lead_row("Received", intake.received),
            *(
                lead_row(label, intake.by_outcome[outcome], outcome__exact=outcome)
                for outcome, label in [
                    (Outcome.ACCEPTED, "Accepted (called)"),
                    (Outcome.DUPLICATE, "Duplicate"),
                    (Outcome.RECEIVED, "Not processed yet"),
                ]
            ),
            lead_row(
                "Refused (not called)",
                intake.refused,
                outcome__in=",".join(REFUSED),
            ),
            *(
                lead_row(
                    Outcome(outcome).label,
                    intake.by_outcome[outcome],
                    detail=True,
                    outcome__exact=outcome,
                )
                for outcome in REFUSED
            ),
        ]
    if user.has_perm("calls.view_call"):
        calls = calls_summary(now=now)
        changelist = reverse("admin:calls_call_changelist")

        def call_row(
            label: str, count: int, detail: bool = False, **query: str
        ) -> OverviewRow:
            return OverviewRow(label, count, f"{changelist}?{urlencode(query)}", detail)

        overdue = int(QUEUED_OVERDUE_AFTER.total_seconds() // 60)
        silent = int(DIALING_SILENT_AFTER.total_seconds() // 60)
        overview["calls_now"] = [
            call_row("Queued", calls.queued, status__exact="QUEUED"),
            call_row("Dialing", calls.dialing, status__exact="DIALING"),
            call_row("Stuck", calls.stuck, stuck="any"),
            call_row(
                f"Queued, due more than {overdue} minutes ago",
                calls.queued_overdue,
                detail=True,
                stuck="queued",
            ),
            call_row(
                f"Dialing, no event for {silent} minutes",
                calls.dialing_silent,
                detail=True,
                stuck="dialing",
            ),
        ]
        overview["calls_ended"] = [
            call_row("Failed", calls.failed, status__exact="FAILED", ended="24h"),
            call_row("No agent", calls.noagent, status__exact="NOAGENT", ended="24h"),
        ]
    if user.has_perm("webhooks.view_webhookendpoint") and user.has_perm(
        "webhooks.view_webhookdelivery"
    ):
        overview["webhooks"] = _webhook_rows(now)
    if user.has_perm("insights.view_transcription"):
        overview["transcriptions"] = _transcription_rows(now)
    if user.has_perm("accounts.view_apicredential") and user.has_perm(
        "accounts.view_account"
    ):
        used = {"last_used_at__isnull": False}
        rows = [
            (
                key.last_used_at or now,
                KeyRow(
                    "API key",
                    key.credential.api_user,
                    reverse(
                        "admin:accounts_apicredential_change", args=[key.credential_id]
                    ),
                    key.credential.organization.name,
                    key.prefix,
                    zoned(key.last_used_at),
                    key.is_usable(now),
                ),
            )
            for key in ApiKey.objects.filter(**used)
            .select_related("credential__organization")
            .order_by("-last_used_at")[:RECENT_KEYS]
        ] + [
            (
                key.last_used_at or now,
                KeyRow(
                    "Scored-data key",
                    key.account.name,
                    reverse("admin:accounts_account_change", args=[key.account_id]),
                    key.account.organization.name,
                    key.prefix,
                    zoned(key.last_used_at),
                    key.is_usable(now),
                ),
            )
            for key in ScoredDataKey.objects.filter(**used)
            .select_related("account__organization")
            .order_by("-last_used_at")[:RECENT_KEYS]
        ]
        rows.sort(key=lambda row: row[0], reverse=True)
        overview["keys"] = [row for _, row in rows[:RECENT_KEYS]]
    return overview


def _webhook_rows(now: datetime) -> list[OverviewRow]:
    """Endpoints disabled or failing, deliveries given up or waiting."""
    from webhooks.selectors import webhooks_summary

    summary = webhooks_summary(now=now)
    endpoints = reverse("admin:webhooks_webhookendpoint_changelist")
    deliveries = reverse("admin:webhooks_webhookdelivery_changelist")
    return [
        OverviewRow(
            "Endpoints disabled", summary.disabled, f"{endpoints}?is_active__exact=0"
        ),
        OverviewRow(
            "Endpoints failing (retrying)",
            summary.failing,
            f"{endpoints}?is_active__exact=1&failing=yes",
        ),
        OverviewRow(
            "Deliveries failed, last 24 hours",
            summary.failed,
            f"{deliveries}?status__exact=failed&attempted=24h",
        ),
        OverviewRow(
            "Deliveries waiting", summary.waiting, f"{deliveries}?status__exact=pending"
        ),
    ]


def _transcription_rows(now: datetime) -> list[OverviewRow]:
    """The transcription backlog (how many wait, the oldest's age) and the day's failures."""
    from insights.selectors import transcriptions_summary

    summary = transcriptions_summary(now=now)
    changelist = reverse("admin:insights_transcription_changelist")
    return [
        OverviewRow("Waiting", summary.pending, f"{changelist}?status__exact=pending"),
        OverviewRow(
            "Oldest waiting, minutes",
            summary.oldest_pending_minutes,
            f"{changelist}?status__exact=pending&o=8",
            detail=True,
        ),
        OverviewRow(
            "Failed, last 24 hours",
            summary.failed,
            f"{changelist}?status__exact=failed",
        ),
    ]


class SupportAdminSite(admin.AdminSite):
    """Django's admin site with support's overview above the app list on its index page
    (templates/admin/index.html). Made the default site by config.apps.SupportAdminConfig.
    Without Django's navigation sidebar (the index and breadcrumbs lead everywhere): on a
    1,280 px screen its 300 px are what the widest tables (deliveries, attempts) need."""

    enable_nav_sidebar = False

    def index(
        self, request: HttpRequest, extra_context: dict[str, Any] | None = None
    ) -> TemplateResponse:
        context = {"overview": support_overview(request), **(extra_context or {})}
        return super().index(request, extra_context=context)


class ReadOnlyAdminMixin:
    """Rows that a workflow owns (leads, calls): support looks, and acts only through actions."""

    def has_add_permission(self, request: HttpRequest, obj: Any = None) -> bool:
        return False

    def has_change_permission(self, request: HttpRequest, obj: Any = None) -> bool:
        return False

    def has_delete_permission(self, request: HttpRequest, obj: Any = None) -> bool:
        return False


class ThrottledSignInMixin:
    """A sign-in form refused for the rest of the minute after too many failures from one
    address or against one username (``ADMIN_LOGIN_FAILURE_LIMIT``, config/throttling.py).
    Each attempt counts as a failure from before it is tried until it succeeds, so a burst
    of concurrent guesses gets no more tries than the limit. Mixed into the admin's sign-in
    and the pages' (users/views.py)."""

    request: Any
    cleaned_data: dict[str, Any]
    throttled_message = "Too many failed sign-in attempts. Please wait %(seconds)s seconds and try again."

    def clean(self) -> dict[str, Any]:
        if self.request is None:
            return super().clean()  # type: ignore[misc]
        username = str(self.cleaned_data.get("username") or "")
        attempt = login_attempt(self.request, username)
        if attempt.refused_for is not None:
            raise ValidationError(
                self.throttled_message,
                code="throttled",
                params={"seconds": math.ceil(attempt.refused_for)},
            )
        failed = False
        try:
            return super().clean()  # type: ignore[misc]
        except ValidationError:
            failed = True  # stays counted
            raise
        finally:
            if not failed:
                attempt.forget()


class AdminLoginForm(ThrottledSignInMixin, AdminAuthenticationForm):
    """The admin sign-in, throttled (``ThrottledSignInMixin``)."""
