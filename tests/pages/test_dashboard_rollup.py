"""The dashboard's rollup (scoring/rollup.py, scoring/rollup_build.py): every figure the
dashboard shows is the same read from the rollup as read from the calls, for several
accounts, viewers' timezones, ranges and choices; the stale marks, the sweep and
``rebuild_rollup`` keep it in step; and the dashboard reads it in a fixed number of
queries."""

from __future__ import annotations

import json
import os
import random
import re
import subprocess
import sys
from datetime import date, datetime, time, timedelta
from pathlib import Path
from zoneinfo import ZoneInfo

import pytest
from django.core.management import CommandError, call_command
from django.db import connection
from django.test.utils import CaptureQueriesContext
from django.urls import reverse
from django.utils import timezone

from accounts.services import account_update
from calls.models import AttemptOutcome, Call, CallAttempt, CallStatus, Leg
from calls.services import call_cancel
from scoring.figures import dashboard_figures
from scoring.models import (
    RollupCoverage,
    RollupDay,
    RollupHour,
    RollupOffer,
    RollupResponse,
    RollupStale,
)
from scoring.rollup_build import rollup_sweep
from scoring.services import score_save
from tests.accounts.factories import AccountFactory
from tests.scoring.factories import CallFactory, in_role

pytestmark = pytest.mark.django_db

DAYS = 20  # the calls' days: today and the DAYS before, in each account's timezone
# The page's CSRF token is masked afresh on every response: left out of the comparison.
CSRF = re.compile(rb'name="csrfmiddlewaretoken" value="[^"]*"|"X-CSRFToken": "[^"]*"')


def utc_today() -> date:
    return timezone.localdate(timezone=ZoneInfo("UTC"))


def calls_over_days(world, rng: random.Random, east: str = "East") -> None:
    """Calls over today and the DAYS before at North (Denver), South (New York) and East
    (Kolkata, half an hour off UTC): every status, response times with ties and nulls,
    several agents and sources, legs, scores with appointments, some at local midnight."""
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
    now = timezone.now()
    for n in range(150):
        account = accounts[n % 3]
        zone = ZoneInfo(account.timezone)
        day = timezone.localtime(now, zone).date() - timedelta(
            days=rng.randint(0, DAYS)
        )
        minute = rng.choice([0, 24 * 60 - 1, rng.randint(0, 24 * 60 - 1)])
        received = min(
            now - timedelta(minutes=1),
            datetime.combine(day, time.min, tzinfo=zone) + timedelta(minutes=minute),
        )
        status = rng.choice(statuses)
        answered = status == CallStatus.ANSWER
        agent = rng.choice(agents) if answered or rng.random() < 0.2 else None
        call = CallFactory(
            account=account,
            status=status,
            agent=agent,
            source=rng.choice(["Cars.com", "Web", ""]),
            received_at=received,
            response_time=rng.choice([5, 5, 30, 60, 61, 299, 1200, rng.randint(0, 900)])
            if answered or rng.random() < 0.1
            else None,
        )
        for offered in rng.sample(agents, rng.randint(0, 2)) * rng.randint(1, 2):
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
                values={
                    "cat1": rng.random() < 0.5,
                    "cat3": rng.random() < 0.5,
                    "wow": rng.random() < 0.2,
                    "appointment_date": "2026-12-01" if rng.random() < 0.3 else None,
                },
            )
    CallFactory(account=world.foreign, received_at=received, response_time=1)


def rolled_up() -> None:
    """The rollup built by the command, then the sweep's pass over the marks the scores
    left; every account's rollup then holds every day up to its yesterday."""
    call_command("rebuild_rollup", stdout=open("/dev/null", "w"))  # noqa: SIM115
    rollup_sweep()
    assert not RollupStale.objects.exists()
    for coverage in RollupCoverage.objects.select_related("account"):
        zone = ZoneInfo(coverage.account.timezone)
        assert coverage.through == timezone.localtime(timezone.now(), zone).date() - (
            timedelta(days=1)
        )


def _reads_rollup(queries: CaptureQueriesContext) -> bool:
    return any("scoring_rollupday" in q["sql"] for q in queries.captured_queries)


