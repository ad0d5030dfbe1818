"""Handoffs read on behalf of a caller, scoped to the accounts they may see; and the two
speed numbers of a period, each account's days in its own timezone:

- **first touch**: seconds from the lead's receipt (``Call.received_at``) to the first
  thing that reached for them, automatic or not: an automatic text to them (when it was
  due to go) or the first dial of their leg;
- **first human**: seconds to the first person: an agent connected (the lead's leg
  answered, which the pipeline dials only once an agent pressed 1) or a person's text
  from the call page.

A lead never touched (or never reached by a person) counts in neither median: the
numbers say how fast, and ``touched``/``reached`` say how many."""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Iterator
from dataclasses import dataclass
from datetime import date, datetime
from typing import Any

from django.db import connection
from django.db.models import DateTimeField, F, Min, OuterRef, QuerySet, Subquery
from django.utils import timezone

from accounts.models import Account
from calls.models import Call, CallAttempt, Leg
from core.planning import without_jit
from handoffs.models import Handoff, RollupSpeed
from scoring.percentiles import from_spread
from scoring.rollup import (
    accounts_reached,
    plain_rows,
    split,
    stale_days,
    summed,
)
from texting.models import AUTOMATIC, Direction, Purpose, Text, TextStatus

FRACTIONS = (0.5, 0.9)


@dataclass(frozen=True)
class Speed:
    leads: int  # received in the period
    touched: int  # of those, touched at all
    reached: int  # of those, reached by a person
    touch_median: float | None
    touch_p90: float | None
    human_median: float | None
    human_p90: float | None


def _first(rows: QuerySet[Any], column: str) -> Subquery:
    """The earliest ``column`` of ``rows`` (already tied to the outer call)."""
    return Subquery(
        rows.order_by()
        .values("call_id")
        .annotate(first=Min(column))
        .values("first")[:1],
        output_field=DateTimeField(),
    )


def _seconds(later: datetime | None, received: datetime) -> int | None:
    if later is None:
        return None
    return max(0, int((later - received).total_seconds()))


def _earliest(*moments: datetime | None) -> datetime | None:
    present = [moment for moment in moments if moment is not None]
    return min(present) if present else None


def speed_figures(
    *,
    accounts: QuerySet[Account],
    first: date,
    last: date,
    by: str = "account_id",
) -> dict[int | None, Speed]:
    """The two speed numbers of the leads the accounts received on their local days
    ``first`` to ``last``: overall (key None) and per account (its id), or per agent of
    the call (``by="agent_id"``; a lead no agent took counts overall only). The days the
    dashboard's rollup holds are read from its per-second histograms, the rest from the
    calls (a query each at most); the percentiles are PostgreSQL's ``percentile_cont``
    arithmetic over the merged counts."""
    if by not in ("account_id", "agent_id"):
        raise ValueError(by)
    leads: dict[int | None, int] = defaultdict(int)
    touch: dict[int | None, dict[int, int]] = defaultdict(lambda: defaultdict(int))
    human: dict[int | None, dict[int, int]] = defaultdict(lambda: defaultdict(int))
    counters = {"touch": touch, "human": human}
    for kind, group, seconds, count in _spread_of_range(accounts, first, last, by):
        for key in (None, group) if group is not None else (None,):
            if kind == "lead":
                leads[key] += count
            else:
                counters[kind][key][seconds] += count
    figures = {}
    for key in {None, *leads}:
        touch_median, touch_p90 = from_spread(touch[key], FRACTIONS)
        human_median, human_p90 = from_spread(human[key], FRACTIONS)
        figures[key] = Speed(
            leads=leads[key],
            touched=sum(touch[key].values()),
            reached=sum(human[key].values()),
            touch_median=touch_median,
            touch_p90=touch_p90,
            human_median=human_median,
            human_p90=human_p90,
        )
    return figures


def _spread_of_range(
    accounts: QuerySet[Account], first: date, last: date, by: str
) -> Spread:
    """The spread of the range: each account's days the dashboard's rollup holds from its
    ``RollupSpeed`` histograms (handoffs/rollup.py), the others (today, a day not built
    yet or changed since) from the calls: a query each at most."""
    reach = accounts_reached(accounts, rollup=True)
    parts = split(reach, stale_days(reach, first, last), first, last)
    calls = parts.calls()
    if calls is not None:
        yield from spread_of(Call.objects.filter(calls), by)
    rolled = parts.rolled_rows()
    if rolled is not None:
        yield from plain_rows(
            RollupSpeed.objects.filter(rolled)
            .values_list("kind", by, "seconds")
            .annotate(**summed(["calls"]))
            .order_by()
        )


def spread_of(calls: QuerySet[Call], by: str) -> Spread:
    """The spread of ``calls`` grouped by ``by``: counted by PostgreSQL in one query, or a
    call at a time on the embedded SQLite."""
    if connection.vendor == "postgresql":
        return _spread_in_sql(calls, by)
    return _spread_per_call(calls, by)


# ("lead", group, 0, leads), ("touch", group, seconds, leads), ("human", ...): the leads
# of each group, and how many were first touched (reached by a person) after so many
# seconds.
Spread = Iterator[tuple[str, int | None, int, int]]


