"""``make bench`` part 8: the pages over 100,000 calls. The call browser's first page and the
speed-to-lead dashboard (a 30-day range holding every call), signed in as a global manager,
against the bare Django view (``/healthz``) measured the same way in the same run.

One client at a time (no queueing behind other requests), so a request's latency on
loopback is the server's time for it. Aims: call browser under 150 ms (issue 10), dashboard
under 300 ms (issue 22), at the median.
"""

from __future__ import annotations

import json
import os
from collections.abc import Callable

from bench.load import Request, Result, run

CALLS = int(os.environ.get("BENCH_PAGE_CALLS", "100000"))
SECONDS = float(os.environ.get("BENCH_PAGE_SECONDS", "5"))
AIMS_MS = {"call browser": 150.0, "dashboard": 300.0}

# Run in the bench database (production settings): two accounts of one organization, 100,000
# calls over 30 days (three in four answered, half of those scored), one agent leg per call,
# the dashboard's rollup built (every day up to each account's yesterday, as the rollup
# sweep keeps it) and a signed-in session of the organization's global manager.
SEED = """
import django, json, random; django.setup()
from datetime import timedelta
from django.contrib.auth import BACKEND_SESSION_KEY, HASH_SESSION_KEY, SESSION_KEY
from django.contrib.auth.models import Group
from django.contrib.sessions.backends.db import SessionStore
from django.utils import timezone
from accounts.models import Account, Organization
from calls.models import AttemptOutcome, Call, CallAttempt, CallStatus, Leg
from scoring.models import Score
from scoring.services import scorecard_create_default, scorecard_snapshot
from users.models import Membership, User
random.seed(10)
org = Organization.objects.create(name="Bench Pages Group")
accounts = [Account.objects.create(organization=org, name=f"Pages {n}", timezone=tz)
            for n, tz in enumerate(["America/Denver", "America/New_York"])]
names, points = scorecard_snapshot(scorecard_create_default(account=accounts[0]))
for account in accounts[1:]:
    scorecard_create_default(account=account)
agents = []
for n in range(20):
    agent = User.objects.create(username=f"pages-agent{n}@example.com", first_name="Agent", last_name=str(n))
    agent.accounts.add(accounts[n %% 2])
    agents.append(agent)
manager = User.objects.create(username="pages-gm@example.com", first_name="Glenn", last_name="Hart")
Membership.objects.create(user=manager, organization=org)
manager.groups.add(Group.objects.get(name="Global Manager"))
now = timezone.now()
statuses = [CallStatus.ANSWER] * 15 + [CallStatus.NOANSWER, CallStatus.BUSY, CallStatus.NOAGENT, CallStatus.NOAGENT, CallStatus.FAILED]
sources = ["Cars.com", "AutoTrader", "CarGurus", "Dealer Website", "Edmunds"]
made = 0
while made < %(calls)d:
    batch = []
    for n in range(min(5000, %(calls)d - made)):
        status = random.choice(statuses)
        answered = status == CallStatus.ANSWER
        agent = random.choice(agents)
        received_at = now - timedelta(seconds=random.randint(60, 30 * 86400))
        duration = random.randint(30, 600) if answered else None
        batch.append(Call(account=accounts[(made + n) %% 2], status=status,
            received_at=received_at, ended_at=received_at + timedelta(seconds=30 + (duration or 0)),
            first_name="Lead", last_name=f"Number{made + n}", email=f"lead{made + n}@example.com",
            phone=f"+1303{5550000 + (made + n) %% 10000000:07d}"[:12], source=random.choice(sources),
            agent=agent if answered else None, attempts=1, duration=duration,
            response_time=random.randint(5, 400) if answered else None,
            recording_url="https://bench.example/r.wav" if answered else ""))
    calls = Call.objects.bulk_create(batch)
    # Every call and leg finished, as the pipeline leaves them: the workers that earlier
    # parts leave running (their sweeps every 10 s) must find nothing here to drive. An
    # answered call without an end or a leg never dialed is work to them: they finished
    # thousands during the timing, each marking its day stale in the rollup.
    CallAttempt.objects.bulk_create(CallAttempt(call=call, leg=Leg.AGENT, agent=call.agent or agents[0], number="+13035550100",
        provider="simulator", dial_requested_at=call.received_at, ringing_at=call.received_at,
        answered_at=call.received_at if call.agent_id else None, ended_at=call.ended_at,
        outcome=AttemptOutcome.ACCEPTED if call.agent_id else AttemptOutcome.REFUSED) for call in calls)
    Score.objects.bulk_create(Score(call=call, scorer=manager, scorer_name="Bench Scorer", scored_at=now,
        category_names=names, category_points=points, wow=random.random() < 0.1,
        **{f"cat{slot}": random.random() < 0.6 for slot in range(1, 11)})
        for call in calls if call.status == CallStatus.ANSWER and random.random() < 0.5)
    made += len(batch)
# The dashboard's rollup, as the sweep keeps it on a live service (bulk_create bypasses
# the services that mark days): every day up to each account's yesterday, timed.
import io, time
from django.core.management import call_command
started = time.perf_counter()
for account in accounts:
    call_command("rebuild_rollup", account=account.pk, stdout=io.StringIO())
rollup = time.perf_counter() - started
# Fresh statistics, as a live database has them (the planner guesses badly without).
from django.db import connection
with connection.cursor() as cursor:
    cursor.execute("ANALYZE")
session = SessionStore()
session[SESSION_KEY] = str(manager.pk)
session[BACKEND_SESSION_KEY] = "django.contrib.auth.backends.ModelBackend"
session[HASH_SESSION_KEY] = manager.get_session_auth_hash()
session.create()
print(json.dumps({"session": session.session_key, "first": str((now - timedelta(days=31)).date()), "last": str(now.date()), "rollup": rollup}))
"""


