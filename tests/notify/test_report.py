"""The morning report's content: the dashboard's figures for the day and the same weekday
a week before, per account and per agent, the calls worth coaching, charts and links; for
the accounts the user coaches and no other."""

from __future__ import annotations

import base64
import io
import re
from dataclasses import dataclass
from datetime import date, datetime, timedelta
from zoneinfo import ZoneInfo

import pytest
from django.conf import settings
from django.contrib.auth.models import Group
from django.core.management import CommandError, call_command
from django.db import connection
from django.test.utils import CaptureQueriesContext
from django.urls import reverse
from PIL import Image

from accounts.models import Account
from appointments.models import Actor, Status
from appointments.services import appointment_change, appointment_set_for_call
from calls.models import AttemptOutcome, Call, CallAttempt, CallStatus, Leg
from notify.models import Message, MessageKind, MessageStatus
from notify.report import report_build, trend_rows
from scoring.figures import Figures, dashboard_figures
from scoring.services import score_save
from tests.accounts.factories import AccountFactory, OrganizationFactory
from tests.scoring.factories import CallFactory, in_role
from users.models import User

pytestmark = pytest.mark.django_db

DAY = date(2026, 3, 4)  # a Wednesday
WEEK_BEFORE = DAY - timedelta(days=7)
DENVER = ZoneInfo("America/Denver")
NOON = datetime(2026, 3, 4, 12, 0, tzinfo=DENVER)


@dataclass
class World:
    north: Account  # Demo Group, America/Denver
    south: Account  # Demo Group, America/New_York
    foreign: Account  # another organization
    manager: User  # North only, in Los Angeles
    global_manager: User  # Demo Group, in New York
    foreign_manager: User
    day_calls: list[Call]  # North's calls of DAY


def _attempt(call: Call, agent: User, outcome: str) -> None:
    CallAttempt.objects.create(
        call=call,
        leg=Leg.AGENT,
        agent=agent,
        number=agent.phone_number,
        provider="simulator",
        outcome=outcome,
    )


def make_world() -> World:
    """North: six leads on DAY (responses 10, 20, 40, 90, 400 s and a NOAGENT), three a week
    before (30 and 50 s and a NOAGENT), one the day before; South two on DAY; the foreign
    account four on DAY."""
    group = OrganizationFactory(name="Demo Group")
    north = AccountFactory(organization=group, name="North", timezone="America/Denver")
    south = AccountFactory(
        organization=group, name="South", timezone="America/New_York"
    )
    foreign = AccountFactory(name="Elsewhere", timezone="America/Denver")
    avery = in_role("Agent", accounts=[north], first_name="Avery", last_name="Lopez")
    jordan = in_role("Agent", accounts=[north], first_name="Jordan", last_name="Kim")
    manager = in_role(
        "Manager",
        accounts=[north],
        first_name="Morgan",
        last_name="Reyes",
        timezone="America/Los_Angeles",
    )
    global_manager = in_role(
        "Global Manager", organizations=[group], email="gale@example.com"
    )
    global_manager.timezone = "America/New_York"
    global_manager.save(update_fields=["timezone"])
    foreign_manager = in_role("Manager", accounts=[foreign], first_name="Fran")
    scorer = User.objects.create_user(username="scorer@example.com", is_staff=True)

    day_calls = [
        CallFactory(
            account=north,
            agent=avery,
            source="Web",
            first_name="Lead",
            last_name=f"North{n}",
            received_at=NOON + timedelta(minutes=10 * n),
            response_time=response,
        )
        for n, response in enumerate([10, 20, 40, 90, 400])
    ]
    day_calls.append(
        CallFactory(
            account=north,
            status=CallStatus.NOAGENT,
            response_time=None,
            recording_url="",
            last_name="NorthNoAgent",
            received_at=NOON.replace(hour=19),
        )
    )
    for call in day_calls[:3]:
        _attempt(call, avery, AttemptOutcome.ACCEPTED)
    _attempt(day_calls[3], jordan, AttemptOutcome.REFUSED)
    score_save(
        call=day_calls[0],
        scorer=scorer,
        values={
            "cat1": True,
            "cat2": True,
            "cat3": True,
            "wow": True,
            "appointment_date": "2026-03-06",
        },
    )
    score_save(
        call=day_calls[1], scorer=scorer, values={"cat1": True, "alert": "Hot lead"}
    )
    score_save(call=day_calls[2], scorer=scorer, values={})  # nothing applied
    for minutes, response, status in [
        (0, 30, CallStatus.ANSWER),
        (5, 50, CallStatus.ANSWER),
        (9, None, CallStatus.NOAGENT),
    ]:
        CallFactory(
            account=north,
            agent=avery if response else None,
            status=status,
            response_time=response,
            received_at=NOON - timedelta(days=7) + timedelta(minutes=minutes),
        )
    CallFactory(account=north, received_at=NOON - timedelta(days=1), response_time=5)
    for n in range(2):
        CallFactory(
            account=south,
            last_name=f"South{n}",
            received_at=datetime(
                2026, 3, 4, 10 + n, tzinfo=ZoneInfo("America/New_York")
            ),
            response_time=15 + 85 * n,
        )
    for n in range(4):
        call = CallFactory(
            account=foreign,
            last_name=f"Foreign{n}",
            received_at=NOON + timedelta(minutes=n),
            response_time=5,
        )
        score_save(call=call, scorer=scorer, values={"alert": "Manager follow-up"})
    return World(
        north, south, foreign, manager, global_manager, foreign_manager, day_calls
    )


