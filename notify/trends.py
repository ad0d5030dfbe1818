"""A figure of the day against the same weekday a week before, as the morning report
shows it (value, last week's, the change with an arrow, better or worse); and the
appointment figures' rows (``appointments.figures``) with the appointments whose outcome
nobody marked; the two speed numbers' rows (``handoffs.selectors``: first touch, first
human) with the handoffs still open."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from datetime import date
from typing import Any
from zoneinfo import ZoneInfo

from django.db.models import QuerySet
from django.template.defaultfilters import pluralize

from accounts.models import Account
from appointments.figures import (
    AppointmentFigures,
    appointment_figures,
    outcome_missing,
)
from handoffs.selectors import (
    Speed,
    handoff_age_minutes,
    handoffs_open_count,
    handoffs_open_of,
    speed_figures,
)
from notify.crm import call_page_url
from scoring.figures import Figures


@dataclass(frozen=True)
class Trend:
    """One figure of the day against the same weekday a week before."""

    label: str
    now: str
    before: str
    change: str
    arrow: str  # ▲ up, ▼ down, = the same, blank: not comparable
    better: bool | None  # whether the change is for the better (None: neither)


def seconds_shown(value: float | None) -> str:
    return "—" if value is None else f"{value:.0f} s"


def percent_shown(value: float | None) -> str:
    return "—" if value is None else f"{value:.0f}%"


def within60(figures: Figures) -> float | None:
    return dict(figures.within).get("60 s")


SHOWN: dict[str, Callable[[Any], str]] = {
    "count": str,
    "secs": seconds_shown,
    "percent": percent_shown,
}


def trend(label: str, now: Any, before: Any, kind: str, lower_better: bool) -> Trend:
    shown = SHOWN[kind]
    if now is None or before is None:
        return Trend(label, shown(now), shown(before), "", "", None)
    # The change between the values as shown (a change too small to show is none).
    delta = round(now) - round(before)
    unit = {"count": "", "secs": " s", "percent": f" pt{pluralize(abs(delta))}"}[kind]
    arrow = "▲" if delta > 0 else "▼" if delta < 0 else "="
    better = None if delta == 0 else (delta < 0) == lower_better
    return Trend(
        label,
        shown(now),
        shown(before),
        f"{delta:+d}{unit}" if delta else f"0{unit}",
        arrow,
        better,
    )


def _percent_of(rate: float | None) -> float | None:
    return None if rate is None else 100 * rate


def appointment_rows(
    now: AppointmentFigures, before: AppointmentFigures
) -> list[Trend]:
    """Set rate, show rate and no-show rate against last week's."""
    return [
        trend(
            "Appointments set per answered lead",
            _percent_of(now.set_rate),
            _percent_of(before.set_rate),
            "percent",
            False,
        ),
        trend(
            "Appointments kept (show rate)",
            _percent_of(now.show_rate),
            _percent_of(before.show_rate),
            "percent",
            False,
        ),
        trend(
            "No-show rate",
            _percent_of(now.no_show_rate),
            _percent_of(before.no_show_rate),
            "percent",
            True,
        ),
    ]


def appointments_of_report(
    accounts: QuerySet[Account], day: date, week_before: date
) -> tuple[list[Trend], list[dict[str, Any]]]:
    """The day's appointment figures against last week's, and the day's appointments
    whose outcome nobody marked (by the morning after, every one of them has begun)."""
    rows = appointment_rows(
        appointment_figures(accounts=accounts, first=day, last=day),
        appointment_figures(accounts=accounts, first=week_before, last=week_before),
    )
    missing = []
    for appointment in outcome_missing(accounts=accounts, first=day, last=day):
        zone = ZoneInfo(appointment.account.timezone)
        call = appointment.call
        missing.append(
            {
                "time": f"{appointment.starts_at.astimezone(zone):%H:%M}",
                "account": appointment.account.name,
                "lead": appointment.lead_name,
                "agent": (call.agent_shown if call else "") or "—",
                "url": call_page_url(call) if call else "",
            }
        )
    return rows, missing


def speed_rows(now: Speed, before: Speed) -> list[Trend]:
    """First touch and first human side by side, median then 90th percentile, against
    last week's."""
    return [
        trend(
            "First touch, median", now.touch_median, before.touch_median, "secs", True
        ),
        trend(
            "First human, median", now.human_median, before.human_median, "secs", True
        ),
        trend("First touch, 90th pct", now.touch_p90, before.touch_p90, "secs", True),
        trend("First human, 90th pct", now.human_p90, before.human_p90, "secs", True),
    ]


def handoffs_of_report(
    accounts: QuerySet[Account], day: date, week_before: date
) -> tuple[list[Trend], dict[str, Any]]:
    """The day's two speed numbers against last week's, and the handoffs open as the
    report is written, the longest waiting first, with their age."""
    rows = speed_rows(
        speed_figures(accounts=accounts, first=day, last=day)[None],
        speed_figures(accounts=accounts, first=week_before, last=week_before)[None],
    )
    waiting = []
    for handoff in handoffs_open_of(accounts=accounts, limit=20):
        call = handoff.call
        name = f"{call.first_name} {call.last_name}".strip() if call else ""
        waiting.append(
            {
                "kind": handoff.get_kind_display(),
                "lead": name or handoff.phone,
                "account": handoff.account.name,
                "age": handoff_age_minutes(handoff),
                "escalated": handoff.escalated_at is not None,
                "url": call_page_url(call) if call else "",
            }
        )
    count = (
        handoffs_open_count(accounts=accounts) if len(waiting) == 20 else len(waiting)
    )
    return rows, {"open": waiting, "count": count}