def _row(label: str, result: Result, bare: Result, aim: float | None) -> tuple:
    return (
        f"8 {label} p50 (server time, {CALLS:,} calls)",
        f"{result.median:,.1f} ms",
        f"bare view {bare.median:,.1f} ms",
        f"{result.median / bare.median:.1f}x",
        f"< {aim:g} ms" if aim else "",
        None if aim is None else result.median < aim,
    )


def measure(port: int, python: Callable[..., str]) -> tuple[list[tuple], list[str]]:
    """Rows (measure, figure, baseline, ratio, aim, met) and detail lines of part 8."""
    # Production settings serve static files through a manifest that collectstatic writes.
    python("manage.py", "collectstatic", "--noinput", "-v0")
    seed = json.loads(python("-c", SEED % {"calls": CALLS}))
    cookie = {"Cookie": f"sessionid={seed['session']}"}
    requests = {
        "bare view": Request("GET", "/healthz", {}),
        "call browser": Request("GET", "/calls/", cookie),
        "dashboard": Request(
            "GET",
            f"/dashboard/?date_from={seed['first']}&date_to={seed['last']}",
            cookie,
        ),
    }
    results: dict[str, Result] = {}
    for name, request in requests.items():
        run(port, request, seconds=1, processes=1, threads=1)  # warm up
        results[name] = run(port, request, seconds=SECONDS, processes=1, threads=1)
    bare = results["bare view"]
    rows = []
    for name, aim in AIMS_MS.items():
        rows.append(_row(name, results[name], bare, aim))
        result = results[name]
        rows.append(
            (
                f"8 {name} p90",
                f"{result.percentile(90):,.1f} ms",
                f"bare view {bare.percentile(90):,.1f} ms",
                f"{result.percentile(90) / bare.percentile(90):.1f}x",
                "",
                None,
            )
        )
    errors = ", ".join(f"{name} {result.errors}" for name, result in results.items())
    return rows, [
        f"  pages: one client at a time, {SECONDS:g} s each; errors: {errors}",
        f"  8 dashboard rollup of the {CALLS:,} calls built by rebuild_rollup in "
        f"{seed['rollup']:,.1f} s (the seed's bulk inserts bypass the services that keep it)",
    ]
