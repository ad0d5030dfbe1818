"""The dashboard's queries: every percentile read from one spread of the response times
(the same values as PostgreSQL's ``percentile_cont`` and as the non-PostgreSQL path, to
the bit), and a fixed number of queries whatever the calls, agents, accounts or days,
from the calls alone or with the rollup (tests/pages/test_dashboard_rollup.py)."""

from __future__ import annotations

import random
from collections import Counter
from datetime import date, datetime, timedelta
from zoneinfo import ZoneInfo

import pytest
from django.db import connection

from calls.models import AttemptOutcome, Call, CallAttempt, CallStatus, Leg
from scoring.figures import dashboard_figures
from scoring.percentiles import from_spread, grouped_percentiles, percentiles
from scoring.selectors import accounts_coachable_by, local_days
from scoring.services import score_save
from tests.accounts.factories import AccountFactory
from tests.pages.test_dashboard_rollup import (
    calls_over_days,
    figures_from_rollup,
    rolled_up,
    utc_today,
)
from tests.scoring.factories import CallFactory, in_role

pytestmark = pytest.mark.django_db

DAY = date(2026, 3, 4)
FRACTIONS = (0.0, 0.1, 0.25, 0.5, 0.9, 0.99, 1.0)


def _percentile_cont(values: list[int], fraction: float) -> float | None:
    with connection.cursor() as cursor:
        cursor.execute(
            "SELECT percentile_cont(%s) WITHIN GROUP (ORDER BY v) FROM unnest(%s::int[]) v",
            [fraction, values],
        )
        return cursor.fetchone()[0]


def test_a_spread_gives_percentile_conts_values_to_the_bit():
    rng = random.Random(7)
    samples = [[], [5], [5, 5], [1, 2], [3, 1, 2], [0] * 9 + [86_400]]
    samples += [
        [rng.randint(0, rng.choice((10, 400, 90_000))) for _ in range(size)]
        for size in (2, 3, 4, 7, 10, 11, 99, 100, 101, 997)
    ]
    for values in samples:
        spread = from_spread(Counter(values), FRACTIONS)
        assert spread == [_percentile_cont(values, f) for f in FRACTIONS], values


def _varied_calls(world, rng: random.Random, east: str = "East") -> None:
    """Calls over a week at North (Denver) and South (New York) and a third account
    (Kolkata, half an hour off), by several agents, with every status, response times
    with ties and nulls, legs and scores; some just outside the range, some elsewhere."""
    third = AccountFactory(
        organization=world.north.organization, name=east, timezone="Asia/Kolkata"
    )
    accounts = [world.north, world.south, third]
    agents = [world.agent, world.other_agent] + [
        in_role("Agent", accounts=[account]) for account in accounts
    ]
    statuses = [CallStatus.ANSWER] * 6 + [
        CallStatus.NOANSWER,
        CallStatus.NOAGENT,
        CallStatus.BUSY,
        CallStatus.QUEUED,
    ]
    for n in range(160):
        account = accounts[n % 3]
        status = rng.choice(statuses)
        answered = status == CallStatus.ANSWER
        received = datetime.combine(
            DAY - timedelta(days=rng.randint(-1, 14)),
            datetime.min.time(),
            tzinfo=ZoneInfo(account.timezone),
        ) + timedelta(minutes=rng.randint(0, 24 * 60 - 1))
        agent = rng.choice(agents) if answered or rng.random() < 0.2 else None
        call = CallFactory(
            account=account,
            status=status,
            agent=agent,
            source=rng.choice(["Cars.com", "Web", ""]),
            received_at=received,
            response_time=rng.choice([5, 5, 30, 61, 299, 1200, rng.randint(0, 900)])
            if answered or rng.random() < 0.1
            else None,
        )
        for offered in rng.sample(agents, rng.randint(0, 2)):
            CallAttempt.objects.create(
                call=call,
                leg=Leg.AGENT,
                agent=offered,
                number="1",
                provider="simulator",
                outcome=AttemptOutcome.ACCEPTED
                if offered == agent
                else AttemptOutcome.REFUSED,
            )
        if answered and rng.random() < 0.5:
            score_save(
                call=call,
                scorer=world.staff,
                values={"cat1": rng.random() < 0.5, "wow": rng.random() < 0.2},
            )
    CallFactory(account=world.foreign, received_at=received, response_time=1)