@pytest.fixture
def world() -> World:
    return make_world()


def _dashboard_link(text: str) -> str:
    found = re.search(r"The dashboard for the day: (\S+)", text)
    assert found, text
    assert found[1].startswith(settings.PUBLIC_BASE_URL)
    return found[1].removeprefix(settings.PUBLIC_BASE_URL)


FIELDS = ("received", "answered", "median", "p90", "within", "answer_rate", "noagent")


@pytest.mark.parametrize("who", ["manager", "global_manager", "foreign_manager"])
def test_the_reports_figures_are_the_dashboards_through_its_link(world, client, who):
    user = getattr(world, who)
    report = report_build(user=user, day=DAY)
    client.force_login(user)
    # The report's own link opens the dashboard on the day reported.
    response = client.get(_dashboard_link(report.text))
    assert response.status_code == 200
    page = response.context["f"]
    assert (page.first, page.last) == (DAY, DAY)
    for name in FIELDS:
        assert getattr(report.figures, name) == getattr(page, name), name
    assert report.figures.agents == page.agents
    # And the parts show them.
    shown = {t.label: t.now for t in report.trend}
    assert shown["Leads"] == str(page.received)
    assert shown["Answered"] == str(page.answered)
    assert shown["Median response"] == f"{page.median:.0f} s"
    assert shown["90th percentile response"] == f"{page.p90:.0f} s"
    assert shown["Connected within 60 s"] == f"{dict(page.within)['60 s']:.0f}%"
    assert shown["Ended NOAGENT"] == str(page.noagent)
    assert re.search(rf"Leads\s+{page.received}\s+last week", report.text)
    assert f"<b>{page.received}</b>" in report.html


def test_the_figures_of_the_day(world):
    report = report_build(user=world.manager, day=DAY)
    f = report.figures
    assert (f.received, f.answered, f.noagent, f.median) == (6, 5, 1, 40)
    assert f.p90 == pytest.approx(90 + 0.6 * 310)
    assert report.subject == (
        "Morning report, Wed 4 Mar (North): 6 leads, 5 answered, median response 40 s"
    )
    assert "Morning report for Wednesday 4 March 2026: North" in report.text


