"""Part 16's seed and timing (``bench/appointment_figures.py``), in one process in the
bench database: an organization of its own with one account (America/Denver), CALLS calls
over 30 days as part 13 writes them (three in four answered, half of those scored, one
agent leg per call) with a lead leg for each answered call (dialed and connected a few
seconds to minutes after the lead), and APPOINTMENTS appointments on answered calls (each
with its changes: set, then kept, no-show, confirmed or cancelled, or still set), twenty
agents and a manager, the dashboard's rollup built; then, signed in as the manager, the
dashboard page over the 30 days (its appointment figures, first touch and first human,
the leaderboard) and the day's appointments page of the busiest day, each timed over
TIMES requests through Django's test client, against the dashboard's rollup figures alone
(``dashboard_figures``: the page before the appointment and speed figures) and the bare
view (``/healthz``) through the same client.

Run as ``python bench/seeds/appointments.py CALLS APPOINTMENTS TIMES`` in the service's
checkout (this one: part 16 never runs against an older one); prints the timings (p50 and
slowest, ms) and the counts as JSON.
"""

from __future__ import annotations

import argparse
import io
import json
import os
import random
import sys
from collections import Counter
from datetime import date, timedelta
from typing import TYPE_CHECKING, Any
from zoneinfo import ZoneInfo

import django

if TYPE_CHECKING:
    from users.models import User

ZONE = ZoneInfo("America/Denver")
# The outcomes of the appointments, by share: most kept, some missed, some ahead.
OUTCOMES = ["kept"] * 12 + ["no_show"] * 3 + ["confirmed"] * 2 + ["set", "cancelled"]


def seed(*, calls: int, appointments: int) -> tuple[User, date, date, date]:
    """The organization, its calls, legs and appointments, the rollup; its manager, the
    first and last day of the 30 days, and the day with the most appointments."""
    from django.contrib.auth.models import Group
    from django.core.management import call_command
    from django.db import connection
    from django.utils import timezone

    from accounts.models import Account, Organization
    from appointments.models import Actor, Appointment, AppointmentChange
    from bench.seeds.morning import write_calls
    from calls.models import AttemptOutcome, Call, CallAttempt, CallStatus, Leg
    from scoring.services import scorecard_create_default, scorecard_snapshot
    from users.models import Membership, User

    random.seed(16)
    organization = Organization.objects.create(name="Bench Appointments Group")
    account = Account.objects.create(
        organization=organization, name="Appointments 1", timezone=ZONE.key
    )
    names, points = scorecard_snapshot(scorecard_create_default(account=account))
    agents = []
    for n in range(20):
        agent = User.objects.create(
            username=f"appointments-agent{n}@example.com",
            first_name="Agent",
            last_name=str(n),
        )
        agent.accounts.add(account)
        agents.append(agent)
    manager = User.objects.create(
        username="appointments-manager@example.com",
        first_name="Morgan",
        last_name="Bench",
        timezone=ZONE.key,
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
    answered = list(
        Call.objects.filter(account=account, status=CallStatus.ANSWER).values_list(
            "pk", "received_at"
        )
    )
    for start in range(0, len(answered), 5000):
        legs = []
        for pk, received in answered[start : start + 5000]:
            dialed = received + timedelta(seconds=random.randint(2, 60))
            legs.append(
                CallAttempt(
                    call_id=pk,
                    leg=Leg.LEAD,
                    number="+13035550123",
                    provider="simulator",
                    outcome=AttemptOutcome.ANSWERED,
                    dial_requested_at=dialed,
                    answered_at=dialed + timedelta(seconds=random.randint(5, 40)),
                )
            )
        CallAttempt.objects.bulk_create(legs)
    chosen = random.sample(answered, min(appointments, len(answered)))
    for start in range(0, len(chosen), 5000):
        batch = chosen[start : start + 5000]
        made = Appointment.objects.bulk_create(
            Appointment(
                account=account,
                call_id=pk,
                phone="+13035550123",
                first_name="Lead",
                last_name=f"Appointment{start + n}",
                starts_at=(received + timedelta(days=random.randint(0, 4))).replace(
                    minute=random.choice((0, 30)), second=0, microsecond=0
                ),
                status=random.choice(OUTCOMES),
                set_by=Actor.AGENT,
            )
            for n, (pk, received) in enumerate(batch)
        )
        changes = []
        for appointment in made:
            changes.append(
                AppointmentChange(
                    appointment=appointment,
                    status_from="",
                    status_to="set",
                    by=Actor.AGENT,
                )
            )
            if appointment.status != "set":
                changes.append(
                    AppointmentChange(
                        appointment=appointment,
                        status_from="set",
                        status_to=appointment.status,
                        by=Actor.MANAGER,
                    )
                )
        AppointmentChange.objects.bulk_create(changes)
    call_command("rebuild_rollup", account=account.pk, stdout=io.StringIO())
    with connection.cursor() as cursor:
        cursor.execute("ANALYZE")
    last = now.astimezone(ZONE).date()
    days = Counter(
        moment.astimezone(ZONE).date()
        for moment in Appointment.objects.filter(account=account).values_list(
            "starts_at", flat=True
        )
    )
    busiest = max((day for day in days if day <= last), key=lambda day: days[day])
    return User.objects.get(pk=manager.pk), last - timedelta(days=29), last, busiest


def timed(
    *, manager: User, first: date, last: date, busiest: date, times: int
) -> dict[str, Any]:
    """Each page and the baselines, p50 and slowest of ``times`` after one to warm up."""
    from django.db import connection, reset_queries
    from django.test import Client
    from django.utils import timezone

    from bench.seeds.morning import p50
    from scoring.figures import dashboard_figures

    client = Client(HTTP_HOST="localhost")
    client.force_login(manager)
    dashboard = f"/dashboard/?date_from={first}&date_to={last}"
    day = f"/appointments/?day={busiest}"

    def page(path: str) -> None:
        response = client.get(path)
        if response.status_code != 200:
            raise SystemExit(f"{path} answered {response.status_code}")

    def figures() -> None:
        with timezone.override(ZONE):
            dashboard_figures(user=manager, first=first, last=last)

    connection.force_debug_cursor = True
    reset_queries()
    page(dashboard)
    queries = len(connection.queries)
    connection.force_debug_cursor = False
    listed = client.get(day).content.count(b'<tr id="appointment-')
    return {
        "dashboard": p50(lambda: page(dashboard), times),
        "figures": p50(figures, times),
        "day": p50(lambda: page(day), times),
        "bare": p50(lambda: page("/healthz"), times),
        "queries": queries,
        "listed": listed,
        "busiest": str(busiest),
    }


def main(argv: list[str]) -> None:
    parser = argparse.ArgumentParser(
        prog="bench/seeds/appointments.py", description=__doc__
    )
    parser.add_argument("calls", type=int, help="calls of the account")
    parser.add_argument("appointments", type=int, help="appointments of the account")
    parser.add_argument("times", type=int, help="requests timed, after one to warm up")
    arguments = parser.parse_args(argv)
    manager, first, last, busiest = seed(
        calls=arguments.calls, appointments=arguments.appointments
    )
    found = timed(
        manager=manager, first=first, last=last, busiest=busiest, times=arguments.times
    )
    print(json.dumps({**found, "calls": arguments.calls}))


if __name__ == "__main__":
    # As part 13's script: the service's checkout first on the path, not this folder.
    sys.path[0] = os.getcwd()
    django.setup()
    main(sys.argv[1:])