def _spread_per_call(calls: QuerySet[Call], by: str) -> Spread:
    """The spread a call at a time: each call's firsts read by subqueries (the embedded
    SQLite's way; PostgreSQL's is ``_spread_in_sql``)."""
    call = OuterRef("pk")
    texts = Text.objects.filter(call=call, direction=Direction.OUT)
    lead_legs = CallAttempt.objects.filter(call=call, leg=Leg.LEAD)
    rows = (
        calls.annotate(
            auto_text=_first(
                texts.filter(purpose__in=AUTOMATIC).exclude(status=TextStatus.CANCELED),
                "due_at",
            ),
            first_dial=_first(lead_legs, "dial_requested_at"),
            connected=_first(lead_legs, "answered_at"),
            person_text=_first(
                texts.filter(purpose=Purpose.REPLY, sent_by__isnull=False),
                "created_at",
            ),
        )
        .order_by()
        .values_list(
            by,
            "received_at",
            "auto_text",
            "first_dial",
            "connected",
            "person_text",
        )
    )
    for group, received, text, dial, connected, person in rows.iterator():
        touched = _seconds(_earliest(text, dial, connected, person), received)
        reached = _seconds(_earliest(connected, person), received)
        yield "lead", group, 0, 1
        if touched is not None:
            yield "touch", group, touched, 1
        if reached is not None:
            yield "human", group, reached, 1


# Each call's first automatic text or person's text and its lead legs' first dial and
# connection, joined to the calls once (not looked up call by call), then counted by
# group and whole second: a few hundred rows per group however many calls. Without JIT
# (``without_jit``): 100,000 calls over 30 days are estimated dear enough to compile.
SPREAD_SQL = """
WITH calls AS ({calls}),
legs AS (
    SELECT a.call_id, MIN(a.dial_requested_at) AS dialed, MIN(a.answered_at) AS connected
    FROM calls_callattempt a JOIN calls ON calls.id = a.call_id
    WHERE a.leg = %s
    GROUP BY a.call_id
),
texts AS (
    SELECT t.call_id,
        MIN(t.due_at) FILTER (WHERE t.purpose = ANY(%s) AND t.status <> %s) AS automatic,
        MIN(t.created_at) FILTER (WHERE t.purpose = %s AND t.sent_by_id IS NOT NULL)
            AS person
    FROM texting_text t JOIN calls ON calls.id = t.call_id
    WHERE t.direction = %s
    GROUP BY t.call_id
),
firsts AS (
    SELECT calls.grp,
        FLOOR(EXTRACT(EPOCH FROM
            LEAST(texts.automatic, legs.dialed, legs.connected, texts.person)
            - calls.received_at))::int AS touched,
        FLOOR(EXTRACT(EPOCH FROM
            LEAST(legs.connected, texts.person) - calls.received_at))::int AS reached
    FROM calls
    LEFT JOIN legs ON legs.call_id = calls.id
    LEFT JOIN texts ON texts.call_id = calls.id
)
SELECT grp, touched, reached, GROUPING(touched), GROUPING(reached), COUNT(*)
FROM firsts
GROUP BY GROUPING SETS ((grp), (grp, touched), (grp, reached))
"""


def _spread_in_sql(calls: QuerySet[Call], by: str) -> Spread:
    """``_spread_per_call``'s counts, grouped by PostgreSQL in one query: a row per
    group (its leads), per group and second to first touch, per group and second to
    first human (the calls never touched or never reached left out)."""
    inner, params = (
        calls.order_by()
        .annotate(grp=F(by))
        .values("id", "received_at", "grp")
        .query.sql_with_params()
    )
    sql = SPREAD_SQL.format(calls=inner)
    with without_jit(), connection.cursor() as cursor:
        cursor.execute(
            sql,
            [
                *params,
                str(Leg.LEAD),
                [str(purpose) for purpose in AUTOMATIC],
                str(TextStatus.CANCELED),
                str(Purpose.REPLY),
                str(Direction.OUT),
            ],
        )
        rows = cursor.fetchall()
    for group, touched, reached, no_touch, no_reach, count in rows:
        if no_touch and no_reach:
            yield "lead", group, 0, count
        elif not no_touch and touched is not None:
            yield "touch", group, max(0, touched), count  # (GREATEST would hide NULL)
        elif not no_reach and reached is not None:
            yield "human", group, max(0, reached), count


def handoffs_open_of(*, accounts: QuerySet[Account], limit: int = 50) -> list[Handoff]:
    """The accounts' open handoffs, the longest waiting first (at most ``limit``)."""
    return list(
        Handoff.objects.filter(account__in=accounts, closed_at__isnull=True)
        .select_related("account", "call")
        .order_by("wait_from", "pk")[:limit]
    )


def handoffs_open_count(*, accounts: QuerySet[Account]) -> int:
    return Handoff.objects.filter(account__in=accounts, closed_at__isnull=True).count()


def handoff_age_minutes(handoff: Handoff, now: datetime | None = None) -> int:
    """Whole minutes the handoff has waited (from when its limit counts)."""
    now = now or timezone.now()
    return max(0, int((now - handoff.wait_from).total_seconds() // 60))
