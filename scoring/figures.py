"""The speed-to-lead dashboard's figures, each an aggregate query over the calls of the
accounts a manager may see: nothing loads calls into Python, only the grouped results.

A fixed number of passes, each a scan of the range at most: the counts per agent, source
and account; the response times' spread per account and agent (every percentile, on any
database: scoring/percentiles.py); the agents' legs; the counts per hour; and the previous
period's counts and spread together.

Each pass reads the days the rollup holds from its rows (per account and day, already
summed: scoring/rollup.py) and the other days (today, days changed since, accounts not
rolled up yet) from the calls, and adds the two up: the same figures either way. Every
choice the page offers (the range, one account) is answered from the rollup, except the
hours when the viewer's timezone is not a whole number of hours off UTC over the range
(India's, say): a UTC hour is then not one local hour, and the hours pass reads the calls.
"""

from __future__ import annotations

import itertools
import math
from collections import defaultdict
from dataclasses import dataclass, field
from datetime import UTC, date, datetime, time, timedelta
from typing import Any

from django.db import connection, transaction
from django.db.models import F, QuerySet
from django.db.models.functions import TruncHour
from django.utils import timezone

from accounts.models import Account
from calls.models import Call
from scoring.changes import Change, Headline
from scoring.dates import FIRST_DAY
from scoring.models import RollupHour
from scoring.percentiles import Spread, from_spread
from scoring.percentiles import percentiles as percentiles  # where callers find it
from scoring.rollup import (
    CALL_COUNTS,
    HOUR_COUNTS,
    SLOTS,
    WITHIN,
    Reached,
    Split,
    accounts_reached,
    agent_offers,
    call_groups,
    dicts,
    previous_counts,
    response_spread,
    split,
    stale_days,
    summed,
)
from scoring.selectors import accounts_coachable_by, category_labels, local_days
from users.models import User

FILLED_DAYS = 2 * 366  # the longest range whose days without leads are listed too
TREND_LABELS = 12  # at most, whatever the range: a year is labelled every 31 days
WITHIN_LABELS = ("30 s", "60 s", "5 min")  # of rollup.WITHIN
# The headline figures, each beside the previous period's (scoring/changes.py).
HEADLINES = (
    Headline("received", "Leads received", "count", None),
    Headline("answered", "Calls answered", "count", "up"),
    Headline("answer_rate", "Answer rate", "percent", "up"),
    Headline("median", "Median response", "seconds", "down"),
    Headline("p90", "90th percentile response", "seconds", "down"),
    *(
        Headline(f"within{s}", f"Connected within {label}", "percent", "up")
        for s, label in zip(WITHIN, WITHIN_LABELS, strict=True)
    ),
    Headline("noagent", "Ended NOAGENT", "count", "down"),
    Headline("appointments", "Appointments set", "count", "up"),
)


@dataclass
class Bar:
    label: str
    value: float
    height: float  # 0..100, share of the value axis' top (value_axis)
    # A second series' height, drawn in front (the trend's answered calls).
    second: float = 0
    # Long charts label every few bars only, so labels never overlap.
    labelled: bool = True
    # Where the bar stands in the chart's CHART_WIDTH units, and how wide it is.
    x: float = 0
    width: float = 0

    @property
    def middle(self) -> float:
        """Where its label is centred."""
        return self.x + self.width / 2


@dataclass
class Figures:
    first: date
    last: date
    received: int = 0
    answered: int = 0
    median: float | None = None
    p90: float | None = None
    within: list[tuple[str, float | None]] = field(default_factory=list)
    answer_rate: float | None = None
    noagent: int = 0
    noagent_by_hour: list[Bar] = field(default_factory=list)
    agents: list[dict[str, Any]] = field(default_factory=list)
    sources: list[dict[str, Any]] = field(default_factory=list)
    categories: list[tuple[int, str, float | None]] = field(default_factory=list)
    trend: list[Bar] = field(default_factory=list)
    trend_rows: list[dict[str, Any]] = field(default_factory=list)
    appointments: int = 0
    # The previous period of the same length (None before FIRST_DAY), and each headline
    # figure beside its value then, in HEADLINES' order.
    previous_first: date | None = None
    previous_last: date | None = None
    changes: list[Change] = field(default_factory=list)
    # The headline figures per account, when more than one account is in view (a global
    # manager's comparison); the accounts with leads in the range, by name.
    accounts: list[dict[str, Any]] = field(default_factory=list)


def _share(part: int, whole: int) -> float | None:
    return None if not whole else 100.0 * part / whole


