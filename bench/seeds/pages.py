"""Part 8's seed (``bench/pages.py``), in the bench database (production settings): two
accounts of one organization, CALLS calls over 30 days (three in four answered, half of
those scored), one agent leg per call, the dashboard's rollup built (every day up to each
account's yesterday, as the rollup sweep keeps it, timed) and a signed-in session of the
organization's global manager.

Run as ``python bench/seeds/pages.py CALLS`` in the service's checkout; prints the
session key, the 30 days' first and last dates and the rollup's seconds, as JSON.
"""

from __future__ import annotations

import argparse
import io
import json
import os
import random
import sys
import time
from datetime import datetime, timedelta
from typing import TYPE_CHECKING, Any

import django

if TYPE_CHECKING:
    from accounts.models import Account
    from users.models import User

SOURCES = ["Cars.com", "AutoTrader", "CarGurus", "Dealer Website", "Edmunds"]


def write_calls(
    *,
    count: int,
    accounts: list[Account],
    agents: list[User],
    scorer: User,
    category_names: list[str | None],
    category_points: list[int],
    now: datetime,
) -> None:
    """``count`` finished calls received over the 30 days before ``now``, alternately of
    each account, each with its agent leg; half the answered ones scored by ``scorer`` on
    the first account's scorecard (``category_names``, ``category_points``)."""
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
            agent = random.choice(agents)
            received_at = now - timedelta(seconds=random.randint(60, 30 * 86400))
            duration = random.randint(30, 600) if answered else None
            batch.append(
                Call(
                    account=accounts[(made + n) % 2],
                    status=status,
                    received_at=received_at,
                    ended_at=received_at + timedelta(seconds=30 + (duration or 0)),
                    first_name="Lead",
                    last_name=f"Number{made + n}",
                    email=f"lead{made + n}@example.com",
                    phone=f"+1303{5550000 + (made + n) % 10000000:07d}"[:12],
                    source=random.choice(SOURCES),
                    agent=agent if answered else None,
                    attempts=1,
                    duration=duration,
                    response_time=random.randint(5, 400) if answered else None,
                    recording_url="https://bench.example/r.wav" if answered else "",
                )
            )
        written = Call.objects.bulk_create(batch)
        # Every call and leg finished, as the pipeline leaves them: the workers that earlier
        # parts leave running (their sweeps every 10 s) must find nothing here to drive. An
        # answered call without an end or a leg never dialed is work to them: they finished
        # thousands during the timing, each marking its day stale in the rollup.
        CallAttempt.objects.bulk_create(
            CallAttempt(
                call=call,
                leg=Leg.AGENT,
                agent=call.agent or agents[0],
                number="+13035550100",
                provider="simulator",
                dial_requested_at=call.received_at,
                ringing_at=call.received_at,
                answered_at=call.received_at if call.agent_id else None,
                ended_at=call.ended_at,
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
                wow=random.random() < 0.1,
                **{f"cat{slot}": random.random() < 0.6 for slot in range(1, 11)},
            )
            for call in written
            if call.status == CallStatus.ANSWER and random.random() < 0.5
        )
        made += len(batch)


def session_of(user: User) -> str:
    """The key of a new session signed in as ``user``, as the sign-in page makes one."""
    from django.contrib.auth import BACKEND_SESSION_KEY, HASH_SESSION_KEY, SESSION_KEY
    from django.contrib.sessions.backends.db import SessionStore

    session = SessionStore()
    session[SESSION_KEY] = str(user.pk)
    session[BACKEND_SESSION_KEY] = "django.contrib.auth.backends.ModelBackend"
    session[HASH_SESSION_KEY] = user.get_session_auth_hash()
    session.create()
    assert session.session_key is not None  # create() saved it under a new key
    return session.session_key


def seed(*, calls: int) -> dict[str, Any]:
    """The organization, its calls and rollup, and the global manager's session."""
    from django.contrib.auth.models import Group
    from django.core.management import call_command
    from django.db import connection
    from django.utils import timezone

    from accounts.models import Account, Organization
    from scoring.services import scorecard_create_default, scorecard_snapshot
    from users.models import Membership, User

    random.seed(10)
    organization = Organization.objects.create(name="Bench Pages Group")
    accounts = [
        Account.objects.create(
            organization=organization, name=f"Pages {n}", timezone=tz
        )
        for n, tz in enumerate(["America/Denver", "America/New_York"])
    ]
    names, points = scorecard_snapshot(scorecard_create_default(account=accounts[0]))
    for account in accounts[1:]:
        scorecard_create_default(account=account)
    agents = []
    for n in range(20):
        agent = User.objects.create(
            username=f"pages-agent{n}@example.com", first_name="Agent", last_name=str(n)
        )
        agent.accounts.add(accounts[n % 2])
        agents.append(agent)
    manager = User.objects.create(
        username="pages-gm@example.com", first_name="Glenn", last_name="Hart"
    )
    Membership.objects.create(user=manager, organization=organization)
    manager.groups.add(Group.objects.get(name="Global Manager"))
    now = timezone.now()
    write_calls(
        count=calls,
        accounts=accounts,
        agents=agents,
        scorer=manager,
        category_names=names,
        category_points=points,
        now=now,
    )
    # The dashboard's rollup, as the sweep keeps it on a live service (bulk_create
    # bypasses the services that mark days): every day up to each account's yesterday.
    started = time.perf_counter()
    for account in accounts:
        call_command("rebuild_rollup", account=account.pk, stdout=io.StringIO())
    rollup = time.perf_counter() - started
    # Fresh statistics, as a live database has them (the planner guesses badly without).
    with connection.cursor() as cursor:
        cursor.execute("ANALYZE")
    return {
        "session": session_of(manager),
        "first": str((now - timedelta(days=31)).date()),
        "last": str(now.date()),
        "rollup": rollup,
    }


def main(argv: list[str]) -> None:
    parser = argparse.ArgumentParser(prog="bench/seeds/pages.py", description=__doc__)
    parser.add_argument("calls", type=int, help="calls of the two accounts")
    arguments = parser.parse_args(argv)
    print(json.dumps(seed(calls=arguments.calls)))


if __name__ == "__main__":
    # The service's code is the checkout this runs in (the working directory), not this
    # file's folder, which Python put first and whose modules would shadow the service's
    # apps (``pages``, ``texting``).
    sys.path[0] = os.getcwd()
    django.setup()
    main(sys.argv[1:])
