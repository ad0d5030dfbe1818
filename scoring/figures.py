"""The speed-to-lead dashboard's figures, each an aggregate query over the calls of the
accounts a manager may see: nothing loads calls into Python, only the grouped results.

Percentiles use PostgreSQL's ``percentile_cont``; on other databases (the embedded SQLite
of ``make run``) the same interpolated value is read from the one or two rows at its
rank, found by ``ORDER BY ... LIMIT 1 OFFSET n``.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from datetime import date, timedelta
from typing import Any

from django import forms
from django.db import connection
from django.db.models import (
    Aggregate,
    Avg,
    Count,
    F,
    FloatField,
    IntegerField,
    Q,
    QuerySet,
    Value,
)
from django.db.models.functions import Cast, ExtractHour, TruncDate
from django.utils import timezone

from accounts.models import Account
from calls.models import AttemptOutcome, Call, CallAttempt, CallStatus, Leg
from scoring.models import CATEGORY_SLOTS, ScorecardCategory
from scoring.selectors import (
    accounts_coachable_by,
    received_on_local_days,
)
from users.models import User

DEFAULT_DAYS = 7
WITHIN = (30, 60, 300)  # "connected within 30 s, 60 s and 5 min"
ANSWERED = Q(status=CallStatus.ANSWER)


class Percentile(Aggregate):
    """PostgreSQL's ``percentile_cont(p) WITHIN GROUP (ORDER BY expression)``."""

    function = "percentile_cont"
    template = "%(function)s(%(fraction)s) WITHIN GROUP (ORDER BY %(expressions)s)"
    output_field = FloatField()

    def __init__(self, expression: Any, fraction: float, **extra: Any) -> None:
        super().__init__(expression, fraction=float(fraction), **extra)


def percentiles(
    calls: QuerySet[Call], column: str, fractions: tuple[float, ...]
) -> list[float | None]:
    """Continuous percentiles of ``column`` over ``calls`` (nulls left out)."""
    present = calls.filter(**{f"{column}__isnull": False})
    if connection.vendor == "postgresql":
        found = present.aggregate(
            **{f"p{i}": Percentile(column, p) for i, p in enumerate(fractions)}
        )
        return [found[f"p{i}"] for i in range(len(fractions))]
    count = present.count()
    results: list[float | None] = []
    ordered = present.order_by(column).values_list(column, flat=True)
    for fraction in fractions:
        if count == 0:
            results.append(None)
            continue
        rank = fraction * (count - 1)
        low = math.floor(rank)
        values = list(ordered[low : low + 2])
        upper = values[1] if len(values) > 1 else values[0]
        results.append(values[0] + (upper - values[0]) * (rank - low))
    return results