# (who, their timezone, range as days before UTC today (first, last), account)
CASES: list[tuple[str, str, tuple[int, int], str]] = [
    ("global_manager", "UTC", (10, 4), ""),  # every day rolled up
    ("global_manager", "America/Denver", (6, 0), ""),  # today's partial day too
    ("global_manager", "Asia/Kolkata", (6, 0), ""),  # hours from the calls
    ("global_manager", "America/New_York", (1, 1), ""),  # yesterday alone
    ("global_manager", "Pacific/Auckland", (40, 0), ""),  # before the first call
    ("global_manager", "UTC", (3, 3), "south"),  # one account of several
    ("global_manager", "Asia/Kathmandu", (12, 2), "east"),  # 5:45 off UTC
    ("manager", "America/Denver", (13, 0), ""),  # a manager of one account
    ("manager", "UTC", (0, 0), ""),  # today alone: nothing rolled up
]


def _in_zone(world, who: str, zone: str, since: int, until: int):
    """The world's user ``who`` set to ``zone``, and the range from ``since`` to
    ``until`` days before today (UTC)."""
    user = getattr(world, who)
    user.timezone = zone
    user.save(update_fields=["timezone"])
    today = utc_today()
    return user, today - timedelta(days=since), today - timedelta(days=until)


def _page(client, user, first: date, last: date, account) -> tuple:
    params = {"date_from": first, "date_to": last}
    if account is not None:
        params["account"] = account.pk
    client.force_login(user)
    with CaptureQueriesContext(connection) as queries:
        response = client.get(reverse("pages:dashboard"), params)
    assert response.status_code == 200
    return response.context["f"], CSRF.sub(b"", response.content), queries


@pytest.fixture
def at_utc_noon(monkeypatch):
    """The clock at noon UTC today, where CASES say what each range holds: at 00:30 UTC
    the "manager, UTC, today alone" case's previous period (UTC yesterday) is still
    Denver's today, so nothing of it is rolled up and the page rightly reads no rollup."""
    noon = datetime.combine(utc_today(), time(12), tzinfo=ZoneInfo("UTC"))
    monkeypatch.setattr(timezone, "now", lambda: noon)


def test_every_figure_read_from_the_rollup_is_the_calls(world, client, at_utc_noon):
    """Each case's page from the rollup, then from the calls alone (the rollup dropped):
    the same figures and the same HTML, byte for byte."""
    calls_over_days(world, random.Random(22))
    rolled_up()
    accounts = {"south": world.south}
    accounts["east"] = world.north.organization.accounts.get(name="East")
    shown = []
    for who, zone, (since, until), account in CASES:
        user, first, last = _in_zone(world, who, zone, since, until)
        f, html, queries = _page(client, user, first, last, accounts.get(account))
        assert _reads_rollup(queries), who  # the range's or the previous period's
        raw = dashboard_figures_in(zone, user, first, last, accounts.get(account))
        assert f == raw, (who, zone, since, until, account)
        shown.append(html)
    RollupCoverage.objects.all().delete()  # every day from the calls now
    for (who, zone, (since, until), account), html in zip(CASES, shown, strict=True):
        user, first, last = _in_zone(world, who, zone, since, until)
        f, raw_html, queries = _page(client, user, first, last, accounts.get(account))
        assert not _reads_rollup(queries)
        assert raw_html == html, (who, zone, since, until, account)


def dashboard_figures_in(zone: str, user, first: date, last: date, account):
    """The figures read from the calls alone, in the viewer's timezone ``zone``."""
    with timezone.override(ZoneInfo(zone)):
        return dashboard_figures(
            user=user, first=first, last=last, account=account, rollup=False
        )


def test_the_cases_hold_enough_calls_to_tell_figures_apart(world):
    """The comparison above means something: the rolled-up range holds calls of every
    account, answered and not, scored, with legs and response times."""
    calls_over_days(world, random.Random(22))
    rolled_up()
    first, last = utc_today() - timedelta(days=10), utc_today() - timedelta(days=4)
    f = dashboard_figures_in("UTC", world.global_manager, first, last, None)
    assert f.received > 25
    assert 0 < f.answered < f.received
    assert f.noagent
    assert len(f.accounts) == 3
    assert len(f.agents) >= 4
    assert len(f.sources) == 3
    assert f.median is not None
    assert any(share for _, _, share in f.categories)
    assert any(row["offered"] for row in f.agents)
    assert {c.key: c.previous for c in f.changes}["received"]


def _rows(model) -> list[tuple]:
    fields = [f.attname for f in model._meta.concrete_fields if f.attname != "id"]
    return sorted(model.objects.values_list(*fields), key=str)


