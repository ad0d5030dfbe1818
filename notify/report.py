"""The morning report: at 07:00 in their timezone, on the days they work, every manager and
global manager gets yesterday's figures for the accounts they coach by e-mail.

The figures are the dashboard's own (``scoring.figures.dashboard_figures`` for the day, and
for the same weekday a week before as the trend), so the report never disagrees with the
dashboard page. What the dashboard does not show (leads per hour, response times by
bracket, the accounts side by side, the calls to coach) comes from a few grouped queries
over the same calls: the work is bounded whatever the calls, agents or accounts.
"""

from __future__ import annotations

import base64
import io
import logging
from dataclasses import dataclass, field
from datetime import date, datetime, time, timedelta
from typing import Any
from urllib.parse import urlencode
from zoneinfo import ZoneInfo

from django.conf import settings
from django.contrib.auth.models import Permission
from django.db import connection
from django.db.models import (
    Case,
    CharField,
    Count,
    Exists,
    OuterRef,
    Q,
    QuerySet,
    Value,
    When,
)
from django.db.models.functions import Cast, Concat, TruncHour
from django.template.defaultfilters import pluralize
from django.template.loader import render_to_string
from django.urls import reverse
from django.utils import timezone
from PIL import Image, ImageDraw, ImageFont

from accounts.models import Account
from calls.models import Call, CallStatus
from core.logging import log_event
from notify.crm import call_page_url
from notify.models import Message, MessageKind
from notify.services import message_queue
from notify.trends import (
    Trend,
    appointments_of_report,
    handoffs_of_report,
    percent_shown,
    seconds_shown,
    trend,
    within60,
)
from scoring.figures import Figures, dashboard_figures
from scoring.models import CATEGORY_SLOTS, Score
from scoring.percentiles import Percentile, percentiles
from scoring.selectors import (
    COACH_ACCOUNT_CALLS,
    COACH_ORGANIZATION_CALLS,
    accounts_coachable_by,
    local_days,
)
from users.models import Membership, User, UserScheduleDay

log = logging.getLogger(__name__)

REPORT_AT = time(7)
# Users reported per run at most; the next run (five minutes on) takes the rest.
BATCH = 200
COACHING = 10  # calls worth coaching, at most
SLOTS = range(1, CATEGORY_SLOTS + 1)
# Response-time brackets: (upper bound in seconds or None, label).
BRACKETS = ((30, "0-30 s"), (60, "31-60 s"), (120, "1-2 min"), (300, "2-5 min"))
OVER = "over 5 min"
BLUE, LIGHT, GREY, INK = "#1f4e9c", "#9db8e3", "#c9ced6", "#333333"


@dataclass
class Report:
    subject: str
    text: str
    html: str
    images: list[dict[str, str]]
    day: date
    figures: Figures
    before: Figures
    trend: list[Trend] = field(default_factory=list)
    accounts: list[dict[str, Any]] = field(default_factory=list)
    coaching: list[dict[str, Any]] = field(default_factory=list)


# --- formatting, the same in both parts


def trend_rows(figures: Figures, before: Figures) -> list[Trend]:
    """The headline figures of the day against the same weekday a week before."""
    return [
        trend("Leads", figures.received, before.received, "count", False),
        trend("Answered", figures.answered, before.answered, "count", False),
        trend("Answer rate", figures.answer_rate, before.answer_rate, "percent", False),
        trend("Median response", figures.median, before.median, "secs", True),
        trend("90th percentile response", figures.p90, before.p90, "secs", True),
        trend(
            "Connected within 60 s",
            within60(figures),
            within60(before),
            "percent",
            False,
        ),
        trend("Ended NOAGENT", figures.noagent, before.noagent, "count", True),
    ]


def dashboard_url(day: date, account: int | None = None) -> str:
    """The dashboard page for one day (the query string its form takes)."""
    query: dict[str, Any] = {"date_from": day.isoformat(), "date_to": day.isoformat()}
    if account is not None:
        query["account"] = account
    return f"{settings.PUBLIC_BASE_URL}{reverse('pages:dashboard')}?{urlencode(query)}"


# --- what the dashboard does not show, from the same calls


def _per_hour(calls: QuerySet[Call], zone: ZoneInfo) -> tuple[list[int], list[int]]:
    """Leads and answered per local hour of the day (one grouped query)."""
    leads, answered = [0] * 24, [0] * 24
    rows = (
        calls.annotate(hour=TruncHour("received_at", tzinfo=zone))
        .values("hour")
        .annotate(n=Count("id"), a=Count("id", filter=Q(status=CallStatus.ANSWER)))
        .order_by()
    )
    for row in rows:
        hour = timezone.localtime(row["hour"], zone).hour
        leads[hour] += row["n"]
        answered[hour] += row["a"]
    return leads, answered