class DashboardForm(forms.Form):
    """The dashboard's choices, from the URL: a date range and optionally one account."""

    date_from = forms.DateField(
        required=False, label="From", widget=forms.DateInput(attrs={"type": "date"})
    )
    date_to = forms.DateField(
        required=False, label="To", widget=forms.DateInput(attrs={"type": "date"})
    )
    account = forms.ModelChoiceField(
        queryset=Account.objects.none(), required=False, empty_label="Every account"
    )

    def __init__(self, *args: Any, user: User, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        field = self.fields["account"]
        assert isinstance(field, forms.ModelChoiceField)
        field.queryset = accounts_coachable_by(user).order_by("name")

    def choice(self) -> dict[str, Any]:
        """The range and account asked for (a choice that is not valid is left out); the
        last seven days by default."""
        data: dict[str, Any] = {}
        if self.is_bound:
            self.is_valid()  # cleaned_data keeps the fields that are valid
            data = self.cleaned_data
        last = data.get("date_to") or timezone.localdate()
        first = data.get("date_from") or last - timedelta(days=DEFAULT_DAYS - 1)
        if first > last:
            first, last = last, first
        return {"first": first, "last": last, "account": data.get("account")}


@dataclass
class Bar:
    label: str
    value: float
    height: float  # 0..100, share of the tallest bar
    second: float = (
        0  # a second series' height, drawn behind (the trend's answered calls)
    )


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


def _share(part: int, whole: int) -> float | None:
    return None if not whole else 100.0 * part / whole


def _bars(
    pairs: list[tuple[str, float]], second: list[float] | None = None
) -> list[Bar]:
    top = max([value for _, value in pairs] + [1])
    return [
        Bar(
            label,
            value,
            100.0 * value / top,
            100.0 * (second[i] if second else 0) / top,
        )
        for i, (label, value) in enumerate(pairs)
    ]


def _applied_count() -> Any:
    """Categories applied on a call's score (0..10): the score a page shows."""
    total: Any = Value(0)
    for slot in range(1, CATEGORY_SLOTS + 1):
        total = total + Cast(F(f"score__cat{slot}"), IntegerField())
    return total


def dashboard_figures(
    *, user: User, first: date, last: date, account: Account | None = None
) -> Figures:
    """Every figure of the dashboard for the accounts ``user`` coaches (or one of them)."""
    accounts = accounts_coachable_by(user)
    if account is not None:
        accounts = accounts.filter(pk=account.pk)
    calls = received_on_local_days(
        Call.objects.filter(account__in=accounts),
        accounts=accounts,
        first=first,
        last=last,
    )
    figures = Figures(first=first, last=last)
    totals = calls.aggregate(
        received=Count("id"),
        answered=Count("id", filter=ANSWERED),
        noagent=Count("id", filter=Q(status=CallStatus.NOAGENT)),
        **{f"within{s}": Count("id", filter=Q(response_time__lte=s)) for s in WITHIN},
    )
    figures.received, figures.answered = totals["received"], totals["answered"]
    figures.noagent = totals["noagent"]
    figures.answer_rate = _share(figures.answered, figures.received)
    figures.within = [
        (label, _share(totals[f"within{s}"], figures.received))
        for s, label in zip(WITHIN, ("30 s", "60 s", "5 min"), strict=True)
    ]
    figures.median, figures.p90 = percentiles(calls, "response_time", (0.5, 0.9))

    by_hour = dict(
        calls.filter(status=CallStatus.NOAGENT)
        .annotate(hour=ExtractHour("received_at"))
        .values_list("hour")
        .annotate(n=Count("id"))
        .order_by()
    )
    figures.noagent_by_hour = _bars(
        [(f"{h:02d}", by_hour.get(h, 0)) for h in range(24)]
    )

    figures.agents = _agents(calls)
    figures.sources = [
        {
            **row,
            "answer_rate": _share(row["answered"], row["received"]),
            "label": row["source"] or "(none)",
        }
        for row in calls.values("source")
        .annotate(
            received=Count("id"),
            answered=Count("id", filter=ANSWERED),
            avg_response=Avg("response_time"),
        )
        .order_by("-received", "source")
    ]
    figures.categories = _categories(calls, accounts)
    days = (
        calls.annotate(day=TruncDate("received_at"))
        .values("day")
        .annotate(
            received=Count("id"),
            answered=Count("id", filter=ANSWERED),
            within60=Count("id", filter=Q(response_time__lte=60)),
        )
        .order_by("day")
    )
    figures.trend_rows = [dict(row) for row in days]
    figures.trend = _bars(
        [(f"{row['day']:%m-%d}", row["received"]) for row in figures.trend_rows],
        second=[row["answered"] for row in figures.trend_rows],
    )
    return figures


def _agents(calls: QuerySet[Call]) -> list[dict[str, Any]]:
    """Per agent: calls offered and accepted (their legs), answered, scores, appointments, wow."""
    taken = {
        row["agent"]: row
        for row in calls.filter(agent__isnull=False)
        .values("agent")
        .annotate(
            answered=Count("id", filter=ANSWERED),
            scored=Count("score"),
            avg_score=Avg(_applied_count(), filter=Q(score__isnull=False)),
            appointments=Count("score__appointment_date"),
            wow=Count("id", filter=Q(score__wow=True)),
        )
        .order_by()
    }
    offered: dict[int, dict[str, Any]] = {
        row["agent"]: dict(row)
        for row in CallAttempt.objects.filter(
            call__in=calls, leg=Leg.AGENT, agent__isnull=False
        )
        .values("agent")
        .annotate(
            offered=Count("call", distinct=True),
            accepted=Count(
                "call", distinct=True, filter=Q(outcome=AttemptOutcome.ACCEPTED)
            ),
        )
        .order_by()
    }
    names = {
        user.pk: user.get_full_name() or user.username
        for user in User.objects.filter(pk__in={*taken, *offered}).only(
            "first_name", "last_name", "username"
        )
    }
    empty = {"answered": 0, "scored": 0, "avg_score": None, "appointments": 0, "wow": 0}
    rows = [
        {
            "name": names.get(agent, "?"),
            "offered": offered.get(agent, {}).get("offered", 0),
            "accepted": offered.get(agent, {}).get("accepted", 0),
            **{
                key: taken.get(agent, empty).get(key, value)
                for key, value in empty.items()
            },
        }
        for agent in names
    ]
    return sorted(rows, key=lambda row: (-row["answered"], row["name"]))


def _categories(
    calls: QuerySet[Call], accounts: QuerySet[Account]
) -> list[tuple[int, str, float | None]]:
    """Share of scored calls each category was applied on."""
    shares = calls.filter(score__isnull=False).aggregate(
        **{
            f"cat{slot}": Avg(Cast(F(f"score__cat{slot}"), IntegerField()))
            for slot in range(1, CATEGORY_SLOTS + 1)
        }
    )
    # A slot is named when every scorecard in view gives it the same name.
    named: dict[int, set[str]] = {}
    for slot, name in (
        ScorecardCategory.objects.filter(scorecard__account__in=accounts)
        .exclude(name="")
        .values_list("slot", "name")
        .distinct()
    ):
        named.setdefault(slot, set()).add(name)
    names = [
        next(iter(named[slot])) if len(named.get(slot, ())) == 1 else None
        for slot in range(1, CATEGORY_SLOTS + 1)
    ]
    return [
        (
            slot,
            names[slot - 1] or f"Category {slot}",
            None if shares[f"cat{slot}"] is None else 100.0 * shares[f"cat{slot}"],
        )
        for slot in range(1, CATEGORY_SLOTS + 1)
    ]