def _day_of(call: Call) -> date:
    return timezone.localtime(call.received_at, ZoneInfo(call.account.timezone)).date()


def test_a_change_to_a_rolled_up_day_is_marked_and_read_from_the_calls(world):
    """A score saved, a call ended and a leg ended after its call, each on a day the
    rollup holds: marked in the same transaction, so the dashboard reads those days from
    the calls (still the same figures); the sweep computes them again and drops the marks."""
    calls_over_days(world, random.Random(5))
    days_ago = timedelta(days=3)
    answered = CallFactory(
        account=world.north,
        agent=world.agent,
        received_at=timezone.now() - days_ago,
        response_time=44,
    )
    queued = CallFactory(
        account=world.south,
        status=CallStatus.QUEUED,
        agent=None,
        received_at=timezone.now() - days_ago,
        response_time=None,
    )
    rolled_up()
    before = _rows(RollupDay)

    score_save(call=answered, scorer=world.scorer, values={"cat2": True, "wow": True})
    assert call_cancel(call=queued)

    marked = set(RollupStale.objects.values_list("call_id", flat=True))
    assert marked == {answered.pk, queued.pk}
    first, last = utc_today() - timedelta(days=6), utc_today()
    for zone in ("UTC", "America/Denver"):
        assert dashboard_figures_in(
            zone, world.global_manager, first, last, None
        ) == figures_from_rollup(zone, world.global_manager, first, last)
    assert rollup_sweep() == {"refreshed": 2, "added": 0}
    assert not RollupStale.objects.exists()
    assert _rows(RollupDay) != before
    day = RollupDay.objects.filter(
        account=world.north, day=_day_of(answered), agent_id=world.agent.pk
    )
    assert sum(day.values_list("wow", flat=True)) >= 1
    assert dashboard_figures_in(
        "UTC", world.global_manager, first, last, None
    ) == figures_from_rollup("UTC", world.global_manager, first, last)


def figures_from_rollup(zone: str, user, first: date, last: date):
    with timezone.override(ZoneInfo(zone)):
        return dashboard_figures(user=user, first=first, last=last)


def _dialing_with_a_ringing_agent(world, *, received_at):
    dialing = CallFactory(
        account=world.north,
        status=CallStatus.DIALING,
        agent=None,
        rounds=1,
        received_at=received_at,
    )
    leg = CallAttempt.objects.create(
        call=dialing, leg=Leg.AGENT, agent=world.agent, number="1", provider="simulator"
    )
    return Call.objects.select_related("account").get(pk=dialing.pk), leg


def test_a_call_cancelled_while_ringing_an_agent_is_marked_once(world):
    """Through the pipeline: cancelling a call still dialing ends its agent's leg (no mark:
    the call is under way) and then the call (its final status marks it)."""
    RollupStale.objects.all().delete()  # the world's score marked its call
    dialing, leg = _dialing_with_a_ringing_agent(
        world, received_at=timezone.now() - timedelta(days=2)
    )
    assert call_cancel(call=dialing)
    leg.refresh_from_db()
    assert leg.outcome == AttemptOutcome.CANCELED
    assert list(RollupStale.objects.values_list("call_id", flat=True)) == [dialing.pk]


def test_a_call_of_today_ending_leaves_no_mark_and_the_figures_exact(
    world, monkeypatch
):
    """The rollup never holds the account's today, so a call of today needs no mark (most
    calls): none is written, and the figures still count its final status. Close to the
    account's midnight it is marked all the same (the day may be computed meanwhile)."""
    from scoring import rollup_build

    RollupStale.objects.all().delete()
    zone = ZoneInfo(world.north.timezone)
    local_noon = datetime.combine(
        timezone.localdate(timezone.now(), zone), time(12), zone
    )
    monkeypatch.setattr(rollup_build.timezone, "now", lambda: local_noon)
    dialing, _ = _dialing_with_a_ringing_agent(
        world, received_at=local_noon - timedelta(hours=1)
    )
    assert call_cancel(call=dialing)
    assert not RollupStale.objects.exists()

    late = local_noon + timedelta(hours=11, minutes=55)  # 23:55 in the account's zone
    monkeypatch.setattr(rollup_build.timezone, "now", lambda: late)
    other, _ = _dialing_with_a_ringing_agent(
        world, received_at=late - timedelta(hours=1)
    )
    assert call_cancel(call=other)
    assert list(RollupStale.objects.values_list("call_id", flat=True)) == [other.pk]


