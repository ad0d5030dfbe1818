"""The two speed numbers on hand-counted leads: first touch (an automatic text or the
first dial of the lead) and first human (an agent connected, or a person's text), from
the lead's receipt, median and 90th percentile, each account's days in its own timezone;
and the morning report showing both beside last week's, with the handoffs still open."""

from __future__ import annotations

from dataclasses import astuple
from datetime import date, datetime, timedelta
from zoneinfo import ZoneInfo

import pytest
from django.urls import reverse

from accounts.models import Account
from calls.models import CallAttempt, CallStatus, Leg
from handoffs.models import HandoffKind
from handoffs.selectors import Speed, speed_figures
from handoffs.services import handoff_open
from notify.report import report_build
from tests.accounts.factories import AccountFactory, OrganizationFactory
from tests.scoring.factories import CallFactory, in_role
from tests.texting.factories import text_in_thread
from texting.models import Purpose, TextStatus

pytestmark = pytest.mark.django_db

DAY = date(2026, 3, 4)  # a Wednesday
DENVER = ZoneInfo("America/Denver")
TOKYO = ZoneInfo("Asia/Tokyo")


def lead(account, received_at, phone="+13035550147", **fields):
    return CallFactory(
        account=account,
        phone=phone,
        received_at=received_at,
        status=fields.pop("status", CallStatus.ANSWER),
        **fields,
    )


def lead_leg(call, *, dialed=None, answered=None):
    return CallAttempt.objects.create(
        call=call,
        leg=Leg.LEAD,
        number=call.phone,
        provider="simulator",
        dial_requested_at=call.received_at + timedelta(seconds=dialed)
        if dialed is not None
        else None,
        answered_at=call.received_at + timedelta(seconds=answered)
        if answered is not None
        else None,
    )


def auto_text(call, seconds, **fields):
    return text_in_thread(
        call.account,
        call.phone,
        at=call.received_at + timedelta(seconds=seconds),
        body="Thanks for your enquiry",
        purpose=fields.pop("purpose", Purpose.INSTANT),
        call=call,
        **fields,
    )


@pytest.fixture
def world():
    """North (Denver) and East (Tokyo), one organization; a manager of both.

    North on DAY: A (text at 5 s, dial 20 s, agent connected at 60 s); B received at
    23:30 Denver, the next day in UTC (dial at 10 s, a person's text at 300 s); C the
    night before, 23:59 Denver (out of the day). East on DAY: D at 00:10 Tokyo, the day
    before in UTC (dial at 30 s, never reached by a person), and E never touched."""
    group = OrganizationFactory(name="Demo Group")
    north = AccountFactory(organization=group, name="North", timezone="America/Denver")
    east = AccountFactory(organization=group, name="East", timezone="Asia/Tokyo")
    manager = in_role("Global Manager", organizations=[group], email="boss@example.com")
    a = lead(north, datetime(2026, 3, 4, 10, 0, tzinfo=DENVER))
    auto_text(a, 1, status=TextStatus.CANCELED)  # never sent: no touch
    auto_text(a, 5)
    lead_leg(a, dialed=20, answered=60)
    b = lead(north, datetime(2026, 3, 4, 23, 30, tzinfo=DENVER), phone="+13035550148")
    lead_leg(b, dialed=10)
    auto_text(b, 300, purpose=Purpose.REPLY, sent_by=manager)
    c = lead(north, datetime(2026, 3, 3, 23, 59, tzinfo=DENVER), phone="+13035550149")
    lead_leg(c, dialed=1, answered=2)
    d = lead(east, datetime(2026, 3, 4, 0, 10, tzinfo=TOKYO), phone="+13035550150")
    lead_leg(d, dialed=30)
    lead(
        east,
        datetime(2026, 3, 4, 9, 0, tzinfo=TOKYO),
        phone="+13035550151",
        status=CallStatus.NOAGENT,
    )
    return north, east, manager


def rounded(speed: Speed) -> tuple:
    """The figures to the millisecond (percentile_cont's interpolation is a double)."""
    return tuple(
        round(value, 3) if isinstance(value, float) else value
        for value in astuple(speed)
    )


def test_first_touch_and_first_human_on_hand_counted_leads(world):
    north, east, _ = world
    figures = speed_figures(
        accounts=Account.objects.filter(pk__in=[north.pk, east.pk]),
        first=DAY,
        last=DAY,
    )
    # Touched: 5, 10, 30 (E never); by a person: 60, 300.
    # (leads, touched, reached, touch median, touch p90, human median, human p90)
    assert rounded(figures[None]) == (4, 3, 2, 10, 10 + 0.8 * 20, 180, 60 + 0.9 * 240)
    assert rounded(figures[north.pk]) == (2, 2, 2, 7.5, 5 + 0.9 * 5, 180, 276)
    assert figures[east.pk] == Speed(
        leads=2,
        touched=1,
        reached=0,
        touch_median=30,
        touch_p90=30,
        human_median=None,
        human_p90=None,
    )


def test_one_lead_an_automatic_text_at_5_s_and_an_agent_at_60_s(db):
    account = AccountFactory(timezone="America/Denver")
    call = lead(account, datetime(2026, 3, 4, 10, 0, tzinfo=DENVER))
    auto_text(call, 5)
    lead_leg(call, dialed=20, answered=60)

    figures = speed_figures(
        accounts=Account.objects.filter(pk=account.pk), first=DAY, last=DAY
    )[None]

    assert (figures.touch_median, figures.touch_p90) == (5, 5)
    assert (figures.human_median, figures.human_p90) == (60, 60)


