"""Issue 39's figures on the dashboard read from their rollup (appointments/rollup.py,
handoffs/rollup.py) beside the dashboard's: the appointment figures (set, show and
no-show rates by agent, source and account, against the previous period), first touch
and first human (median and 90th percentile, overall and per agent on the leaderboard)
are the same read from the rollup as from the data, each account's days in its own
timezone with leads at either side of its midnight; an appointment changed on a rolled
day marks it, and the sweep computes it again; two organizations never mix."""

from __future__ import annotations

import random
from datetime import date, datetime, time, timedelta
from types import SimpleNamespace
from zoneinfo import ZoneInfo

import pytest
from django.core.management import call_command
from django.db import connection
from django.test.utils import CaptureQueriesContext
from django.urls import reverse
from django.utils import timezone

from appointments.models import Actor, Appointment, RollupAppointment, Status
from appointments.services import appointment_change, appointment_set_for_call
from calls.models import Call, CallAttempt, CallStatus, Leg
from handoffs.models import RollupSpeed
from scoring.models import RollupCoverage, RollupStale, RollupStaleDay
from scoring.rollup_build import rollup_sweep
from tests.accounts.factories import AccountFactory, OrganizationFactory
from tests.scoring.factories import CallFactory, in_role
from tests.texting.factories import text_in_thread
from texting.models import Purpose, TextStatus

pytestmark = pytest.mark.django_db

DAYS = 8  # the leads' days: today and the DAYS before, in each account's timezone
NOON = datetime(2026, 11, 20, 12, 0, tzinfo=ZoneInfo("UTC"))
ROLLUP_TABLES = ("handoffs_rollupspeed", "appointments_rollupappointment")


@pytest.fixture
def at_noon(monkeypatch):
    """Noon UTC on a fixed day: Denver's and Tokyo's today are both whole days ahead
    of their yesterday, whatever the machine's clock."""
    monkeypatch.setattr(timezone, "now", lambda: NOON)


def _leads(account, agents, manager, rng: random.Random) -> None:
    """Leads over today and the DAYS before, some a minute either side of local
    midnight: every status, lead legs dialed and connected, automatic texts (some
    canceled), people's texts, appointments set, moved, kept, no-shows and cancelled,
    some due later than now."""
    zone = ZoneInfo(account.timezone)
    today = timezone.localtime(timezone.now(), zone).date()
    for n in range(70):
        day = today - timedelta(days=rng.randint(0, DAYS))
        minute = rng.choice([0, 1, 24 * 60 - 1, rng.randint(0, 24 * 60 - 1)])
        received = min(
            timezone.now() - timedelta(hours=3),
            datetime.combine(day, time.min, tzinfo=zone) + timedelta(minutes=minute),
        )
        status = rng.choice([CallStatus.ANSWER] * 4 + [CallStatus.NOANSWER])
        call = CallFactory(
            account=account,
            status=status,
            agent=rng.choice(agents) if status == CallStatus.ANSWER else None,
            source=rng.choice(["Cars.com", "Web", ""]),
            phone=f"+1303555{n:04d}",
            received_at=received,
        )
        if rng.random() < 0.8:
            connected = status == CallStatus.ANSWER and rng.random() < 0.8
            CallAttempt.objects.create(
                call=call,
                leg=Leg.LEAD,
                number=call.phone,
                provider="simulator",
                dial_requested_at=received + timedelta(seconds=rng.randint(0, 90)),
                answered_at=received + timedelta(seconds=rng.randint(90, 900))
                if connected
                else None,
            )
        if rng.random() < 0.6:
            text_in_thread(
                account,
                call.phone,
                at=received + timedelta(seconds=rng.randint(0, 40)),
                body="Thanks for your enquiry",
                purpose=Purpose.INSTANT,
                status=rng.choice([TextStatus.DELIVERED, TextStatus.CANCELED]),
                call=call,
            )
        if rng.random() < 0.3:
            text_in_thread(
                account,
                call.phone,
                at=received + timedelta(seconds=rng.randint(30, 4000)),
                body="This is Alex, when suits you?",
                purpose=Purpose.REPLY,
                sent_by=manager,
                call=call,
            )
        if status == CallStatus.ANSWER and rng.random() < 0.6:
            starts = received + timedelta(hours=rng.choice([2, 20, 30, 50]))
            made = appointment_set_for_call(call=call, starts_at=starts, by=Actor.AGENT)
            if rng.random() < 0.2:
                made = appointment_set_for_call(
                    call=call, starts_at=starts + timedelta(hours=1), by=Actor.AGENT
                )
            if starts < timezone.now():
                outcome = rng.choice(
                    [Status.KEPT, Status.KEPT, Status.NO_SHOW, Status.CANCELLED, None]
                )
                if outcome is not None:
                    appointment_change(appointment=made, to=outcome, by=Actor.MANAGER)


@pytest.fixture
def world(at_noon):
    """Two organizations: North (Denver) with two agents and East (Tokyo) with two, each
    with its manager and leads of their own."""
    rng = random.Random(39)
    found = SimpleNamespace()
    for name, zone in (("North", "America/Denver"), ("East", "Asia/Tokyo")):
        group = OrganizationFactory(name=f"{name} Group")
        account = AccountFactory(organization=group, name=name, timezone=zone)
        manager = in_role("Global Manager", organizations=[group])
        agents = [in_role("Agent", accounts=[account]) for _ in range(2)]
        _leads(account, agents, manager, rng)
        setattr(found, name.lower(), SimpleNamespace(account=account, manager=manager))
    return found