def test_the_trend_against_the_same_weekday_last_week(world):
    report = report_build(user=world.manager, day=DAY)
    assert report.before.first == WEEK_BEFORE
    assert [
        (t.label, t.now, t.before, t.change, t.arrow, t.better) for t in report.trend
    ] == [
        ("Leads", "6", "3", "+3", "▲", True),
        ("Answered", "5", "2", "+3", "▲", True),
        ("Answer rate", "83%", "67%", "+16 pts", "▲", True),
        ("Median response", "40 s", "40 s", "0 s", "=", None),
        ("90th percentile response", "276 s", "48 s", "+228 s", "▲", False),
        ("Connected within 60 s", "50%", "67%", "-17 pts", "▼", False),
        ("Ended NOAGENT", "1", "1", "0", "=", None),
        # No appointment was set (a score's date without a time sets none).
        ("Appointments set per answered lead", "0%", "0%", "0 pts", "=", None),
        ("Appointments kept (show rate)", "—", "—", "", "", None),
        ("No-show rate", "—", "—", "", "", None),
        # No text or dial of the lead's leg is recorded here (tests/handoffs has them).
        ("First touch, median", "—", "—", "", "", None),
        ("First human, median", "—", "—", "", "", None),
        ("First touch, 90th pct", "—", "—", "", "", None),
        ("First human, 90th pct", "—", "—", "", "", None),
    ]
    assert "Against the same day last week (Wed 25 Feb):" in report.text
    assert re.search(r"Leads\s+6\s+last week\s+3\s+▲ \+3", report.text)
    # Worse in red, better in green.
    assert re.search(r"color:#b42318\">\s*▲ \+228 s", report.html)
    assert re.search(r"color:#1b7f3b\">\s*▲ \+3", report.html)


def test_appointment_rates_and_the_outcomes_nobody_marked(world):
    first, second = world.day_calls[0], world.day_calls[2]
    kept = appointment_set_for_call(
        call=first, starts_at=NOON + timedelta(hours=3), by=Actor.AGENT
    )
    appointment_change(appointment=kept, to=Status.KEPT, by=Actor.MANAGER)
    appointment_set_for_call(
        call=second, starts_at=NOON + timedelta(hours=5), by=Actor.AGENT
    )

    report = report_build(user=world.manager, day=DAY)

    rows = {t.label: (t.now, t.before, t.change) for t in report.trend}
    assert rows["Appointments set per answered lead"] == ("40%", "0%", "+40 pts")
    assert rows["Appointments kept (show rate)"] == ("50%", "—", "")
    assert rows["No-show rate"] == ("0%", "—", "")
    lead = f"{second.first_name} {second.last_name}"
    url = settings.PUBLIC_BASE_URL + reverse("pages:call-detail", args=[second.pk])
    assert f"17:00 {lead}" in report.text
    assert url in report.text
    assert 'id="outcome-missing"' in report.html
    assert (
        f"{first.first_name} {first.last_name}"
        not in report.text.split("outcome missing")[1]
    )


def test_per_agent_offered_answered_score_and_appointments(world):
    report = report_build(user=world.manager, day=DAY)
    assert "Avery Lopez: 3 offered, 5 answered, 1.3 average score, 1 appointment" in (
        report.text
    )
    assert "Jordan Kim: 1 offered, 0 answered, — average score, 0 appointments" in (
        report.text
    )
    assert "<td>Avery Lopez</td>" in report.html


def test_the_calls_worth_coaching_link_to_their_pages(world):
    report = report_build(user=world.manager, day=DAY)
    hot = world.day_calls[1]
    url = settings.PUBLIC_BASE_URL + reverse("pages:call-detail", args=[hot.pk])
    # The alert first, then the lowest scores; unscored calls are not listed.
    assert [c["lead"] for c in report.coaching] == [
        "Lead North1",
        "Lead North2",
        "Lead North0",
    ]
    assert [(c["applied"], c["alert"]) for c in report.coaching] == [
        (1, "Hot lead"),
        (0, ""),
        (3, ""),
    ]
    assert report.coaching[0]["url"] == url
    assert f"{url}\n" in report.text
    assert f'href="{url}"' in report.html
    assert "Hot lead" in report.html