def test_a_leg_ending_after_its_call_ended_marks_the_call(world):
    """The pipeline's signal for an agent's leg that ends once its call has a final
    status (a late callback, the sweep's check with the provider): the day is marked."""
    from calls.signals import offer_ended

    RollupStale.objects.all().delete()
    ended = CallFactory(account=world.north, status=CallStatus.NOAGENT)
    attempt = CallAttempt.objects.create(
        call=ended, leg=Leg.AGENT, agent=world.agent, number="1", provider="simulator"
    )
    offer_ended.send(sender=CallAttempt, attempt=CallAttempt.objects.get(pk=attempt.pk))
    assert list(RollupStale.objects.values_list("call_id", flat=True)) == [ended.pk]


def test_a_new_timezone_reads_the_calls_until_the_sweep_cuts_the_days_again(world):
    calls_over_days(world, random.Random(8))
    rolled_up()
    first, last = utc_today() - timedelta(days=9), utc_today() - timedelta(days=2)
    account_update(account=world.north, data={"timezone": "Europe/Paris"})

    assert dashboard_figures_in(
        "UTC", world.global_manager, first, last, None
    ) == figures_from_rollup("UTC", world.global_manager, first, last)
    rollup_sweep()
    coverage = RollupCoverage.objects.get(account=world.north)
    assert coverage.timezone == "Europe/Paris"
    assert coverage.through == timezone.localtime(
        timezone.now(), ZoneInfo("Europe/Paris")
    ).date() - timedelta(days=1)
    with CaptureQueriesContext(connection) as queries:
        rolled = figures_from_rollup("UTC", world.global_manager, first, last)
    assert _reads_rollup(queries)
    assert rolled == dashboard_figures_in(
        "UTC", world.global_manager, first, last, None
    )


def test_the_sweep_adds_the_days_that_ended_and_builds_new_accounts_in_turns(world):
    """Days ended since the rollup's last day are added; an account without a rollup is
    built from its first call on, at most ``days`` account-days per sweep."""
    calls_over_days(world, random.Random(9))
    rolled_up()
    complete = [_rows(model) for model in (RollupDay, RollupOffer, RollupHour)]
    coverage = RollupCoverage.objects.get(account=world.south)
    assert coverage.through is not None
    coverage.through -= timedelta(days=4)
    coverage.save()
    RollupDay.objects.filter(account=world.south, day__gt=coverage.through).delete()
    RollupOffer.objects.filter(account=world.south, day__gt=coverage.through).delete()
    RollupHour.objects.filter(account=world.south, day__gt=coverage.through).delete()

    assert rollup_sweep() == {"refreshed": 0, "added": 4}
    assert [_rows(model) for model in (RollupDay, RollupOffer, RollupHour)] == complete

    old = AccountFactory(name="Old", organization=world.north.organization)
    for days in (0, 40, 75):
        first = CallFactory(account=old, received_at=timezone.now() - timedelta(days))
    zone = ZoneInfo(old.timezone)
    days_held = (
        timezone.localtime(timezone.now(), zone).date()
        - timezone.localtime(first.received_at, zone).date()
    ).days  # from the first call's day to yesterday
    assert rollup_sweep(days=31) == {"refreshed": 0, "added": 31}
    through = RollupCoverage.objects.get(account=old).through
    assert through is not None
    assert through < utc_today() - timedelta(40)
    assert rollup_sweep(days=20) == {"refreshed": 0, "added": 20}
    assert rollup_sweep() == {"refreshed": 0, "added": days_held - 51}
    assert RollupDay.objects.filter(account=old).count() == 2  # today's is not held
    assert rollup_sweep() == {"refreshed": 0, "added": 0}


