"""Support's overview on the admin's index page: what support checks first, read from
every app through its selectors. Only the back office reads across the apps; nothing
imports it."""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime, timedelta
from typing import Any

from django.conf import settings
from django.http import HttpRequest
from django.template.defaultfilters import pluralize
from django.urls import reverse
from django.utils import timezone
from django.utils.http import urlencode

from accounts.models import ApiKey, ScoredDataKey
from accounts.selectors import keys_recently_used
from calls.selectors import DIALING_SILENT_AFTER, QUEUED_OVERDUE_AFTER, calls_summary
from core import pace
from core.admin import zoned
from core.outbox import effects_summary
from insights.selectors import transcriptions_summary
from leads.models import Outcome
from leads.selectors import REFUSED, leads_intake_summary
from texting.selectors import number_conflicts, unrouted_texts_count
from webhooks.selectors import webhooks_summary


@dataclass(frozen=True)
class OverviewRow:
    label: str
    count: int
    url: str
    detail: bool = False  # a breakdown of the row above it


@dataclass(frozen=True)
class OverviewSection:
    """One table of the overview: ``id`` names its element (``overview-<id>``)."""

    id: str
    caption: str
    rows: list[OverviewRow]


@dataclass(frozen=True)
class KeyRow:
    kind: str
    owner: str
    owner_url: str
    organization: str
    prefix: str
    last_used: str
    usable: bool


@dataclass(frozen=True)
class NumberHolder:
    organization: str
    account: str
    account_url: str
    uses: str


@dataclass(frozen=True)
class SharedNumber:
    """A number accounts of several organizations use, each linked to its page."""

    number: str
    holders: list[NumberHolder]


@dataclass(frozen=True)
class SharedNumbers:
    numbers: list[SharedNumber]
    unrouted: int | None  # None: the user may not see those texts
    unrouted_url: str


RECENT_KEYS = 10


def support_overview(request: HttpRequest) -> dict[str, Any]:
    """What support checks first, each part for those who may see its rows: leads received
    and refused, calls queued, dialing and stuck, calls ended badly, transcriptions waiting
    and failed, the carrier's pace, numbers shared across organizations, keys used lately."""
    now, user = timezone.now(), request.user
    overview: dict[str, Any] = {}
    sections: list[OverviewSection] = []
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

        leads_rows = [
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
        sections.append(OverviewSection("leads", "Leads, last 24 hours", leads_rows))
    if user.has_perm("calls.view_call"):
        calls = calls_summary(now=now)
        changelist = reverse("admin:calls_call_changelist")

        def call_row(
            label: str, count: int, detail: bool = False, **query: str
        ) -> OverviewRow:
            return OverviewRow(label, count, f"{changelist}?{urlencode(query)}", detail)

        overdue = int(QUEUED_OVERDUE_AFTER.total_seconds() // 60)
        silent = int(DIALING_SILENT_AFTER.total_seconds() // 60)
        now_rows = [
            call_row("Queued", calls.queued, status__exact="QUEUED"),
            call_row("Dialing", calls.dialing, status__exact="DIALING"),
            call_row("Stuck", calls.stuck, stuck="any"),
            call_row(
                f"Queued, due more than {overdue} minute{pluralize(overdue)} ago",
                calls.queued_overdue,
                detail=True,
                stuck="queued",
            ),
            call_row(
                f"Dialing, no event for {silent} minute{pluralize(silent)}",
                calls.dialing_silent,
                detail=True,
                stuck="dialing",
            ),
        ]
        ended_rows = [
            call_row("Failed", calls.failed, status__exact="FAILED", ended="24h"),
            call_row("No agent", calls.noagent, status__exact="NOAGENT", ended="24h"),
        ]
        sections.append(OverviewSection("calls-now", "Calls now", now_rows))
        # The carrier's pace (core/pace.py): read from Redis, no query.
        overview["pace"] = pace.status(provider=settings.TELEPHONY_PROVIDER)
        sections.append(
            OverviewSection(
                "calls-ended", "Calls ended in the last 24 hours", ended_rows
            )
        )
    if user.has_perm("webhooks.view_webhookendpoint") and user.has_perm(
        "webhooks.view_webhookdelivery"
    ):
        sections.append(OverviewSection("webhooks", "Webhooks", _webhook_rows(now)))
    if user.has_perm("insights.view_transcription"):
        sections.append(
            OverviewSection(
                "transcriptions", "Transcriptions", _transcription_rows(now)
            )
        )
    if user.has_perm("core.view_effect") and user.has_perm("core.view_setaside"):
        sections.append(
            OverviewSection("effects", "Side effects and sweeps", _effect_rows(now))
        )
    if user.has_perm("accounts.view_account"):
        shared = _shared_numbers(user.has_perm("texting.view_unroutedtext"))
        if shared.numbers or shared.unrouted:
            overview["shared_numbers"] = shared
    if user.has_perm("accounts.view_apicredential") and user.has_perm(
        "accounts.view_account"
    ):
        overview["keys"] = [
            _key_row(key, now) for key in keys_recently_used(limit=RECENT_KEYS)
        ]
    if sections:
        overview["sections"] = sections
    return overview


def _shared_numbers(texts_visible: bool) -> SharedNumbers:
    """The numbers of several organizations (nothing is texted from them, and leads'
    texts to them wait in "texts not routed") with the accounts to settle them on."""
    return SharedNumbers(
        numbers=[
            SharedNumber(
                conflict.number,
                [
                    NumberHolder(
                        use.account.organization.name,
                        use.account.name,
                        reverse("admin:accounts_account_change", args=[use.account.pk]),
                        use.uses,
                    )
                    for use in conflict.used_by
                ],
            )
            for conflict in number_conflicts()
        ],
        unrouted=unrouted_texts_count() if texts_visible else None,
        unrouted_url=reverse("admin:texting_unroutedtext_changelist"),
    )


def _key_row(key: ApiKey | ScoredDataKey, now: datetime) -> KeyRow:
    if isinstance(key, ApiKey):
        return KeyRow(
            "API key",
            key.credential.api_user,
            reverse("admin:accounts_apicredential_change", args=[key.credential_id]),
            key.credential.organization.name,
            key.prefix,
            zoned(key.last_used_at),
            key.is_usable(now),
        )
    return KeyRow(
        "Scored-data key",
        key.account.name,
        reverse("admin:accounts_account_change", args=[key.account_id]),
        key.account.organization.name,
        key.prefix,
        zoned(key.last_used_at),
        key.is_usable(now),
    )


def _webhook_rows(now: datetime) -> list[OverviewRow]:
    """Endpoints disabled or failing, deliveries given up or waiting."""
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


def _effect_rows(now: datetime) -> list[OverviewRow]:
    """Effects failed (each with its reason, and "send again") or waiting, and sweep items
    set aside after failing again and again."""
    summary = effects_summary(since=now - timedelta(hours=24))
    effects = reverse("admin:core_effect_changelist")
    aside = reverse("admin:core_setaside_changelist")
    return [
        OverviewRow(
            "Effects failed, last 24 hours",
            summary.failed,
            f"{effects}?status__exact=failed&created=24h",
        ),
        OverviewRow(
            "Effects waiting", summary.pending, f"{effects}?status__exact=pending"
        ),
        OverviewRow(
            "Sweep items set aside", summary.set_aside, f"{aside}?set_aside__exact=1"
        ),
    ]


def _transcription_rows(now: datetime) -> list[OverviewRow]:
    """The transcription backlog (how many wait, the oldest's age) and the day's failures."""
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
