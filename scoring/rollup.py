"""What the dashboard counts, and where it reads each day of a range: the rollup's rows
(scoring/models.py, "the dashboard's rollup") or the calls themselves.

Every count is defined once here, over the calls (``CALL_COUNTS``, ``OFFER_COUNTS``,
``HOUR_COUNTS``): the dashboard's raw path and the rollup's builder (scoring/rollup_build.py)
both use them, so the two cannot drift apart.

An account's day is read from the rollup when the day is complete there (the account's
``RollupCoverage`` reaches it, cut in the account's present timezone) and no call of the day
carries a stale mark; any other day (today, a day not built yet, a day changed since) is
read from the calls. Both give the same figures (tests/pages/test_dashboard_rollup.py).
The passes' rows below (``call_groups``, ``response_spread``, ``previous_counts``,
``agent_offers``) come from both, a query each at most, for scoring/figures.py to add up.
"""

from __future__ import annotations

import operator
from collections import defaultdict
from collections.abc import Iterable
from dataclasses import dataclass, field
from datetime import date, timedelta
from functools import reduce
from typing import Any
from zoneinfo import ZoneInfo

from django.db import connections
from django.db.models import Aggregate, BigIntegerField, Count, F, Q, QuerySet, Sum
from django.db.models.functions import Cast
from django.utils import timezone

from accounts.models import Account
from calls.models import AttemptOutcome, Call, CallAttempt, CallStatus, Leg
from scoring.models import (
    CATEGORY_SLOTS,
    RollupDay,
    RollupOffer,
    RollupResponse,
    RollupStale,
    RollupStaleDay,
)
from scoring.percentiles import Spread, spread
from scoring.selectors import day_start

ONE_DAY = timedelta(days=1)
SLOTS = range(1, CATEGORY_SLOTS + 1)
WITHIN = (30, 60, 300)  # "connected within 30 s, 60 s and 5 min"
ANSWERED = Q(status=CallStatus.ANSWER)

# The headline figures' counts over calls, each named as RollupDay's column that keeps it.
HEADLINE_COUNTS: dict[str, Aggregate] = {
    "received": Count("id"),
    "answered": Count("id", filter=ANSWERED),
    "noagent": Count("id", filter=Q(status=CallStatus.NOAGENT)),
    **{f"within{s}": Count("id", filter=Q(response_time__lte=s)) for s in WITHIN},
    "appointments": Count("score__appointment_date"),
}
# Every count of the calls the dashboard sums over its groups (agent x source x account).
CALL_COUNTS: dict[str, Aggregate] = {
    **HEADLINE_COUNTS,
    "response_sum": Sum("response_time"),
    "response_n": Count("response_time"),
    "scored": Count("score"),
    "wow": Count("id", filter=Q(score__wow=True)),
    **{
        f"cat{slot}": Count("id", filter=Q(**{f"score__cat{slot}": True}))
        for slot in SLOTS
    },
}
# The agents' legs (CallAttempt rows of agent legs), RollupOffer's columns.
OFFER_COUNTS: dict[str, Aggregate] = {
    # Offers (an agent's phone rang) and presses of 1, not distinct calls: a call offered
    # to the same agent in two rounds was offered twice.
    "offered": Count("id"),
    "accepted": Count("id", filter=Q(outcome=AttemptOutcome.ACCEPTED)),
    # Distinct calls offered, and those of them the agent ended up answering: the answer
    # rate's two terms, so it never passes 100%.
    "offered_calls": Count("call", distinct=True),
    "answered_offered": Count(
        "call",
        distinct=True,
        filter=Q(call__agent=F("agent"), call__status=CallStatus.ANSWER),
    ),
}
# The counts per hour (the trend per day and NOAGENT by hour), RollupHour's columns.
HOUR_COUNTS: dict[str, Aggregate] = {
    "received": Count("id"),
    "answered": Count("id", filter=ANSWERED),
    "within60": Count("id", filter=Q(response_time__lte=60)),
    "noagent": Count("id", filter=Q(status=CallStatus.NOAGENT)),
}


def dicts(rows: Iterable[Any]) -> list[dict[str, Any]]:
    """Grouped values rows as plain dicts, to add up rows of the calls and the rollup."""
    return [dict(row) for row in rows]


def plain_rows(rows: QuerySet[Any]) -> list[tuple[Any, ...]]:
    """The rows of ``rows`` (a values_list of integer columns and integer sums) as the
    database driver returns them, without Django's converter call per value: the
    rollup's histograms are some 15,000 rows a month of two accounts (25 ms of
    converters). Only for columns the driver already returns as Python ints."""
    sql, params = rows.query.sql_with_params()
    with connections[rows.db].cursor() as cursor:
        cursor.execute(sql, params)
        return cursor.fetchall()