@pytest.mark.parametrize("vendor", ["postgresql", "sqlite"])
def test_every_percentile_of_the_dashboard_is_the_old_querys(world, vendor):
    """Against ``percentiles``/``grouped_percentiles`` over the same calls: PostgreSQL's
    ``percentile_cont``, or the rows at the rank (the non-PostgreSQL path)."""
    _varied_calls(world, random.Random(11))
    first, last = DAY - timedelta(days=6), DAY
    reach = accounts_coachable_by(world.global_manager)
    calls = Call.objects.filter(local_days(accounts=reach, first=first, last=last))
    earlier = Call.objects.filter(
        local_days(accounts=reach, first=first - timedelta(days=7), last=first)
    ).exclude(pk__in=calls)
    f = dashboard_figures(user=world.global_manager, first=first, last=last)
    saved = connection.vendor
    try:
        connection.vendor = vendor
        overall = percentiles(calls, "response_time", (0.5, 0.9))
        before = percentiles(earlier, "response_time", (0.5, 0.9))
        by_account = grouped_percentiles(calls, "account", "response_time", (0.5, 0.9))
        by_agent = grouped_percentiles(calls, "agent", "response_time", (0.5,))
    finally:
        connection.vendor = saved
    assert calls.filter(response_time__isnull=False).count() > 40
    assert [f.median, f.p90] == overall
    changes = {c.key: c.previous for c in f.changes}
    assert [changes["median"], changes["p90"]] == before
    assert before[0] is not None
    assert len(f.accounts) == 3
    assert {row["pk"]: [row["median"], row["p90"]] for row in f.accounts} == {
        pk: by_account[pk] for pk in by_account
    }
    names = {
        agent.get_full_name() or agent.username: agent.pk
        for agent in world.agent.__class__.objects.filter(pk__in=set(by_agent) - {None})
    }
    assert len(f.agents) >= 5
    for row in f.agents:
        assert row["median_response"] == by_agent.get(names[row["name"]], [None])[0]


def test_the_dashboard_reads_its_figures_in_ten_queries(
    world, django_assert_num_queries
):
    """A fixed number: the planner's page cost for data in memory (scoring/figures.py
    MEMORY_PAGE_COST), permissions, accounts, the counts, the spread, the previous
    period, the legs, the agents' names, the categories' names, the hours."""
    _varied_calls(world, random.Random(3))
    first, last = DAY - timedelta(days=6), DAY
    with django_assert_num_queries(10):
        before = dashboard_figures(user=world.global_manager, first=first, last=last)
    _varied_calls(
        world, random.Random(4), "Far East"
    )  # more calls, agents, an account, days
    user = world.global_manager.__class__.objects.get(pk=world.global_manager.pk)
    with django_assert_num_queries(10):
        after = dashboard_figures(user=user, first=first, last=last)
    assert after.received > before.received
    assert len(after.accounts) > len(before.accounts)


@pytest.mark.parametrize(
    ("since", "until", "queries"),
    [
        # the planner's page cost (MEMORY_PAGE_COST), permissions, accounts with their
        # rollup, stale marks, then from the rollup: counts, spread, the previous
        # period's sums and histogram, legs, hours; the agents' names and the categories'
        # names.
        (10, 4, 12),
        # and from the calls, today's: counts, spread, legs, hours (the previous period is
        # rolled up).
        (6, 0, 16),
    ],
)
def test_the_dashboard_reads_the_rollup_in_a_fixed_number_of_queries(
    world, since, until, queries, django_assert_num_queries
):
    calls_over_days(world, random.Random(3))
    rolled_up()
    first, last = (
        utc_today() - timedelta(days=since),
        utc_today() - timedelta(days=until),
    )
    with django_assert_num_queries(queries):
        before = figures_from_rollup("UTC", world.global_manager, first, last)
    calls_over_days(
        world, random.Random(4), "Far East"
    )  # more calls, agents, an account
    rolled_up()
    user = world.global_manager.__class__.objects.get(pk=world.global_manager.pk)
    with django_assert_num_queries(queries):
        after = figures_from_rollup("UTC", user, first, last)
    assert after.received > before.received
    assert len(after.accounts) > len(before.accounts)