def test_each_accounts_day_is_its_own_timezones(world):
    north, _, _ = world
    # The day before holds C alone (23:59 Denver): touched at 1 s, a person at 2 s.
    before = speed_figures(
        accounts=Account.objects.filter(pk=north.pk),
        first=DAY - timedelta(days=1),
        last=DAY - timedelta(days=1),
    )[north.pk]
    assert (before.leads, before.touch_median, before.human_median) == (1, 1, 2)
    # The day after holds nothing: B, 23:30 Denver on DAY, is 06:30 UTC the day after.
    after = speed_figures(
        accounts=Account.objects.filter(pk=north.pk),
        first=DAY + timedelta(days=1),
        last=DAY + timedelta(days=1),
    )
    assert after[None] == Speed(0, 0, 0, None, None, None, None)


def test_the_morning_report_shows_both_numbers_and_the_open_handoffs(world):
    _, east, manager = world
    handoff_open(
        account_id=east.pk,
        phone="+13035550150",
        kind=HandoffKind.NO_AGENT,
        opened_by="call 1",
    )

    report = report_build(user=manager, day=DAY)

    shown = {t.label: (t.now, t.before) for t in report.trend}
    assert shown["First touch, median"] == ("10 s", "—")
    assert shown["First human, median"] == ("180 s", "—")
    assert shown["First touch, 90th pct"] == ("26 s", "—")
    assert shown["First human, 90th pct"] == ("276 s", "—")
    assert "First touch, median" in report.text
    assert "Handoffs waiting for a person now (1, the longest first):" in report.text
    assert "0 min  The call ended NOAGENT: +13035550150 (East)" in report.text
    assert "Handoffs waiting (1)" in report.html
    assert "First human, median" in report.html


def test_a_report_never_shows_another_organizations_handoffs(world):
    north, _, _ = world
    other = AccountFactory(name="Elsewhere", timezone="America/Denver")
    handoff_open(
        account_id=other.pk, phone="+13035550199", kind=HandoffKind.REPLY, opened_by="x"
    )
    manager = in_role("Manager", accounts=[north], email="north@example.com")

    report = report_build(user=manager, day=DAY)

    assert "Handoffs waiting" not in report.text
    assert "+13035550199" not in report.html


def test_the_dashboard_shows_both_numbers_and_who_is_waiting(world, client):
    north, east, manager = world
    waiting = handoff_open(
        account_id=north.pk,
        phone="+13035550148",
        kind=HandoffKind.REPLY,
        opened_by="text 1",
    )
    other = AccountFactory(name="Elsewhere", timezone="America/Denver")
    handoff_open(
        account_id=other.pk, phone="+13035550199", kind=HandoffKind.REPLY, opened_by="x"
    )
    client.force_login(manager)

    response = client.get(
        reverse("pages:dashboard"),
        {"date_from": DAY.isoformat(), "date_to": DAY.isoformat()},
    )

    assert response.status_code == 200
    assert (
        response.context["speed"]
        == speed_figures(
            accounts=Account.objects.filter(pk__in=[north.pk, east.pk]),
            first=DAY,
            last=DAY,
        )[None]
    )
    page = response.content.decode()
    assert '<td class="num" id="speed-touch-median">10 s</td>' in page
    assert '<td class="num" id="speed-human-median">180 s</td>' in page
    assert '<td class="num" id="speed-human-p90">276 s</td>' in page
    assert response.context["handoffs"] == [waiting]
    assert "+13035550199" not in page  # another organization's


def test_the_dashboard_of_one_account_shows_its_numbers_alone(world, client):
    _, east, manager = world
    client.force_login(manager)

    response = client.get(
        reverse("pages:dashboard"),
        {"date_from": DAY.isoformat(), "date_to": DAY.isoformat(), "account": east.pk},
    )

    assert response.status_code == 200
    speed = response.context["speed"]
    assert (speed.leads, speed.touch_median, speed.human_median) == (2, 30, None)


def test_the_leaderboard_ranks_agents_by_first_human(client):
    from tests.users.factories import agent

    account = AccountFactory(name="North", timezone="America/Denver")
    x = agent(account, phone="+13035551001", first_name="Xan", last_name="Lee")
    y = agent(account, phone="+13035551002", first_name="Yara", last_name="Ng")
    z = agent(account, phone="+13035551003", first_name="Zed", last_name="Ro")
    noon = datetime(2026, 3, 4, 12, 0, tzinfo=DENVER)
    for n, (taker, human) in enumerate([(x, 60), (x, 120), (y, 30), (z, None)]):
        call = lead(
            account, noon + timedelta(minutes=n), phone=f"+1303555020{n}", agent=taker
        )
        lead_leg(call, dialed=10, answered=human)
    lead(account, noon, phone="+13035550299", agent=None)  # nobody took it
    manager = in_role("Manager", accounts=[account], email="boss@north.example")
    client.force_login(manager)

    response = client.get(
        reverse("pages:dashboard"),
        {"date_from": DAY.isoformat(), "date_to": DAY.isoformat()},
    )

    assert response.status_code == 200
    assert [
        (a["rank"], a["name"], a["human_median"], a["reached"], a["leads"])
        for a in response.context["leaderboard"]
    ] == [
        (1, "Yara Ng", 30, 1, 1),
        (2, "Xan Lee", 90, 2, 2),
        (3, "Zed Ro", None, 0, 1),
    ]
    assert "Ranked by first human" in response.content.decode()