def _brackets(calls: QuerySet[Call]) -> list[int]:
    """Calls per response-time bracket, the last one open (one aggregate query)."""
    counts: dict[str, Any] = {}
    low = -1
    for n, (top, _) in enumerate(BRACKETS):
        counts[f"b{n}"] = Count(
            "id", filter=Q(response_time__gt=low, response_time__lte=top)
        )
        low = top
    counts[f"b{len(BRACKETS)}"] = Count("id", filter=Q(response_time__gt=low))
    found = calls.aggregate(**counts)
    return [found[f"b{n}"] for n in range(len(BRACKETS) + 1)]


def _per_account(
    accounts: QuerySet[Account], names: dict[int, str], day: date, week_before: date
) -> list[dict[str, Any]]:
    """The accounts side by side: one grouped query for the day, one for the week before
    (on PostgreSQL; elsewhere the percentiles take one more query per account)."""
    calls = Call.objects.filter(local_days(accounts=accounts, first=day, last=day))
    summed: dict[str, Any] = {
        "received": Count("id"),
        "answered": Count("id", filter=Q(status=CallStatus.ANSWER)),
        "within60": Count("id", filter=Q(response_time__lte=60)),
        "noagent": Count("id", filter=Q(status=CallStatus.NOAGENT)),
    }
    if connection.vendor == "postgresql":
        summed["median"] = Percentile("response_time", 0.5)
    rows: dict[int, dict[str, Any]] = {
        row["account"]: dict(row)
        for row in calls.values("account").annotate(**summed).order_by()
    }
    before = dict(
        Call.objects.filter(
            local_days(accounts=accounts, first=week_before, last=week_before)
        )
        .values_list("account")
        .annotate(Count("id"))
        .order_by()
    )
    table = []
    for pk, name in names.items():
        row = rows.get(pk, {"received": 0, "answered": 0, "within60": 0, "noagent": 0})
        if "median" not in row:
            row["median"] = percentiles(
                calls.filter(account_id=pk), "response_time", (0.5,)
            )[0]
        received = row["received"]
        table.append(
            {
                "name": name,
                "received": received,
                "answered": row["answered"],
                "answer_rate": percent_shown(100 * row["answered"] / received)
                if received
                else "—",
                "median": seconds_shown(row["median"]),
                "within60": percent_shown(100 * row["within60"] / received)
                if received
                else "—",
                "noagent": row["noagent"],
                "before": before.get(pk, 0),
                "url": dashboard_url(day, pk),
            }
        )
    return table


