"""Part 13's seed and timing (``bench/morning.py``), in one process in the bench database:
an organization of its own with one account (America/Denver) and CALLS calls over 30 days
(three in four answered, half of those scored, a few with alert tags, one agent leg per
call), twenty agents and a manager, the dashboard's rollup built up to yesterday as its
sweep keeps it; then ``report_build`` of yesterday for the manager, timed over BUILDS
builds, against ``dashboard_figures`` of the same day for the same manager.

Run as ``python bench/seeds/morning.py CALLS BUILDS`` in the service's checkout; prints
the two timings (p50 and slowest, ms), the report's leads, queries and sizes, as JSON.
"""

from __future__ import annotations

import argparse
import io
import json
import os
import random
import statistics
import sys
import time
from collections.abc import Callable
from datetime import date, datetime, timedelta
from typing import TYPE_CHECKING, Any
from zoneinfo import ZoneInfo

import django

if TYPE_CHECKING:
    from accounts.models import Account
    from users.models import User

ALERTS = ["", "", "", "", "", "", "", "", "Hot lead", "Unhappy customer"]


def write_calls(
    *,
    count: int,
    account: Account,
    agents: list[User],
    scorer: User,
    category_names: list[str | None],
    category_points: list[int],
    now: datetime,
) -> None:
    """``count`` calls of ``account`` received over the 30 days before ``now``, each with
    its agent leg; half the answered ones scored by ``scorer`` on the account's scorecard
    (``category_names``, ``category_points``), a few of those with an alert tag."""
    from calls.models import AttemptOutcome, Call, CallAttempt, CallStatus, Leg
    from scoring.models import Score

    statuses = [CallStatus.ANSWER] * 15 + [
        CallStatus.NOANSWER,
        CallStatus.BUSY,
        CallStatus.NOAGENT,
        CallStatus.NOAGENT,
        CallStatus.FAILED,
    ]
    made = 0
    while made < count:
        batch = []
        for n in range(min(5000, count - made)):
            status = random.choice(statuses)
            answered = status == CallStatus.ANSWER
            batch.append(
                Call(
                    account=account,
                    status=status,
                    received_at=now - timedelta(seconds=random.randint(60, 30 * 86400)),
                    first_name="Lead",
                    last_name=f"Morning{made + n}",
                    phone="+13035550123",
                    source="Web",
                    agent=random.choice(agents) if answered else None,
                    attempts=1,
                    duration=random.randint(30, 600) if answered else None,
                    response_time=random.randint(5, 400) if answered else None,
                    recording_url="https://bench.example/r.wav" if answered else "",
                )
            )
        written = Call.objects.bulk_create(batch)
        CallAttempt.objects.bulk_create(
            CallAttempt(
                call=call,
                leg=Leg.AGENT,
                agent=call.agent or agents[0],
                number="+13035550100",
                provider="simulator",
                outcome=AttemptOutcome.ACCEPTED
                if call.agent_id
                else AttemptOutcome.REFUSED,
            )
            for call in written
        )
        Score.objects.bulk_create(
            Score(
                call=call,
                scorer=scorer,
                scorer_name="Bench Scorer",
                scored_at=now,
                category_names=category_names,
                category_points=category_points,
                alert=random.choice(ALERTS),
                **{f"cat{slot}": random.random() < 0.6 for slot in range(1, 11)},
            )
            for call in written
            if call.status == CallStatus.ANSWER and random.random() < 0.5
        )
        made += len(batch)


def seed(*, calls: int) -> tuple[User, date]:
    """The organization, its account's calls and rollup; its manager and the day to report
    (the manager's yesterday)."""
    from django.contrib.auth.models import Group
    from django.core.management import call_command
    from django.db import connection
    from django.utils import timezone

    from accounts.models import Account, Organization
    from scoring.services import scorecard_create_default, scorecard_snapshot
    from users.models import Membership, User

    random.seed(13)
    organization = Organization.objects.create(name="Bench Morning Group")
    account = Account.objects.create(
        organization=organization, name="Morning 1", timezone="America/Denver"
    )
    names, points = scorecard_snapshot(scorecard_create_default(account=account))
    agents = []
    for n in range(20):
        agent = User.objects.create(
            username=f"morning-agent{n}@example.com",
            first_name="Agent",
            last_name=str(n),
        )
        agent.accounts.add(account)
        agents.append(agent)
    manager = User.objects.create(
        username="morning-manager@example.com",
        email="morning-manager@example.com",
        first_name="Morgan",
        last_name="Bench",
        timezone="America/Denver",
    )
    manager.accounts.add(account)
    Membership.objects.create(user=manager, organization=organization)
    manager.groups.add(Group.objects.get(name="Manager"))
    now = timezone.now()
    write_calls(
        count=calls,
        account=account,
        agents=agents,
        scorer=manager,
        category_names=names,
        category_points=points,
        now=now,
    )
    # The dashboard's rollup, as the sweep keeps it on a live service (bulk_create
    # bypasses the services that mark days), then fresh statistics.
    call_command("rebuild_rollup", account=account.pk, stdout=io.StringIO())
    with connection.cursor() as cursor:
        cursor.execute("ANALYZE")
    day = now.astimezone(ZoneInfo(manager.timezone)).date() - timedelta(days=1)
    return User.objects.get(pk=manager.pk), day


def p50(work: Callable[[], object], builds: int) -> tuple[float, float]:
    """The median and slowest of ``builds`` runs of ``work``, in ms, after one to warm up
    (plans, templates, fonts)."""
    work()
    times = []
    for _ in range(builds):
        started = time.perf_counter()
        work()
        times.append((time.perf_counter() - started) * 1000)
    return statistics.median(times), max(times)


def timed(*, manager: User, day: date, builds: int) -> dict[str, Any]:
    """The morning report of ``day`` for ``manager``, built and timed against the
    dashboard's figures of the same day; its size and queries."""
    from django.db import connection, reset_queries
    from django.utils import timezone

    from notify.report import report_build
    from scoring.figures import dashboard_figures
    from users.models import User

    def dashboard() -> None:
        with timezone.override(ZoneInfo(manager.timezone)):
            dashboard_figures(user=User.objects.get(pk=manager.pk), first=day, last=day)

    report = report_build(user=manager, day=day)
    connection.force_debug_cursor = True
    reset_queries()
    report_build(user=User.objects.get(pk=manager.pk), day=day)
    queries = len(connection.queries)
    connection.force_debug_cursor = False
    build = p50(
        lambda: report_build(user=User.objects.get(pk=manager.pk), day=day), builds
    )
    base = p50(dashboard, builds)
    return {
        "build": build,
        "dashboard": base,
        "leads": report.figures.received,
        "queries": queries,
        "html": len(report.html),
        "images": sum(len(image["data"]) for image in report.images),
        "coaching": len(report.coaching),
    }


def main(argv: list[str]) -> None:
    parser = argparse.ArgumentParser(prog="bench/seeds/morning.py", description=__doc__)
    parser.add_argument("calls", type=int, help="calls of the account")
    parser.add_argument("builds", type=int, help="builds timed, after one to warm up")
    arguments = parser.parse_args(argv)
    manager, day = seed(calls=arguments.calls)
    print(json.dumps(timed(manager=manager, day=day, builds=arguments.builds)))


if __name__ == "__main__":
    # The service's code is the checkout this runs in (the working directory), not this
    # file's folder, which Python put first and whose modules would shadow the service's
    # apps (``pages``, ``texting``).
    sys.path[0] = os.getcwd()
    django.setup()
    main(sys.argv[1:])
