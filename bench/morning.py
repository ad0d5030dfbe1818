"""``make bench`` part 13: the morning report's build time for an account with 100,000 calls.

Seeds its own organization in the bench database (one account, America/Denver, 100,000
calls over 30 days: about 3,300 a day, three in four answered, half of those scored, a few
with alert tags, one agent leg per call, twenty agents and a manager; the dashboard's
rollup built up to yesterday, as its sweep keeps it), then times, in one
process, ``report_build`` of yesterday for the manager (p50 over BUILDS builds) against
``dashboard_figures`` of the same day for the same manager (the dashboard page's own work,
which the report does twice: the day and the same weekday a week before). Aim (issue 21):
under 1 s. Runs alone (``BENCH_PARTS=13``) or after the other parts.
"""

from __future__ import annotations

import json
import os
from collections.abc import Callable

CALLS = int(os.environ.get("BENCH_MORNING_CALLS", "100000"))
BUILDS = int(os.environ.get("BENCH_MORNING_BUILDS", "7"))
AIM_MS = 1000.0
# Part 13 runs by default too (the harness's default list of parts predates it).

SEED_AND_TIME = """
import django, json, random, statistics, time; django.setup()
from datetime import timedelta
from zoneinfo import ZoneInfo
from django.contrib.auth.models import Group
from django.db import connection, reset_queries
from django.utils import timezone
from accounts.models import Account, Organization
from calls.models import AttemptOutcome, Call, CallAttempt, CallStatus, Leg
from notify.report import report_build
from scoring.figures import dashboard_figures
from scoring.models import Score
from scoring.services import scorecard_create_default, scorecard_snapshot
from users.models import Membership, User
random.seed(13)
org = Organization.objects.create(name="Bench Morning Group")
account = Account.objects.create(organization=org, name="Morning 1", timezone="America/Denver")
names, points = scorecard_snapshot(scorecard_create_default(account=account))
agents = []
for n in range(20):
    agent = User.objects.create(username=f"morning-agent{n}@example.com", first_name="Agent", last_name=str(n))
    agent.accounts.add(account)
    agents.append(agent)
manager = User.objects.create(username="morning-manager@example.com", email="morning-manager@example.com",
    first_name="Morgan", last_name="Bench", timezone="America/Denver")
manager.accounts.add(account)
Membership.objects.create(user=manager, organization=org)
manager.groups.add(Group.objects.get(name="Manager"))
now = timezone.now()
statuses = [CallStatus.ANSWER] * 15 + [CallStatus.NOANSWER, CallStatus.BUSY, CallStatus.NOAGENT, CallStatus.NOAGENT, CallStatus.FAILED]
alerts = ["", "", "", "", "", "", "", "", "Hot lead", "Unhappy customer"]
made = 0
while made < %(calls)d:
    batch = []
    for n in range(min(5000, %(calls)d - made)):
        status = random.choice(statuses)
        answered = status == CallStatus.ANSWER
        batch.append(Call(account=account, status=status,
            received_at=now - timedelta(seconds=random.randint(60, 30 * 86400)),
            first_name="Lead", last_name=f"Morning{made + n}", phone="+13035550123", source="Web",
            agent=random.choice(agents) if answered else None, attempts=1,
            duration=random.randint(30, 600) if answered else None,
            response_time=random.randint(5, 400) if answered else None,
            recording_url="https://bench.example/r.wav" if answered else ""))
    calls = Call.objects.bulk_create(batch)
    CallAttempt.objects.bulk_create(CallAttempt(call=call, leg=Leg.AGENT, agent=call.agent or agents[0],
        number="+13035550100", provider="simulator",
        outcome=AttemptOutcome.ACCEPTED if call.agent_id else AttemptOutcome.REFUSED) for call in calls)
    Score.objects.bulk_create(Score(call=call, scorer=manager, scorer_name="Bench Scorer", scored_at=now,
        category_names=names, category_points=points, alert=random.choice(alerts),
        **{f"cat{slot}": random.random() < 0.6 for slot in range(1, 11)})
        for call in calls if call.status == CallStatus.ANSWER and random.random() < 0.5)
    made += len(batch)
# The dashboard's rollup, as the sweep keeps it on a live service (bulk_create bypasses the
# services that mark days), then fresh statistics.
import io
from django.core.management import call_command
call_command("rebuild_rollup", account=account.pk, stdout=io.StringIO())
with connection.cursor() as cursor:
    cursor.execute("ANALYZE")
day = now.astimezone(ZoneInfo(manager.timezone)).date() - timedelta(days=1)
manager = User.objects.get(pk=manager.pk)

def p50(work):
    work()  # warm up (plans, templates, fonts)
    times = []
    for _ in range(%(builds)d):
        started = time.perf_counter()
        work()
        times.append((time.perf_counter() - started) * 1000)
    return statistics.median(times), max(times)

def dashboard():
    with timezone.override(ZoneInfo(manager.timezone)):
        dashboard_figures(user=User.objects.get(pk=manager.pk), first=day, last=day)

report = report_build(user=manager, day=day)
connection.force_debug_cursor = True
reset_queries()
report_build(user=User.objects.get(pk=manager.pk), day=day)
queries = len(connection.queries)
connection.force_debug_cursor = False
build = p50(lambda: report_build(user=User.objects.get(pk=manager.pk), day=day))
base = p50(dashboard)
print(json.dumps({"build": build, "dashboard": base, "leads": report.figures.received,
    "queries": queries, "html": len(report.html), "images": sum(len(i["data"]) for i in report.images),
    "coaching": len(report.coaching)}))
"""


def measure(python: Callable[..., str]) -> tuple[list[tuple], list[str]]:
    """Rows (measure, figure, baseline, ratio, aim, met) and detail lines of part 13."""
    found = json.loads(python("-c", SEED_AND_TIME % {"calls": CALLS, "builds": BUILDS}))
    build, slowest = found["build"]
    dashboard, _ = found["dashboard"]
    return [
        (
            f"13 morning report build p50 (an account with {CALLS:,} calls, one day)",
            f"{build:,.0f} ms",
            f"dashboard figures {dashboard:,.0f} ms",
            f"{build / dashboard:.1f}x",
            f"< {AIM_MS:g} ms",
            build < AIM_MS,
        )
    ], [
        f"  13 morning report: {found['leads']:,} leads that day, {found['queries']} queries, "
        f"slowest of {BUILDS} builds {slowest:,.0f} ms, HTML {found['html'] / 1000:,.0f} kB, "
        f"charts {found['images'] / 1000:,.0f} kB (base64), {found['coaching']} calls to coach"
    ]