def test_at_most_ten_calls_worth_coaching_alerts_and_lowest_shared(world):
    scorer = User.objects.get(username="scorer@example.com")
    for n in range(12):
        call = CallFactory(
            account=world.north, received_at=NOON + timedelta(minutes=n, seconds=30)
        )
        score_save(
            call=call,
            scorer=scorer,
            values={"alert": "Unhappy customer", "cat1": True, "cat2": True}
            if n % 2
            else {"cat1": True},
        )
    coaching = report_build(user=world.manager, day=DAY).coaching
    assert len(coaching) == 10
    tagged = [c for c in coaching if c["alert"]]
    assert len(tagged) >= 5
    assert min(c["applied"] for c in coaching) == 0


def test_a_global_manager_gets_every_account_of_the_organization_and_no_other(world):
    report = report_build(user=world.global_manager, day=DAY)
    assert report.figures.received == 8
    assert [a["name"] for a in report.accounts] == ["North", "South"]
    for row, account in zip(report.accounts, [world.north, world.south], strict=True):
        own = dashboard_figures(
            user=world.global_manager, first=DAY, last=DAY, account=account
        )
        assert (row["received"], row["answered"], row["noagent"]) == (
            own.received,
            own.answered,
            own.noagent,
        )
        assert row["median"] == f"{own.median:.0f} s"
        assert row["url"].endswith(f"&account={account.pk}")
    assert [a["before"] for a in report.accounts] == [3, 0]
    assert "(2 accounts)" in report.subject
    for part in (report.text, report.html):
        assert "Foreign" not in part
        assert "Elsewhere" not in part
        assert "South: 2, 2, 100%, 58 s, 50%, 0; 0" in report.text


def test_a_manager_gets_their_account_only(world):
    report = report_build(user=world.manager, day=DAY)
    assert report.accounts == []
    for part in (report.text, report.html):
        assert "South" not in part
        assert "Foreign" not in part


def test_another_organizations_manager_never_sees_ours(world):
    report = report_build(user=world.foreign_manager, day=DAY)
    assert report.figures.received == 4
    assert [c["alert"] for c in report.coaching] == ["Manager follow-up"] * 4
    for part in (report.text, report.html):
        assert "North" not in part
        assert "South" not in part
        assert "Avery" not in part


def test_the_charts_are_inline_pngs_the_html_shows_with_alt_text(world):
    report = report_build(user=world.manager, day=DAY)
    assert [image["cid"] for image in report.images] == [
        "hours-2026-03-04.png",
        "responses-2026-03-04.png",
    ]
    for image in report.images:
        assert image["subtype"] == "png"
        picture = Image.open(io.BytesIO(base64.b64decode(image["data"])))
        assert picture.format == "PNG"
        assert picture.size == (1120, 400)
        tag = re.search(rf'<img src="cid:{re.escape(image["cid"])}"[^>]*>', report.html)
        assert tag
        assert 'alt="' in tag[0]
        assert 'width="560"' in tag[0]
    # The hour chart's alt text carries the figures (local hours of the manager: LA).
    assert "11h 5 (5)" in report.html
    assert "<style" not in report.html
    assert "<svg" not in report.html


def test_a_share_one_point_up_reads_1_pt():
    now = Figures(first=DAY, last=DAY, answer_rate=51.0, within=[("60 s", 50.0)])
    before = Figures(first=DAY, last=DAY, answer_rate=50.0, within=[("60 s", 50.0)])
    changes = {t.label: t.change for t in trend_rows(now, before)}
    assert (changes["Answer rate"], changes["Connected within 60 s"]) == (
        "+1 pt",
        "0 pts",
    )


def test_a_day_of_one_lead_says_1_lead(world):
    report = report_build(user=world.manager, day=DAY - timedelta(days=1))
    assert report.subject == (
        "Morning report, Tue 3 Mar (North): 1 lead, 1 answered, median response 5 s"
    )
    # A week on, a day without leads compares with it.
    quiet = report_build(user=world.manager, day=DAY + timedelta(days=6))
    assert "Same day last week (Tue 3 Mar): 1 lead, 1 answered." in quiet.text
    assert "Same day last week (Tue 3 Mar): 1 lead, 1 answered." in quiet.html
    for part in (report.subject, report.text, report.html, quiet.text, quiet.html):
        assert "1 leads" not in part


