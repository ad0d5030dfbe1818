"""Reads for coaching: the managers' coaching queue (scored calls most worth coaching, not
coached yet), the coaching already given and whether its agent read it, and an agent's
own page (unread coaching first, their score and response-time trends).

Every read is scoped like scoring/selectors.py: a manager reaches the accounts they coach
(``accounts_coachable_by``), an agent only the calls they took.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import date, datetime, timedelta
from typing import Any

from django.db.models import (
    BooleanField,
    Case,
    Count,
    DateField,
    Exists,
    Expression,
    ExpressionWrapper,
    F,
    IntegerField,
    OuterRef,
    Q,
    QuerySet,
    Value,
    When,
)
from django.db.models.fields.json import KT
from django.db.models.functions import Cast, TruncWeek
from django.utils import timezone

from calls.models import Call, CallStatus
from scoring.figures import Bar, bars
from scoring.models import CATEGORY_SLOTS, ChoiceKind, Score, ScorecardChoice
from scoring.percentiles import grouped_percentiles
from scoring.selectors import accounts_coachable_by
from users.models import User

# A score below this share of the points its scorecard allowed is worth coaching.
LOW_SCORE_PERCENT = 50
QUEUE_SHOWN = 100  # the queue lists this many, oldest first, and counts the rest
COACHED_SHOWN = 50  # the coaching given lately, newest first
TREND_WEEKS = 8  # the agent's trends: this many weeks, this one included
SLOTS = range(1, CATEGORY_SLOTS + 1)


def _weight(slot: int) -> Expression:
    """The points category ``slot`` was scored under (the score's own snapshot)."""
    return Cast(KT(f"category_points__{slot - 1}"), IntegerField())


def points_expression() -> Expression:
    """``Score.points`` in SQL: the weights of the applied categories."""
    total: Any = Value(0)
    for slot in SLOTS:
        total = total + Case(
            When(**{f"cat{slot}": True}, then=_weight(slot)),
            default=Value(0),
            output_field=IntegerField(),
        )
    return total  # type: ignore[no-any-return]


def possible_expression() -> Expression:
    """The most points a score could earn: every weight of its snapshot (an unused slot
    weighs 0)."""
    total: Any = Value(0)
    for slot in SLOTS:
        total = total + Case(
            When(**{f"category_points__{slot - 1}__isnull": False}, then=_weight(slot)),
            default=Value(0),
            output_field=IntegerField(),
        )
    return total  # type: ignore[no-any-return]


def _missed_appointment() -> Q:
    """A call end that means an appointment (``needs_appointment``) without its date."""
    appointment_end = ScorecardChoice.objects.filter(
        scorecard__account_id=OuterRef("call__account_id"),
        kind=ChoiceKind.CALL_END,
        name=OuterRef("call_end"),
        needs_appointment=True,
    )
    return Q(Exists(appointment_end), appointment_date__isnull=True)


def _coachable_scores(user: User) -> QuerySet[Score]:
    return Score.objects.filter(call__account__in=accounts_coachable_by(user))


def coaching_queue(*, user: User) -> QuerySet[Score]:
    """Scores of the accounts ``user`` coaches, not coached yet (no notes), worth coaching:
    a low score (below LOW_SCORE_PERCENT of the points allowed), an alert tag, or a
    missed appointment; oldest call first. Each row carries ``points_sum``,
    ``possible_sum``, ``low`` and ``missed`` (and its alert tags) to say why it is listed."""
    return (
        _coachable_scores(user)
        .filter(coach_notes="")
        .annotate(points_sum=points_expression(), possible_sum=possible_expression())
        .annotate(
            low=ExpressionWrapper(
                Q(possible_sum__gt=0)
                & Q(points_sum__lt=F("possible_sum") * LOW_SCORE_PERCENT / 100.0),
                output_field=BooleanField(),
            ),
            missed=ExpressionWrapper(
                _missed_appointment(), output_field=BooleanField()
            ),
        )
        .filter(Q(low=True) | ~Q(alert="") | Q(missed=True))
        .select_related("call__account", "call__agent")
        .order_by("call__received_at", "call_id")
    )


def coaching_given(*, user: User) -> QuerySet[Score]:
    """Coached scores of the accounts ``user`` coaches, newest coaching first, with whether
    the agent has read it (``coaching_read_at``)."""
    return (
        _coachable_scores(user)
        .exclude(coach_notes="")
        .select_related("call__account", "call__agent")
        .order_by("-coached_at", "-id")
    )


def coaching_unread(*, agent: User) -> QuerySet[Score]:
    """Coaching on the calls ``agent`` took that they have not read yet, oldest first."""
    return (
        Score.objects.filter(
            call__agent=agent, coaching_read_at__isnull=True, coached_at__isnull=False
        )
        .exclude(coach_notes="")
        .select_related("call__account")
        .order_by("coached_at", "id")
    )


def coaching_unread_count(*, agent: User) -> int:
    """How many coaching notes ``agent`` has not read (the navigation's badge): one count."""
    return coaching_unread(agent=agent).count()


def coaching_read(*, agent: User) -> QuerySet[Score]:
    """Coaching on ``agent``'s calls they have read, newest read first."""
    return (
        Score.objects.filter(call__agent=agent, coaching_read_at__isnull=False)
        .exclude(coach_notes="")
        .select_related("call__account")
        .order_by("-coaching_read_at", "-id")
    )


@dataclass
class Trends:
    """An agent's weeks: average score (categories applied of ten) and median response."""

    weeks: list[dict[str, Any]]
    scores: list[Bar]
    responses: list[Bar]


def agent_trends(*, agent: User, today: date, weeks: int = TREND_WEEKS) -> Trends:
    """``agent``'s own calls over the last ``weeks`` weeks (Monday to Sunday, in the active
    timezone), this week included: per week the calls answered, scored, the average score
    and the median response time. Two grouped queries, whatever the number of calls."""
    monday = today - timedelta(days=today.weekday())
    first = monday - timedelta(weeks=weeks - 1)
    zone = timezone.get_current_timezone()
    since = datetime.combine(first, datetime.min.time(), tzinfo=zone)
    calls = Call.objects.filter(agent=agent, received_at__gte=since).annotate(
        week=TruncWeek("received_at", output_field=DateField(), tzinfo=zone)
    )
    counted: dict[date, dict[str, Any]] = {
        row["week"]: dict(row)
        for row in calls.values("week")
        .annotate(
            answered=Count("id", filter=Q(status=CallStatus.ANSWER)),
            scored=Count("score"),
            **{
                f"cat{slot}": Count("id", filter=Q(**{f"score__cat{slot}": True}))
                for slot in SLOTS
            },
        )
        .order_by()
    }
    medians = grouped_percentiles(calls, "week", "response_time", (0.5,))
    rows = []
    for n in range(weeks):
        week = first + timedelta(weeks=n)
        row = counted.get(week, {})
        scored = row.get("scored", 0)
        applied = sum(row.get(f"cat{slot}", 0) for slot in SLOTS)
        rows.append(
            {
                "week": week,
                "answered": row.get("answered", 0),
                "scored": scored,
                "avg_score": applied / scored if scored else None,
                "median_response": medians.get(week, [None])[0],
            }
        )
    return Trends(
        weeks=rows,
        scores=bars(
            [(f"{r['week']:%m-%d}", round(r["avg_score"] or 0, 1)) for r in rows]
        ),
        responses=bars(
            [(f"{r['week']:%m-%d}", round(r["median_response"] or 0)) for r in rows]
        ),
    )