def test_rebuild_rollup_shows_progress_and_changes_nothing_run_again(world, capsys):
    calls_over_days(world, random.Random(10))
    call_command("rebuild_rollup")
    out = capsys.readouterr().out
    assert re.search(
        r"North \(#\d+\): \d{4}-\d\d-\d\d\.\.\d{4}-\d\d-\d\d, \d+ calls", out
    )
    assert re.search(r"North \(#\d+\): \d+ days, \d+ calls, rolled up", out)
    assert "Done:" in out
    models = (RollupDay, RollupResponse, RollupOffer, RollupHour)
    built = [_rows(model) for model in models]
    assert all(built)

    call_command("rebuild_rollup")
    call_command(
        "rebuild_rollup", account=world.north.pk, since=utc_today() - timedelta(5)
    )
    assert [_rows(model) for model in models] == built
    out = capsys.readouterr().out
    assert out.count("North (#") >= 3
    assert "South (#" in out

    RollupDay.objects.filter(account=world.north).delete()  # lost, say
    call_command("rebuild_rollup", account=world.north.pk)
    assert _rows(RollupDay) == built[0]
    with pytest.raises(CommandError, match="No account with id 0"):
        call_command("rebuild_rollup", account=0)


def test_support_sees_the_rollups_and_has_one_built_again(world, admin_client):
    calls_over_days(world, random.Random(12))
    rolled_up()
    url = reverse("admin:scoring_rollupcoverage_changelist")
    listed = admin_client.get(url).content.decode()
    yesterday = timezone.localtime(timezone.now(), ZoneInfo("America/Denver")).date()
    yesterday -= timedelta(days=1)
    assert "North" in listed
    assert "America/Denver" in listed
    assert f"{yesterday:%b}" in listed
    north = RollupCoverage.objects.get(account=world.north)
    assert (
        admin_client.get(
            reverse("admin:scoring_rollupcoverage_change", args=[north.pk])
        ).status_code
        == 200
    )
    rows = _rows(RollupDay)

    response = admin_client.post(
        url, {"action": "build_again", "_selected_action": [world.north.pk]}
    )

    assert response.status_code == 302
    north.refresh_from_db()
    assert north.through is None
    assert not RollupDay.objects.filter(account=world.north).exists()
    first, last = utc_today() - timedelta(days=9), utc_today() - timedelta(days=2)
    assert figures_from_rollup(
        "UTC", world.global_manager, first, last
    ) == dashboard_figures_in("UTC", world.global_manager, first, last, None)
    rollup_sweep()
    assert _rows(RollupDay) == rows


# The embedded default's path, in a process of its own on SQLite: migrate, seed the demo
# (which builds its accounts' rollups), then the figures of three ranges both ways.
SQLITE_CHECK = """
import io, json
import django
django.setup()
from datetime import timedelta
from django.core.management import call_command
from django.db import connection
from django.utils import timezone
from scoring.figures import dashboard_figures
from scoring.models import RollupCoverage
from users.models import User

call_command("migrate", verbosity=0)
call_command("seed_demo", stdout=io.StringIO(), stderr=io.StringIO())
staff = User.objects.get(username="admin")
today = timezone.localdate()
found = []
for since, until in ((30, 0), (10, 2), (0, 0)):
    first, last = today - timedelta(days=since), today - timedelta(days=until)
    rolled = dashboard_figures(user=staff, first=first, last=last)
    raw = dashboard_figures(user=staff, first=first, last=last, rollup=False)
    found.append([rolled == raw, rolled.received])
print(json.dumps({
    "vendor": connection.vendor,
    "found": found,
    "covered": RollupCoverage.objects.exclude(through=None).count(),
}))
"""


@pytest.mark.slow
def test_the_embedded_default_reads_the_same_figures_from_its_rollup_on_sqlite(
    tmp_path,
):
    env = {
        key: value
        for key, value in os.environ.items()
        if not key.startswith(("DJANGO_", "DATABASE_", "REDIS_", "CELERY_"))
    }
    env.update(
        DJANGO_SETTINGS_MODULE="config.settings.local",
        DATABASE_URL=f"sqlite:///{tmp_path / 'db.sqlite3'}",
        CELERY_BROKER_URL="memory://",  # no worker: nothing is consumed here
        EMBEDDED_CACHE_DIR=str(tmp_path / "cache"),
    )
    done = subprocess.run(
        [sys.executable, "-c", SQLITE_CHECK],
        cwd=Path(__file__).resolve().parents[2],
        env=env,
        capture_output=True,
        text=True,
        timeout=300,
        check=False,
    )
    assert done.returncode == 0, done.stderr[-3000:]
    found = json.loads(done.stdout.strip().splitlines()[-1])
    assert found["vendor"] == "sqlite"
    assert found["covered"] >= 2  # the demo's accounts, rolled up to yesterday
    assert [same for same, _ in found["found"]] == [True, True, True]
    assert found["found"][0][1] > 0  # the month holds the demo's calls