def _coaching(accounts: QuerySet[Account], day: date) -> list[dict[str, Any]]:
    """The scored calls of the day most worth coaching: those tagged with an alert, then
    those with the fewest categories applied, ``COACHING`` at most (two queries)."""
    applied = sum(
        (Case(When(**{f"cat{n}": True}, then=1), default=0) for n in SLOTS),
        start=Value(0),
    )
    scores = (
        Score.objects.filter(
            local_days(accounts=accounts, first=day, last=day, prefix="call__")
        )
        .annotate(n_applied=applied)
        .select_related("call__account", "call__agent")
        .order_by("n_applied", "call__received_at", "pk")
    )
    tagged = list(scores.exclude(alert="")[:COACHING])
    lowest = list(scores[:COACHING])
    # Half the list for the alerts at least (when there are that many), the rest lowest.
    chosen = tagged[: COACHING // 2]
    for score in [*lowest, *tagged[COACHING // 2 :]]:
        if len(chosen) < COACHING and score not in chosen:
            chosen.append(score)
    chosen.sort(key=lambda s: (not s.alert, s.n_applied, s.call.received_at))
    rows = []
    for score in chosen:
        call = score.call
        zone = ZoneInfo(call.account.timezone)
        rows.append(
            {
                "time": f"{call.received_at.astimezone(zone):%H:%M}",
                "account": call.account.name,
                "agent": call.agent_shown or "—",
                "lead": f"{call.first_name} {call.last_name}".strip() or call.phone,
                "applied": score.n_applied,
                "points": score.points,
                "alert": ", ".join(
                    t.strip() for t in score.alert.split(",") if t.strip()
                ),
                "url": call_page_url(call),
            }
        )
    return rows


# --- the charts: PNG images drawn with Pillow, shown inline by Content-ID


def _chart(
    labels: list[str],
    series: list[tuple[str, list[int], str]],
    *,
    every: int = 1,
    width: int = 560,
    height: int = 200,
) -> bytes:
    """Grouped bars (one group per label, one bar per series), a legend, a value scale."""
    scale = 2  # drawn at twice the size shown: sharp on high-density screens
    font = ImageFont.load_default(size=11 * scale)
    image = Image.new("RGB", (width * scale, height * scale), "white")
    draw = ImageDraw.Draw(image)
    left, right, top, bottom = 34 * scale, 8 * scale, 24 * scale, 22 * scale
    plot_w = image.width - left - right
    plot_h = image.height - top - bottom
    highest = max([1, *(v for _, values, _ in series for v in values)])
    highest += highest % 2  # even: the middle line is a whole number
    base = top + plot_h
    for fraction in (0, 0.5, 1):
        y = base - plot_h * fraction
        draw.line([(left, y), (image.width - right, y)], fill="#e4e7ec", width=scale)
        value = f"{highest * fraction:.0f}"
        draw.text((left - 4 * scale, y), value, fill=INK, font=font, anchor="rm")
    slot = plot_w / max(1, len(labels))
    bar = slot * 0.8 / len(series)
    for i, label in enumerate(labels):
        x = left + slot * i + slot * 0.1
        for j, (_, values, colour) in enumerate(series):
            if values[i]:
                y = base - plot_h * values[i] / highest
                draw.rectangle(
                    [x + bar * j, y, x + bar * (j + 1) - scale, base], colour
                )
        if i % every == 0:
            middle = left + slot * (i + 0.5)
            draw.text((middle, base + 4 * scale), label, INK, font, anchor="mt")
    x = left
    for name, _, colour in series:
        draw.rectangle([x, 6 * scale, x + 10 * scale, 16 * scale], colour)
        draw.text((x + 14 * scale, 11 * scale), name, INK, font, anchor="lm")
        x += 14 * scale + draw.textlength(name, font) + 14 * scale
    out = io.BytesIO()
    image.save(out, "PNG", optimize=True)
    return out.getvalue()


def _image(cid: str, data: bytes) -> dict[str, str]:
    return {"cid": cid, "subtype": "png", "data": base64.b64encode(data).decode()}


# --- the report


def report_build(*, user: User, day: date) -> Report:
    """The morning report of ``day`` for the accounts ``user`` coaches: the dashboard's
    figures of that day and of the same weekday a week before, per account, per agent,
    the calls worth coaching, and charts; read in the user's timezone."""
    zone = ZoneInfo(user.timezone)
    with timezone.override(zone):  # as the dashboard page shows it to this user
        return _build(user, day, zone)


def _build(user: User, day: date, zone: ZoneInfo) -> Report:
    accounts = accounts_coachable_by(user)
    names = dict(accounts.order_by("name").values_list("pk", "name"))
    week_before = day - timedelta(days=7)
    figures = dashboard_figures(user=user, first=day, last=day)
    before = dashboard_figures(user=user, first=week_before, last=week_before)
    report = Report(
        subject="",
        text="",
        html="",
        images=[],
        day=day,
        figures=figures,
        before=before,
        trend=trend_rows(figures, before),
    )
    appointment_trend, missing = appointments_of_report(accounts, day, week_before)
    report.trend += appointment_trend
    speed_trend, handoffs = handoffs_of_report(accounts, day, week_before)
    report.trend += speed_trend
    where = next(iter(names.values())) if len(names) == 1 else f"{len(names)} accounts"
    context: dict[str, Any] = {
        "user": user,
        "r": report,
        "f": figures,
        "b": before,
        "where": where,
        "week_before": week_before,
        "dashboard": dashboard_url(day),
        "outcome_missing": missing,
        "handoffs": handoffs,
        "slots": CATEGORY_SLOTS,
    }
    if figures.received:
        calls = Call.objects.filter(local_days(accounts=accounts, first=day, last=day))
        last_week = Call.objects.filter(
            local_days(accounts=accounts, first=week_before, last=week_before)
        )
        leads, answered = _per_hour(calls, zone)
        now_brackets, before_brackets = _brackets(calls), _brackets(last_week)
        hours = f"hours-{day.isoformat()}.png"
        responses = f"responses-{day.isoformat()}.png"
        report.images = [
            _image(
                hours,
                _chart(
                    [f"{h:02d}" for h in range(24)],
                    [("Leads", leads, LIGHT), ("Answered", answered, BLUE)],
                    every=3,
                ),
            ),
            _image(
                responses,
                _chart(
                    [label for _, label in BRACKETS] + [OVER],
                    [
                        (f"{week_before:%a %-d %b}", before_brackets, GREY),
                        (f"{day:%a %-d %b}", now_brackets, BLUE),
                    ],
                ),
            ),
        ]
        report.accounts = (
            _per_account(accounts, names, day, week_before) if len(names) > 1 else []
        )
        report.coaching = _coaching(accounts, day)
        context.update(
            hours_cid=hours,
            responses_cid=responses,
            leads_by_hour=list(zip(range(24), leads, answered, strict=True)),
            brackets=list(
                zip(
                    [label for _, label in BRACKETS] + [OVER],
                    now_brackets,
                    before_brackets,
                    strict=True,
                )
            ),
        )
        report.subject = (
            f"Morning report, {day:%a %-d %b} ({where}): {figures.received} "
            f"lead{pluralize(figures.received)}, "
            f"{figures.answered} answered, median response {seconds_shown(figures.median)}"
        )
    else:
        report.subject = f"Morning report, {day:%a %-d %b} ({where}): no leads"
    report.text = render_to_string("notify/report.txt", context)
    report.html = render_to_string("notify/report.html", context)
    return report


# --- when it is sent


def _coaches() -> QuerySet[User]:
    """Active users with an e-mail address who coach some account: managers with an
    account of their own, global managers with an organization."""

    def holding(codename: str) -> Q:
        granted = Permission.objects.filter(
            content_type__app_label="scoring", codename=codename
        )
        return Q(
            Exists(
                User.groups.through.objects.filter(
                    user=OuterRef("pk"), group__permissions__in=granted
                )
            )
        ) | Q(
            Exists(
                User.user_permissions.through.objects.filter(
                    user=OuterRef("pk"), permission__in=granted
                )
            )
        )

    own_account = Exists(User.accounts.through.objects.filter(user=OuterRef("pk")))
    organization = Exists(Membership.objects.filter(user=OuterRef("pk")))
    return User.objects.filter(
        (holding(COACH_ACCOUNT_CALLS) & Q(own_account))
        | (holding(COACH_ORGANIZATION_CALLS) & Q(organization)),
        is_active=True,
    ).exclude(email="")


def _working(weekday: int) -> Q:
    """Users who work on ``weekday``: by their own active schedule, or Monday to Friday."""
    scheduled = Q(schedule_active=True) & Q(
        Exists(
            UserScheduleDay.objects.filter(
                user=OuterRef("pk"), weekday=weekday, active=True
            )
        )
    )
    without = Q(schedule_active__isnull=True) | Q(schedule_active=False)
    return scheduled | (without if weekday < 5 else Q(pk__in=[]))


def report_key(user: User, local_date: date) -> str:
    return f"report:{user.pk}:{local_date.isoformat()}"


def reports_due(*, now: datetime | None = None) -> int:
    """Store (and send on commit) each morning report now due: at or past 07:00 in the
    user's timezone on a day they work, once per user and local date (the message's key),
    yesterday's figures; a day past is never sent late. At most ``BATCH`` per run."""
    now = now or timezone.now()
    coaches = _coaches()
    # Timezones where it is 07:00 or later, grouped by their local date: one query each.
    dates: dict[date, list[str]] = {}
    for zone in coaches.values_list("timezone", flat=True).distinct().order_by():
        local = now.astimezone(ZoneInfo(zone))
        if local.time() >= REPORT_AT:
            dates.setdefault(local.date(), []).append(zone)
    stored = 0
    for local_date, zones in sorted(dates.items()):
        key = Concat(
            Value("report:"),
            Cast(OuterRef("pk"), CharField()),
            Value(f":{local_date.isoformat()}"),
        )
        due = (
            coaches.filter(_working(local_date.weekday()), timezone__in=zones)
            .exclude(Exists(Message.objects.filter(key=key)))
            .order_by("pk")[: BATCH - stored]
        )
        for user in due:
            stored += _store(user, local_date)
        if stored >= BATCH:
            break
    return stored


def _store(user: User, local_date: date) -> int:
    """One user's report of the day before ``local_date``; a report that fails to build
    is logged and tried again by the next run (one user's failure never stops the rest)."""
    try:
        return report_store(user=user, day=local_date - timedelta(days=1)) is not None
    except Exception as error:
        log_event(
            log,
            "notify.report_failed",
            level=logging.ERROR,
            user_id=user.pk,
            error=f"{type(error).__name__}: {error}",
        )
        return 0


def report_store(*, user: User, day: date) -> Message | None:
    """Store ``user``'s report of ``day`` and send it once the caller's transaction
    commits, under the key of the morning it is due (``day`` + 1): a report already
    stored for that morning makes nothing (None)."""
    report = report_build(user=user, day=day)
    single = list(accounts_coachable_by(user)[:2])
    return message_queue(
        key=report_key(user, day + timedelta(days=1)),
        kind=MessageKind.REPORT,
        to=[user.email],
        subject=report.subject,
        text=report.text,
        html=report.html,
        images=report.images,
        user=user,
        account=single[0] if len(single) == 1 else None,
    )