# The charts' width in SVG units (pages/partials/bars.html): a day or an hour gets an
# equal slot of it, at most MAX_SLOT wide, so one bar does not fill the chart alone.
CHART_WIDTH = 300
MAX_SLOT = 30
# The value axis has a gridline at 0 and every step up to its top, AXIS_STEPS steps at
# most: a step of 1, 2 or 5 times a power of ten, so each gridline reads as a round number.
AXIS_STEPS = 5


def value_axis(top: float) -> list[int]:
    """The value axis' gridlines for bars up to ``top``: from 0, a round step apart, to
    the first gridline at or above ``top``; the step is 1 at least (most charts count)."""
    step = next(
        size
        for power in itertools.count()
        for size in (10**power, 2 * 10**power, 5 * 10**power)
        if size * AXIS_STEPS >= top
    )
    return [step * n for n in range(max(1, math.ceil(top / step)) + 1)]


def bars(
    pairs: list[tuple[str, float]],
    second: list[float] | None = None,
    *,
    labels: int = 8,
) -> list[Bar]:
    """Bars over the chart's width, ``labels`` of them labelled at most; a bar's height
    is its share of the value axis' top (``value_axis``), so the gridlines read true."""
    top = value_axis(max([value for _, value in pairs], default=0))[-1]
    every = max(1, math.ceil(len(pairs) / labels))
    slot = min(MAX_SLOT, CHART_WIDTH / max(1, len(pairs)))
    left = (CHART_WIDTH - slot * len(pairs)) / 2  # few bars stand in the middle
    return [
        Bar(
            label,
            value,
            100.0 * value / top,
            100.0 * (second[i] if second else 0) / top,
            labelled=i % every == 0,
            x=left + slot * i + slot * 0.1,
            width=slot * 0.8,
        )
        for i, (label, value) in enumerate(pairs)
    ]


# Summed over the groups of one query (agent x source x account): the totals, the sources, the
# agents and the categories all come from that one scan of the calls.
_SUMMED = tuple(CALL_COUNTS)


def _sum(rows: list[dict[str, Any]], key: str) -> int:
    return sum(row[key] or 0 for row in rows)


def _by(rows: list[dict[str, Any]], key: str) -> dict[Any, dict[str, int]]:
    groups: dict[Any, list[dict[str, Any]]] = {}
    for row in rows:
        groups.setdefault(row[key], []).append(row)
    return {
        value: {k: _sum(group, k) for k in _SUMMED} for value, group in groups.items()
    }


def _headline(
    totals: dict[str, int], median: float | None, p90: float | None
) -> dict[str, float | None]:
    """The headline figures (HEADLINES' keys) from summed counts and the two percentiles."""
    received = totals["received"]
    return {
        "received": received,
        "answered": totals["answered"],
        "answer_rate": _share(totals["answered"], received),
        "median": median,
        "p90": p90,
        **{f"within{s}": _share(totals[f"within{s}"], received) for s in WITHIN},
        "noagent": totals["noagent"],
        "appointments": totals["appointments"],
    }


def previous_period(first: date, last: date) -> tuple[date, date] | None:
    """The days just before ``first..last``, as many (None when they would start before
    FIRST_DAY: a range of centuries has no previous period the service computes with)."""
    length = (last - first).days + 1
    if (first - FIRST_DAY).days < length:
        return None
    return first - timedelta(days=length), first - timedelta(days=1)


# PostgreSQL's default random_page_cost (4) prices an index probe for a disk that seeks;
# the dashboard's rows are in memory. With it, the agents' legs of today's ~800 calls were
# joined by a scan of every leg (100,000: 50 ms) instead of ~800 index probes (5 ms).
MEMORY_PAGE_COST = "1.1"


def dashboard_figures(
    *,
    user: User,
    first: date,
    last: date,
    account: Account | None = None,
    compare: bool = True,
    rollup: bool = True,
) -> Figures:
    """Every figure of the dashboard for the accounts ``user`` coaches (or one of them);
    with ``compare``, each headline figure beside the previous period's. Without
    ``rollup``, every day is read from the calls (the same figures, more slowly). On
    PostgreSQL, read in one transaction planned for data in memory (``MEMORY_PAGE_COST``;
    inside a transaction already, such as a test, the setting holds until it ends)."""

    def read() -> Figures:
        return _figures(
            user=user,
            first=first,
            last=last,
            account=account,
            compare=compare,
            rollup=rollup,
        )

    if connection.vendor != "postgresql":
        return read()
    with transaction.atomic(savepoint=False):
        with connection.cursor() as cursor:
            cursor.execute(
                "SELECT set_config('random_page_cost', %s, true)", [MEMORY_PAGE_COST]
            )
        return read()