def summed(counts: Iterable[str]) -> dict[str, Cast]:
    """The rollup's columns ``counts`` summed over its rows. Integers on every database
    (PostgreSQL sums a bigint column into a numeric, hence the cast)."""
    return {name: Cast(Sum(name), BigIntegerField()) for name in counts}


# --- which days come from where


@dataclass(frozen=True)
class Reached:
    """An account in view: its id, timezone and name, and the last day its rollup holds
    (None: no day, or its days were cut in another timezone)."""

    pk: int
    zone: str
    name: str
    through: date | None


def accounts_reached(accounts: QuerySet[Account], *, rollup: bool) -> list[Reached]:
    """``accounts`` by name with their rollup's coverage, in one query (without ``rollup``,
    as if none had any)."""
    rows = accounts.order_by("name").values_list(
        "pk",
        "timezone",
        "name",
        "rollup_coverage__through",
        "rollup_coverage__timezone",
    )
    return [
        Reached(pk, zone, name, through if rollup and cut_in == zone else None)
        for pk, zone, name, through, cut_in in rows
    ]


def stale_days(reach: list[Reached], first: date, last: date) -> dict[int, set[date]]:
    """The days from ``first`` to ``last`` the rollup holds but a call of which (or the
    day itself: ``RollupStaleDay``) changed since (a stale mark), per account: one query, none when the rollup holds no such day."""
    held = {
        account.pk: (ZoneInfo(account.zone), account.through)
        for account in reach
        if account.through is not None and account.through >= first
    }
    if not held:
        return {}
    earliest = min(day_start(first, zone) for zone, _ in held.values())
    latest = max(
        day_start(min(last, through) + ONE_DAY, zone) for zone, through in held.values()
    )
    # The calls marked, and the days marked as such (by a moment of them), in one query.
    marked = (
        RollupStale.objects.filter(
            call__account_id__in=list(held),
            call__received_at__gte=earliest,
            call__received_at__lt=latest,
        )
        .values_list("call__account_id", "call__received_at")
        .union(
            RollupStaleDay.objects.filter(
                account_id__in=list(held), at__gte=earliest, at__lt=latest
            ).values_list("account_id", "at"),
            all=True,
        )
    )
    days: dict[int, set[date]] = defaultdict(set)
    for account_id, moment in marked:
        days[account_id].add(timezone.localtime(moment, held[account_id][0]).date())
    return days


@dataclass
class Split:
    """Where a range's days are read, each account's as a list of day spans (first, last):
    ``rolled`` from the rollup, ``raw`` from the calls. Accounts with the same spans (and
    timezone, for the calls) share one condition, so the queries stay short however many
    accounts are in view."""

    rolled: dict[tuple[tuple[date, date], ...], list[int]] = field(default_factory=dict)
    raw: dict[tuple[str, tuple[tuple[date, date], ...]], list[int]] = field(
        default_factory=dict
    )

    def rolled_rows(self) -> Q | None:
        """The condition on the rollup's rows (``account``, ``day``), or None: no day."""
        return _any(
            Q(account_id__in=ids)
            & _either(Q(day__gte=start, day__lte=end) for start, end in spans)
            for spans, ids in self.rolled.items()
        )

    def calls(self, prefix: str = "") -> Q | None:
        """The condition on calls (on ``prefix`` + the call's fields, for rows that point
        at a call), or None: no day. Ranges on the account/received_at index."""
        conditions = []
        for (zone, spans), ids in self.raw.items():
            tz = ZoneInfo(zone)
            received = f"{prefix}received_at"
            conditions.append(
                Q(**{f"{prefix}account_id__in": ids})
                & _either(
                    Q(
                        **{
                            f"{received}__gte": day_start(start, tz),
                            f"{received}__lt": day_start(end + ONE_DAY, tz),
                        }
                    )
                    for start, end in spans
                )
            )
        return _any(conditions)


def split(
    reach: list[Reached], stale: dict[int, set[date]], first: date, last: date
) -> Split:
    """Each account's days ``first``..``last``: those its rollup holds and no stale mark
    touches from the rollup, the others from the calls."""
    parts = Split()
    for account in reach:
        held_until = min(last, account.through) if account.through else None
        if held_until is None or held_until < first:
            rolled: list[tuple[date, date]] = []
            raw = [(first, last)]
        else:
            marked = sorted(d for d in stale.get(account.pk, ()) if first <= d)
            marked = [d for d in marked if d <= held_until]
            rolled = _spans_between(first, held_until, marked)
            raw = [(d, d) for d in marked]
            if held_until < last:
                raw.append((held_until + ONE_DAY, last))
        if rolled:
            parts.rolled.setdefault(tuple(rolled), []).append(account.pk)
        if raw:
            parts.raw.setdefault((account.zone, tuple(raw)), []).append(account.pk)
    return parts