def test_a_day_without_calls_still_reports_so(world):
    quiet = DAY + timedelta(days=14)
    report = report_build(user=world.manager, day=quiet)
    assert report.subject == "Morning report, Wed 18 Mar (North): no leads"
    assert "No leads came in on Wednesday 18 March." in report.text
    assert "Same day last week (Wed 11 Mar): 0 leads, 0 answered." in report.text
    assert report.images == []
    assert "<img" not in report.html
    assert _dashboard_link(report.text).endswith(
        "?date_from=2026-03-18&date_to=2026-03-18"
    )


def test_the_command_prints_the_report_or_stores_it_once(
    world, django_capture_on_commit_callbacks
):
    out = io.StringIO()
    call_command(
        "morning_report",
        "--user",
        world.manager.email,
        "--day",
        "2026-03-04",
        stdout=out,
    )
    assert out.getvalue().startswith("Subject: Morning report, Wed 4 Mar (North)")
    assert "Avery Lopez: 3 offered" in out.getvalue()
    assert not Message.objects.filter(kind=MessageKind.REPORT).exists()

    call_command(
        "morning_report",
        "--user",
        world.manager.email.upper(),
        "--day",
        "2026-03-04",
        "--send",
        stdout=io.StringIO(),
    )
    message = Message.objects.get(kind=MessageKind.REPORT)
    assert message.key == f"report:{world.manager.pk}:2026-03-05"
    assert message.recipients == [world.manager.email]
    assert message.account == world.north
    assert message.user == world.manager
    assert len(message.images) == 2
    # Already stored (as by the scheduler's 07:00 run): said plainly, not an error.
    again = io.StringIO()
    call_command(
        "morning_report",
        "--user",
        world.manager.email,
        "--day",
        "2026-03-04",
        "--send",
        stdout=again,
    )
    assert again.getvalue().startswith(
        f"The report of 2026-03-04 for {world.manager.email} was already stored"
    )
    assert f"message {message.pk}, " in again.getvalue()
    assert "add --again" in again.getvalue()
    assert '"Send again"' in again.getvalue()
    assert Message.objects.filter(kind=MessageKind.REPORT).count() == 1
    Message.objects.filter(pk=message.pk).update(status=MessageStatus.SENT, attempts=1)
    with django_capture_on_commit_callbacks() as sent:
        call_command(
            "morning_report",
            "--user",
            world.manager.email,
            "--day",
            "2026-03-04",
            "--send",
            "--again",
            stdout=again,
        )
    assert f"Sending message {message.pk} " in again.getvalue()
    message.refresh_from_db()
    assert (message.status, message.attempts) == (MessageStatus.PENDING, 0)
    assert len(sent) == 1  # handed to a worker once the command's transaction commits
    assert Message.objects.filter(kind=MessageKind.REPORT).count() == 1
    with pytest.raises(CommandError, match="No users"):
        call_command("morning_report", "--user", "nobody@example.com")
    agent = User.objects.filter(groups=Group.objects.get(name="Agent")).first()
    assert agent is not None
    with pytest.raises(CommandError, match="coaches no account"):
        call_command("morning_report", "--user", agent.email)


def test_the_queries_do_not_grow_with_agents_calls_or_scores(world):
    def queries() -> int:
        with CaptureQueriesContext(connection) as captured:
            report_build(user=User.objects.get(pk=world.global_manager.pk), day=DAY)
        return len(captured)

    before = queries()
    scorer = User.objects.get(username="scorer@example.com")
    for n in range(5):
        agent = in_role("Agent", accounts=[world.south], first_name=f"New{n}")
        call = CallFactory(
            account=world.south, agent=agent, received_at=NOON + timedelta(minutes=n)
        )
        _attempt(call, agent, AttemptOutcome.ACCEPTED)
        score_save(call=call, scorer=scorer, values={"alert": "Hot lead"})
    assert report_build(user=world.global_manager, day=DAY).figures.received == 13
    assert queries() == before