def _figures(
    *,
    user: User,
    first: date,
    last: date,
    account: Account | None,
    compare: bool,
    rollup: bool,
) -> Figures:
    accounts = accounts_coachable_by(user)
    if account is not None:
        accounts = accounts.filter(pk=account.pk)
    # Read once: each condition below is built from these, without a query of its own.
    reach = accounts_reached(accounts, rollup=rollup)
    period = previous_period(first, last) if compare else None
    stale = stale_days(reach, period[0] if period else first, last)
    parts = split(reach, stale, first, last)
    figures = Figures(first=first, last=last)
    groups = call_groups(parts)
    totals = {key: _sum(groups, key) for key in _SUMMED}
    figures.received, figures.answered = totals["received"], totals["answered"]
    figures.noagent = totals["noagent"]
    figures.appointments = totals["appointments"]
    figures.answer_rate = _share(figures.answered, figures.received)
    figures.within = [
        (label, _share(totals[f"within{s}"], figures.received))
        for s, label in zip(WITHIN, WITHIN_LABELS, strict=True)
    ]
    # Every percentile from one scan: the response times counted per account and agent.
    everywhere: Spread = defaultdict(int)
    per_account: dict[Any, Spread] = defaultdict(lambda: defaultdict(int))
    per_agent: dict[Any, Spread] = defaultdict(lambda: defaultdict(int))
    for account_id, agent_id, seconds, count in response_spread(parts):
        everywhere[seconds] += count
        per_account[account_id][seconds] += count
        per_agent[agent_id][seconds] += count
    figures.median, figures.p90 = from_spread(everywhere, (0.5, 0.9))
    now = _headline(totals, figures.median, figures.p90)
    before: dict[str, float | None] = {}
    if period is not None:
        figures.previous_first, figures.previous_last = period
        before = _previous(split(reach, stale, *period))
    figures.changes = [
        Change(headline, now[headline.key], before.get(headline.key))
        for headline in HEADLINES
    ]
    if len(reach) > 1:
        figures.accounts = _per_account(groups, per_account, reach)
    figures.sources = _sources(groups)
    figures.agents = _agents(
        _by(groups, "agent"),
        agent_offers(parts),
        {agent: from_spread(counts, (0.5,)) for agent, counts in per_agent.items()},
    )
    figures.categories = _categories(totals, accounts)
    _by_hour(figures, parts, reach)
    return figures