def rolled_up() -> None:
    call_command("rebuild_rollup", stdout=open("/dev/null", "w"))  # noqa: SIM115
    rollup_sweep()
    assert not RollupStale.objects.exists()
    assert not RollupStaleDay.objects.exists()


def _figures(client, manager, first: date, last: date) -> tuple[dict, bool]:
    """The page's issue-39 figures, and whether it read their rollup."""
    client.force_login(manager)
    with CaptureQueriesContext(connection) as queries:
        response = client.get(
            reverse("pages:dashboard"), {"date_from": first, "date_to": last}
        )
    assert response.status_code == 200
    context = response.context
    shown = {
        "speed": context["speed"],
        "appointments": context["appointments"],
        "leaderboard": [
            {
                key: row[key]
                for key in (
                    "pk",
                    "rank",
                    "leads",
                    "reached",
                    "human_median",
                    "human_p90",
                    "touch_median",
                    "set",
                    "set_rate",
                    "show_rate",
                    "set_rate_was",
                    "show_rate_was",
                )
            }
            for row in context["leaderboard"]
        ],
    }
    sql = " ".join(query["sql"] for query in queries.captured_queries)
    return shown, all(table in sql for table in ROLLUP_TABLES)


RANGES = [(DAYS, 0), (DAYS, 1), (3, 2), (1, 1), (0, 0)]


def _range(since: int, until: int) -> tuple[date, date]:
    today = NOON.date()
    return today - timedelta(days=since), today - timedelta(days=until)


def test_the_figures_from_the_rollup_are_the_datas(world, client):
    """Every range (the whole span, yesterday alone, today alone: read live), each
    organization's manager: the same figures from the rollup as from the data, exact
    (the histograms keep whole seconds, as the data's spread does)."""
    rolled_up()
    assert RollupSpeed.objects.exists()
    assert RollupAppointment.objects.exists()
    rolled = {}
    for org in (world.north, world.east):
        for since, until in RANGES:
            shown, read = _figures(client, org.manager, *_range(since, until))
            assert read or since == 0, (org.account.name, since, until)
            rolled[org.account.pk, since, until] = shown
    RollupCoverage.objects.all().delete()  # every day from the data now
    for org in (world.north, world.east):
        for since, until in RANGES:
            shown, read = _figures(client, org.manager, *_range(since, until))
            assert not read
            assert shown == rolled[org.account.pk, since, until], (since, until)
    # Nothing crosses: each manager's leads are their own account's.
    for org in (world.north, world.east):
        zone = ZoneInfo(org.account.timezone)
        first, last = _range(DAYS, 0)
        leads = Call.objects.filter(
            account=org.account,
            received_at__gte=datetime.combine(first, time.min, zone),
            received_at__lt=datetime.combine(last + timedelta(days=1), time.min, zone),
        ).count()
        assert rolled[org.account.pk, DAYS, 0]["speed"].leads == leads > 0
        accounts = {
            row["label"]
            for row in rolled[org.account.pk, DAYS, 0]["appointments"]["accounts"]
        }
        assert accounts <= {org.account.name}


def test_an_appointment_changed_on_a_rolled_day_marks_it(world, client):
    """A kept appointment of a rolled-up day marked no-show: the page shows the change at
    once (the day read from the data), the sweep computes the day again, and the rollup
    then says what the data says."""
    rolled_up()
    first, last = _range(DAYS, 1)
    before, _ = _figures(client, world.north.manager, first, last)
    kept = Appointment.objects.filter(
        account=world.north.account, status=Status.KEPT
    ).first()
    assert kept is not None
    appointment_change(appointment=kept, to=Status.NO_SHOW, by=Actor.MANAGER)
    assert RollupStaleDay.objects.filter(account=world.north.account).exists()
    marked, read = _figures(client, world.north.manager, first, last)
    assert marked != before
    assert marked["appointments"]["overall"][0]["no_show"] == (
        before["appointments"]["overall"][0]["no_show"] + 1
    )
    rollup_sweep()
    assert not RollupStaleDay.objects.exists()
    swept, read = _figures(client, world.north.manager, first, last)
    assert read
    assert swept == marked
    RollupCoverage.objects.all().delete()
    raw, read = _figures(client, world.north.manager, first, last)
    assert not read
    assert raw == swept


def test_a_persons_text_on_a_rolled_day_marks_its_call(world, client):
    """A person's text to a lead of a rolled-up day never reached by a person: the
    first human changes at once, and again from the rollup after the sweep."""
    rolled_up()
    first, last = _range(DAYS, 1)
    before, _ = _figures(client, world.east.manager, first, last)
    call = (
        Call.objects.filter(
            account=world.east.account, received_at__lt=NOON - timedelta(days=2)
        )
        .exclude(attempts_log__answered_at__isnull=False)
        .exclude(texts__purpose=Purpose.REPLY)
        .first()
    )
    assert call is not None
    text_in_thread(
        world.east.account,
        call.phone,
        at=call.received_at + timedelta(seconds=7),
        body="Sorry we missed you",
        purpose=Purpose.REPLY,
        sent_by=world.east.manager,
        call=call,
    )
    marked, _ = _figures(client, world.east.manager, first, last)
    assert marked["speed"].reached == before["speed"].reached + 1
    rollup_sweep()
    swept, read = _figures(client, world.east.manager, first, last)
    assert read
    assert swept == marked