def _spans_between(
    first: date, last: date, holes: list[date]
) -> list[tuple[date, date]]:
    """The spans of days ``first``..``last`` left between the sorted days ``holes``."""
    spans = []
    start = first
    for hole in holes:
        if start < hole:
            spans.append((start, hole - ONE_DAY))
        start = hole + ONE_DAY
    if start <= last:
        spans.append((start, last))
    return spans


def _any(conditions: Iterable[Q]) -> Q | None:
    """The conditions OR-ed, or None when there are none."""
    listed = list(conditions)
    return _either(listed) if listed else None


def _either(conditions: Iterable[Q]) -> Q:
    """The conditions (one at least) OR-ed."""
    return reduce(operator.or_, conditions)


# --- the passes' rows: from the calls of the days read there, from the rollup's rows of
# the others, for the caller to add up (scoring/figures.py)


def call_groups(parts: Split) -> list[dict[str, Any]]:
    """The counts per agent, source and account (``CALL_COUNTS``), from the calls of the
    days read there and from the rollup's rows of the others: one query each at most."""
    groups: list[dict[str, Any]] = []
    calls = parts.calls()
    if calls is not None:
        groups += dicts(
            Call.objects.filter(calls)
            .values("agent", "source", "account")
            .annotate(**CALL_COUNTS)
            .order_by()
        )
    rolled = parts.rolled_rows()
    if rolled is not None:
        groups += dicts(
            RollupDay.objects.filter(rolled)
            .values("source", "account", agent=F("agent_id"))
            .annotate(**summed(CALL_COUNTS))
            .order_by()
        )
    return groups


def response_spread(parts: Split) -> list[tuple[Any, ...]]:
    """(account, agent, response time, calls) rows: the calls' spread and the rollup's
    histograms, whose counts add up to the same spread."""
    rows: list[tuple[Any, ...]] = []
    calls = parts.calls()
    if calls is not None:
        rows += spread(
            Call.objects.filter(calls), ("account", "agent"), "response_time"
        )
    rolled = parts.rolled_rows()
    if rolled is not None:
        rows += plain_rows(
            RollupResponse.objects.filter(rolled)
            .values_list("account", "agent_id", "seconds")
            .annotate(**summed(["calls"]))
            .order_by()
        )
    return rows


def previous_counts(parts: Split) -> tuple[dict[str, int], Spread]:
    """The previous period's ``HEADLINE_COUNTS`` and its spread of response times: from
    the calls, one query (their counts per response time: the spread, and summed, the
    totals); from the rollup, its sums and its histograms (two)."""
    rows: list[dict[str, Any]] = []
    calls = parts.calls()
    if calls is not None:
        rows += dicts(
            Call.objects.filter(calls)
            .values("response_time")
            .annotate(**HEADLINE_COUNTS)
            .order_by()
        )
    counts: Spread = defaultdict(int)
    for row in rows:
        if row["response_time"] is not None:
            counts[row["response_time"]] += row["received"]
    rolled = parts.rolled_rows()
    if rolled is not None:
        rows.append(
            RollupDay.objects.filter(rolled).aggregate(**summed(HEADLINE_COUNTS))
        )
        for seconds, calls_then in (
            RollupResponse.objects.filter(rolled)
            .values_list("seconds")
            .annotate(**summed(["calls"]))
            .order_by()
        ):
            counts[seconds] += calls_then
    totals = {key: sum(row[key] or 0 for row in rows) for key in HEADLINE_COUNTS}
    return totals, counts


def agent_offers(parts: Split) -> dict[int, dict[str, int]]:
    """Per agent, their legs (``OFFER_COUNTS``) on the calls of the range: from the agent
    legs of the calls of the days read there, and from the rollup's rows of the others."""
    rows: list[dict[str, Any]] = []
    calls = parts.calls(prefix="call__")
    if calls is not None:
        rows += dicts(
            CallAttempt.objects.filter(calls, leg=Leg.AGENT, agent__isnull=False)
            .values("agent")
            .annotate(**OFFER_COUNTS)
            .order_by()
        )
    rolled = parts.rolled_rows()
    if rolled is not None:
        rows += dicts(
            RollupOffer.objects.filter(rolled)
            .values(agent=F("agent_id"))
            .annotate(**summed(OFFER_COUNTS))
            .order_by()
        )
    offered: dict[int, dict[str, int]] = {}
    for row in rows:
        mine = offered.setdefault(row["agent"], dict.fromkeys(OFFER_COUNTS, 0))
        for key in OFFER_COUNTS:
            mine[key] += row[key]
    return offered