def _sources(groups: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """Per lead source: leads, answered, answer rate, average response; most leads first."""
    return sorted(
        (
            {
                "label": source or "(none)",
                "received": row["received"],
                "answered": row["answered"],
                "answer_rate": _share(row["answered"], row["received"]),
                "avg_response": row["response_sum"] / row["response_n"]
                if row["response_n"]
                else None,
            }
            for source, row in _by(groups, "source").items()
        ),
        key=lambda row: (-row["received"], row["label"]),
    )


def _by_hour(figures: Figures, parts: Split, reach: list[Reached]) -> None:
    """The trend per day and NOAGENT by hour of day, in the viewer's timezone: one more
    pass, by hour. Hours are cut in UTC (no timezone conversion per row, half the time; the
    rollup keeps UTC hours) and moved to local time here, when the zone is a whole number
    of hours off UTC throughout the range (each UTC hour is then one local hour);
    otherwise in SQL, over the calls of every day of the range."""
    first, last = figures.first, figures.last
    zone = timezone.get_current_timezone()
    cut_in_utc = all(
        _whole_hours(zone, moment) for moment in (first, last + timedelta(days=1))
    )
    moments: list[dict[str, Any]] = []
    calls = (
        parts.calls()
        if cut_in_utc
        else local_days(
            accounts=[(a.pk, a.zone) for a in reach], first=first, last=last
        )
    )
    if calls is not None:
        moments += dicts(
            Call.objects.filter(calls)
            .annotate(
                moment=TruncHour("received_at", tzinfo=UTC if cut_in_utc else zone)
            )
            .values("moment")
            .annotate(**HOUR_COUNTS)
            .order_by()
        )
    rolled = parts.rolled_rows() if cut_in_utc else None
    if rolled is not None:
        moments += dicts(
            RollupHour.objects.filter(rolled)
            .values(moment=F("hour"))
            .annotate(**summed(HOUR_COUNTS))
            .order_by()
        )
    days: dict[date, dict[str, Any]] = {}
    by_hour = [0] * 24
    for row in moments:
        local = timezone.localtime(row["moment"], zone)
        day = days.setdefault(
            local.date(),
            {"day": local.date(), "received": 0, "answered": 0, "within60": 0},
        )
        for key in ("received", "answered", "within60"):
            day[key] += row[key]
        by_hour[local.hour] += row["noagent"]
    figures.noagent_by_hour = bars([(f"{h:02d}", by_hour[h]) for h in range(24)])
    # Every day of the range, the days without leads too (and a day the viewer's timezone
    # adds at either end, as the range is each account's days); past FILLED_DAYS (a range
    # can span centuries) the days with leads only.
    start, end = min([first, *days]), max([last, *days])
    every_day = (end - start).days < FILLED_DAYS
    figures.trend_rows = [
        days.get(day, {"day": day, "received": 0, "answered": 0, "within60": 0})
        for day in (
            (start + timedelta(days=n) for n in range((end - start).days + 1))
            if every_day
            else sorted(days)
        )
    ]
    figures.trend = bars(
        [(f"{row['day']:%m-%d}", row["received"]) for row in figures.trend_rows],
        second=[row["answered"] for row in figures.trend_rows],
        labels=TREND_LABELS,
    )


def _whole_hours(zone: Any, day: date) -> bool:
    offset = datetime.combine(day, time(12), tzinfo=zone).utcoffset()
    return offset is not None and offset.total_seconds() % 3600 == 0


def _previous(parts: Split) -> dict[str, float | None]:
    """The headline figures of the previous period, from its counts and its spread."""
    totals, counts = previous_counts(parts)
    return _headline(totals, *from_spread(counts, (0.5, 0.9)))


def _per_account(
    groups: list[dict[str, Any]],
    per_account: dict[Any, Spread],
    reach: list[Reached],
) -> list[dict[str, Any]]:
    """The headline figures of each account with leads in the range, by name."""
    by_account = _by(groups, "account")
    return [
        {
            "name": account.name,
            "pk": account.pk,
            **_headline(
                by_account[account.pk],
                *from_spread(per_account.get(account.pk, {}), (0.5, 0.9)),
            ),
        }
        for account in reach
        if account.pk in by_account
    ]


def _agents(
    taken: dict[Any, dict[str, int]],
    offered: dict[int, dict[str, int]],
    medians: dict[Any, list[float | None]],
) -> list[dict[str, Any]]:
    """The leaderboard: per agent, calls offered and accepted (their legs), the calls
    offered to them that they answered, answered, median response, scores, appointments,
    wow; ranked by calls answered, then average score, then name."""
    taken.pop(None, None)  # calls no agent took
    names = {
        user.pk: user.get_full_name() or user.username
        for user in User.objects.filter(pk__in={*taken, *offered}).only(
            "first_name", "last_name", "username"
        )
    }
    rows: list[dict[str, Any]] = []
    for agent, name in names.items():
        mine = taken.get(agent, {})
        legs = offered.get(agent, {})
        scored = mine.get("scored", 0)
        rows.append(
            {
                "pk": agent,
                "name": name,
                "offered": legs.get("offered", 0),
                "accepted": legs.get("accepted", 0),
                "offered_calls": legs.get("offered_calls", 0),
                "answered_offered": legs.get("answered_offered", 0),
                "answer_rate": _share(
                    legs.get("answered_offered", 0), legs.get("offered_calls", 0)
                ),
                "median_response": medians.get(agent, [None])[0],
                "answered": mine.get("answered", 0),
                "scored": scored,
                # Categories applied, summed over the slots' counts, per scored call.
                "avg_score": sum(mine[f"cat{n}"] for n in SLOTS) / scored
                if scored
                else None,
                "appointments": mine.get("appointments", 0),
                "wow": mine.get("wow", 0),
            }
        )
    rows.sort(
        key=lambda row: (
            -row["answered"],
            row["avg_score"] is None,
            -(row["avg_score"] or 0),
            row["name"],
        )
    )
    for rank, row in enumerate(rows, start=1):
        row["rank"] = rank
    return rows


def _categories(
    totals: dict[str, int], accounts: QuerySet[Account]
) -> list[tuple[int, str, float | None]]:
    """Share of scored calls each category was applied on, each named as the call browser
    names it (``category_labels``: the scorecards' names, joined when accounts differ)."""
    scored = totals["scored"]
    return [
        (
            int(slot),
            label,
            100.0 * totals[f"cat{slot}"] / scored if scored else None,
        )
        for slot, label in category_labels(accounts=accounts)
    ]
