"""The speed-to-lead dashboard: each figure from aggregate queries, for the accounts the
manager may see and the date range asked for."""

from __future__ import annotations

import re
from datetime import date, datetime, timedelta
from itertools import pairwise
from zoneinfo import ZoneInfo

import pytest
from django.db.models import QuerySet
from django.urls import reverse
from django.utils import timezone

from appointments.models import Actor, Status
from appointments.services import appointment_change, appointment_set_for_call
from calls.models import AttemptOutcome, Call, CallAttempt, CallStatus, Leg
from scoring.figures import percentiles
from scoring.services import score_save, scorecard_create_default
from tests.accounts.factories import AccountFactory
from tests.scoring.factories import CallFactory, in_role

pytestmark = pytest.mark.django_db

DAY = date(2026, 3, 4)
NOON = datetime(2026, 3, 4, 12, 0, tzinfo=ZoneInfo("America/Denver"))


@pytest.fixture
def calls(world):
    """Six calls on one day at North: response times 10, 20, 40, 90, 400 s and a NOAGENT."""
    made = []
    for minutes, response, source in [
        (0, 10, "Cars.com"),
        (10, 20, "Cars.com"),
        (20, 40, "Web"),
        (30, 90, "Web"),
        (40, 400, "Web"),
    ]:
        made.append(
            CallFactory(
                account=world.north,
                agent=world.agent,
                source=source,
                received_at=NOON + timedelta(minutes=minutes),
                response_time=response,
            )
        )
    made.append(
        CallFactory(
            account=world.north,
            status=CallStatus.NOAGENT,
            response_time=None,
            received_at=NOON.replace(hour=19),
            recording_url="",
            source="Web",
        )
    )
    for call in made[:3]:
        CallAttempt.objects.create(
            call=call,
            leg=Leg.AGENT,
            agent=world.agent,
            number="1",
            provider="simulator",
            outcome=AttemptOutcome.ACCEPTED,
        )
    CallAttempt.objects.create(
        call=made[3],
        leg=Leg.AGENT,
        agent=world.other_agent,
        number="2",
        provider="simulator",
        outcome=AttemptOutcome.REFUSED,
    )
    score_save(
        call=made[0],
        scorer=world.scorer,
        values={
            "cat1": True,
            "cat2": True,
            "wow": True,
            "appointment_date": "2026-03-06",
        },
    )
    score_save(call=made[1], scorer=world.scorer, values={"cat1": True})
    return made


def figures(client, **params):
    response = client.get(
        reverse("pages:dashboard"), {"date_from": DAY, "date_to": DAY, **params}
    )
    assert response.status_code == 200
    return response.context["f"]


def test_speed_to_lead_figures(world, calls, signed_in):
    f = figures(signed_in(world.manager))
    assert (f.received, f.answered, f.noagent) == (6, 5, 1)
    assert f.median == 40
    assert f.p90 == pytest.approx(90 + 0.6 * 310)
    assert f.within == [
        ("30 s", 100 * 2 / 6),
        ("60 s", 100 * 3 / 6),
        ("5 min", 100 * 4 / 6),
    ]
    assert f.answer_rate == pytest.approx(100 * 5 / 6)
    by_hour = {bar.label: bar.value for bar in f.noagent_by_hour}
    assert by_hour["19"] == 1
    assert sum(by_hour.values()) == 1


def test_appointment_rates_overall_by_agent_and_by_source(world, calls, signed_in):
    kept = appointment_set_for_call(
        call=calls[0], starts_at=NOON + timedelta(hours=3), by=Actor.AGENT
    )
    appointment_change(appointment=kept, to=Status.KEPT, by=Actor.MANAGER)
    appointment_set_for_call(
        call=calls[2], starts_at=NOON + timedelta(hours=4), by=Actor.AGENT
    )
    response = signed_in(world.manager).get(
        reverse("pages:dashboard"), {"date_from": DAY, "date_to": DAY}
    )

    rows = response.context["appointments"]
    now, before = rows["overall"]
    assert (now["answered"], now["set"], now["due"], now["kept"]) == (5, 2, 2, 1)
    assert (now["set_rate"], now["show_rate"], now["missing"]) == (40, 50, 1)
    assert before["label"] == "2026-03-03 to 2026-03-03"
    assert before["set_rate"] is None
    (agent,) = rows["agents"]
    assert (agent["label"], agent["set"]) == (world.agent.get_full_name(), 2)
    assert agent["was"] == {"set_rate": None, "show_rate": None, "no_show_rate": None}
    sources = {row["label"]: row for row in rows["sources"]}
    assert (sources["Cars.com"]["set"], sources["Web"]["set"]) == (1, 1)
    assert rows["accounts"] == []  # one account: the overall rows say it
    body = response.content.decode()
    assert 'id="appointment-figures"' in body
    assert ">40%" in body
    assert "By account" not in body


def test_appointment_rates_by_agent_source_and_account_beside_the_day_before(
    world, calls, day_before, signed_in
):
    # The day before: one of Avery's two answered leads set, and kept (set 50 %, show
    # 100 %); today: one of five set, a no-show (set 20 %, show 0 %). South: one answered
    # lead, nothing set, both days.
    then = appointment_set_for_call(
        call=day_before[0], starts_at=NOON - timedelta(hours=20), by=Actor.AGENT
    )
    appointment_change(appointment=then, to=Status.KEPT, by=Actor.MANAGER)
    now = appointment_set_for_call(
        call=calls[1], starts_at=NOON + timedelta(hours=2), by=Actor.AGENT
    )
    appointment_change(appointment=now, to=Status.NO_SHOW, by=Actor.MANAGER)
    CallFactory(account=world.south, agent=None, received_at=NOON, source="Web")
    CallFactory(account=world.foreign, received_at=NOON, source="Elsewhere.com")

    response = signed_in(world.global_manager).get(
        reverse("pages:dashboard"), {"date_from": DAY, "date_to": DAY}
    )

    rows = response.context["appointments"]
    rates = lambda row: (row["set_rate"], row["show_rate"], row["was"])  # noqa: E731
    (avery,) = [row for row in rows["agents"] if row["label"] == "Avery Lopez"]
    assert rates(avery) == (
        20,
        0,
        {"set_rate": 50, "show_rate": 100, "no_show_rate": 0},
    )
    accounts = {row["label"]: rates(row) for row in rows["accounts"]}
    assert accounts == {
        "North": (20, 0, {"set_rate": 50, "show_rate": 100, "no_show_rate": 0}),
        "South": (0, None, {"set_rate": None, "show_rate": None, "no_show_rate": None}),
    }
    sources = {row["label"]: rates(row) for row in rows["sources"]}
    assert sources["Cars.com"] == (
        50,
        0,
        {"set_rate": None, "show_rate": None, "no_show_rate": None},
    )
    assert "Elsewhere.com" not in sources  # another organization's
    body = response.content.decode()
    assert "By account" in body
    assert "was 50%" in body
    assert "Elsewhere" not in body


def test_per_agent_per_source_per_category_and_per_day(world, calls, signed_in):
    f = figures(signed_in(world.manager))
    agents = {row["name"]: row for row in f.agents}
    assert agents["Avery Lopez"] == {
        "pk": world.agent.pk,
        "name": "Avery Lopez",
        "offered": 3,
        "accepted": 3,
        "offered_calls": 3,
        "answered_offered": 3,
        "answer_rate": 100.0,
        "median_response": 40.0,  # of 10, 20, 40, 90 and 400 s
        "answered": 5,
        "scored": 2,
        "avg_score": 1.5,
        "appointments": 1,
        "wow": 1,
        "rank": 1,
    }
    assert agents["Jordan Kim"]["offered"] == 1
    assert agents["Jordan Kim"]["accepted"] == 0
    sources = {row["label"]: (row["received"], row["answered"]) for row in f.sources}
    assert sources == {"Web": (4, 3), "Cars.com": (2, 2)}
    shares = {slot: share for slot, _, share in f.categories}
    assert shares[1] == 100
    assert shares[2] == 50
    assert shares[3] == 0
    # Named as the call browser names them: the name every scorecard in view gives it.
    assert f.categories[0][1] == "1. Greeted the customer by name"
    assert [(row["day"], row["received"], row["answered"]) for row in f.trend_rows] == [
        (DAY, 6, 5)
    ]


def test_the_range_and_the_account_narrow_the_figures(world, calls, signed_in):
    gm = signed_in(world.global_manager)
    CallFactory(account=world.south, received_at=NOON)
    CallFactory(
        account=world.foreign, received_at=NOON
    )  # another organization: never counted
    CallFactory(account=world.north, received_at=NOON - timedelta(days=1))
    assert figures(gm).received == 7
    assert figures(gm, account=world.south.pk).received == 1
    assert (
        figures(gm, account=world.foreign.pk).received == 7
    )  # not a choice: the form ignores it
    assert figures(gm, date_from=DAY - timedelta(days=1)).received == 8
    assert figures(signed_in(world.manager)).received == 6


def test_categories_named_differently_by_two_accounts_show_both_names(
    world, calls, signed_in
):
    # The global manager sees North (named by its first score) and South, whose scorecard
    # calls slot 1 something else: the table gives both names, never "Category 1".
    south = scorecard_create_default(account=world.south)
    south.categories.filter(slot=1).update(name="Said hello")
    f = figures(signed_in(world.global_manager))
    assert f.categories[0][1] == "1. Greeted the customer by name / Said hello"
    assert f.categories[1][1] == "2. Introduced self and dealership"
    page = (
        signed_in(world.global_manager).get(reverse("pages:dashboard")).content.decode()
    )
    assert "1. Greeted the customer by name / Said hello" in page
    assert "Category 1" not in page


def test_an_empty_range_shows_dashes_not_errors(world, signed_in):
    f = figures(signed_in(world.manager))
    assert (f.received, f.median, f.p90, f.answer_rate) == (0, None, None, None)


@pytest.mark.parametrize(
    "params",
    [
        {"date_to": "9999-12-31"},
        {"date_from": "9999-12-31", "date_to": "9999-12-31"},
        {"date_to": "0001-01-01"},
        {"date_from": "0001-01-01", "date_to": "0001-01-07"},
    ],
)
def test_a_date_at_the_end_of_the_calendar_is_a_form_error(world, signed_in, params):
    """The refused days are shown as errors and left out: the last seven days are shown."""
    response = signed_in(world.manager).get(reverse("pages:dashboard"), params)
    assert response.status_code == 200
    form = response.context["form"]
    refused = {name for name, value in params.items() if value[:4] in ("0001", "9999")}
    assert form.errors == {
        name: ["Enter a date between 1900-01-01 and 9998-12-31."] for name in refused
    }
    assert 'id="id_date_to-error">Enter a date between 1900-01-01 and 9998-12-31.<' in (
        response.content.decode()
    )
    f = response.context["f"]
    # Today where the manager is (the page speaks their timezone): after midnight UTC and
    # before midnight in Denver the two differ.
    today = timezone.localdate(timezone=ZoneInfo(world.manager.timezone or "UTC"))
    assert (f.first, f.last) == (today - timedelta(days=6), today)
    assert f.received == 2  # North's two calls of the last few hours


def test_percentiles_interpolate_like_percentile_cont_on_any_database(
    world, calls, settings
):
    from django.db import connection

    north: QuerySet[Call] = Call.objects.filter(
        account=world.north, received_at__range=(NOON, NOON + timedelta(hours=1))
    )
    on_postgres = percentiles(north, "response_time", (0.5, 0.9))
    vendor = connection.vendor
    try:
        connection.vendor = "sqlite"  # the fallback: rows at the rank, by OFFSET
        fallback = percentiles(north, "response_time", (0.5, 0.9))
    finally:
        connection.vendor = vendor
    assert on_postgres == pytest.approx([40, 276]), on_postgres
    assert fallback == pytest.approx([40, 276]), fallback


@pytest.mark.parametrize("extra", [0, 30])
def test_the_dashboard_costs_the_same_queries_however_many_calls(
    world, calls, signed_in, extra, django_assert_max_num_queries
):
    for n in range(extra):
        CallFactory(
            account=world.north,
            agent=world.other_agent,
            received_at=NOON,
            source=f"S{n}",
        )
    client = signed_in(world.manager)
    # 19 (the two speed numbers overall and per agent in one) and the appointment
    # figures' 8: the accounts' timezones, three queries for the range (overall, by agent,
    # source and account at once), three for the period before, and the agents' names;
    # with issue 39's rollup, where each account's rollup reaches and its stale marks,
    # for the speed numbers and each period's appointments, and the rollup's rows where
    # it holds days (a query or two a period, in place of the data's).
    with django_assert_max_num_queries(29):
        figures(client)


def test_hours_are_the_viewers_even_in_a_zone_half_an_hour_off_utc(
    world, calls, signed_in
):
    world.manager.timezone = (
        "Asia/Kolkata"  # UTC+5:30: hours are cut in SQL, not in UTC
    )
    world.manager.save(update_fields=["timezone"])
    f = figures(signed_in(world.manager))
    by_hour = {bar.label: bar.value for bar in f.noagent_by_hour}
    assert by_hour["07"] == 1
    assert sum(by_hour.values()) == 1
    # Noon in Denver is 00:30 the next day in India: every call falls on the 5th there
    # (the day of the range stays, with no leads).
    assert [(row["day"], row["received"]) for row in f.trend_rows] == [
        (DAY, 0),
        (DAY + timedelta(days=1), 6),
    ]


def test_the_charts_are_svg_with_at_most_eight_labels(world, calls, signed_in):
    body = signed_in(world.manager).get(reverse("pages:dashboard")).content.decode()
    hours = body.split('aria-label="Calls ending with no agent available, by hour"')[1]
    hours = hours.split("</svg>")[0]
    assert hours.count('<rect class="bar"') == 24
    assert hours.count('<text class="label"') == 8


def _chart(body: str, caption: str) -> str:
    """The SVG of the chart named ``caption``, from its opening tag."""
    start = body.index(f'aria-label="{caption}"')
    return body[body.rindex("<svg", 0, start) : body.index("</svg>", start)]


TICK = re.compile(
    r'<text class="tick" x="-3" y="([\d.]+)" text-anchor="end"'
    r' dominant-baseline="middle">(\d+)</text>'
)


def test_the_charts_value_axis_reads_round_numbers_up_to_the_tallest_bar(
    world, calls, signed_in
):
    body = (
        signed_in(world.manager)
        .get(reverse("pages:dashboard"), {"date_from": DAY, "date_to": DAY})
        .content.decode()
    )
    # 6 leads and 5 answered on the day: gridlines at 0, 2, 4 and 6, each labelled at
    # its height (bars stand from y 110 up to 10), the day's bars measured against them.
    trend = _chart(body, "Leads received and answered per day")
    assert TICK.findall(trend) == [
        ("110.0", "0"),
        ("76.7", "2"),
        ("43.3", "4"),
        ("10.0", "6"),
    ]
    assert trend.count('<line class="grid" x1="0" x2="300"') == 4
    assert "<desc>Value axis from 0 to 6.</desc>" in trend
    assert 'y="10.0" width="24.00" height="100.0"><title>03-04: 6</title>' in trend
    assert 'y="26.7" width="24.00" height="83.3"></rect>' in trend  # answered
    # One NOAGENT call in an hour: 0 and 1.
    hours = _chart(body, "Calls ending with no agent available, by hour")
    assert TICK.findall(hours) == [("110.0", "0"), ("10.0", "1")]


# Wider than a sans-serif digit or hyphen at the charts' 6 px (static/css/site.css).
CHARACTER_WIDTH = 0.6 * 6


@pytest.mark.parametrize(
    ("days", "last_label"),
    # 31 days label their last, under the bar at the chart's right edge.
    [(1, "03-04"), (7, "03-04"), (30, "03-02"), (31, "03-04"), (365, "02-09")],
)
def test_every_label_of_the_leads_per_day_chart_fits_inside_it(
    world, signed_in, days, last_label
):
    body = (
        signed_in(world.manager)
        .get(
            reverse("pages:dashboard"),
            {"date_from": DAY - timedelta(days=days - 1), "date_to": DAY},
        )
        .content.decode()
    )
    trend = _chart(body, "Leads received and answered per day")
    found = re.search(r'viewBox="([-\d.]+) 0 ([\d.]+) 130"', trend)
    assert found is not None
    left, width = float(found[1]), float(found[2])
    labels = re.findall(
        r'<text class="label" x="([\d.]+)" y="122" text-anchor="middle">([^<]+)</text>',
        trend,
    )
    assert 1 <= len(labels) <= 12
    assert labels[-1][1] == last_label
    spans = [
        (
            float(x) - len(text) * CHARACTER_WIDTH / 2,
            float(x) + len(text) * CHARACTER_WIDTH / 2,
        )
        for x, text in labels
    ]
    assert left <= spans[0][0], spans
    assert spans[-1][1] <= left + width, spans
    assert all(a[1] <= b[0] for a, b in pairwise(spans)), spans  # apart
    # The value axis' labels, right-aligned before the bars, fit on the left.
    ticks = TICK.findall(trend)
    assert ticks
    assert all(-3 - len(text) * CHARACTER_WIDTH >= left for _, text in ticks)


def test_every_day_of_the_range_has_a_row_and_a_bar_with_zeros(world, calls, signed_in):
    client = signed_in(world.manager)
    response = client.get(
        reverse("pages:dashboard"),
        {"date_from": DAY - timedelta(days=2), "date_to": DAY + timedelta(days=1)},
    )
    f = response.context["f"]
    assert [(row["day"], row["received"], row["answered"]) for row in f.trend_rows] == [
        (DAY - timedelta(days=2), 0, 0),
        (DAY - timedelta(days=1), 0, 0),
        (DAY, 6, 5),
        (DAY + timedelta(days=1), 0, 0),
    ]
    assert [bar.value for bar in f.trend] == [0, 0, 6, 0]
    table = response.content.decode().split('<table id="trend">')[1]
    assert table.count("<tr><td>2026-03-0") == 4
    assert '<tr><td>2026-03-02 Mon</td><td class="num">0</td>' in table


@pytest.mark.parametrize("days", [1, 7, 30, 365])
def test_the_trend_is_labelled_twelve_times_at_most_and_fits_the_chart(
    world, signed_in, days
):
    f = figures(signed_in(world.manager), date_from=DAY - timedelta(days=days - 1))
    assert len(f.trend) == days
    assert 1 <= sum(bar.labelled for bar in f.trend) <= 12
    assert all(bar.x >= 0 and bar.x + bar.width <= 300 for bar in f.trend)
    assert max(bar.width for bar in f.trend) <= 24


def test_the_form_shows_the_range_in_force(world, signed_in):
    client = signed_in(world.manager)
    today = timezone.localdate(timezone=ZoneInfo(world.manager.timezone or "UTC"))
    week_ago = today - timedelta(days=6)
    body = client.get(reverse("pages:dashboard")).content.decode()
    assert f'name="date_from" value="{week_ago.isoformat()}"' in body
    assert f'name="date_to" value="{today.isoformat()}"' in body
    # Only the first day: the last is today. Days the wrong way round are swapped.
    body = client.get(reverse("pages:dashboard"), {"date_from": DAY}).content.decode()
    assert f'name="date_from" value="{DAY.isoformat()}"' in body
    assert f'name="date_to" value="{today.isoformat()}"' in body
    body = client.get(
        reverse("pages:dashboard"),
        {"date_from": DAY, "date_to": DAY - timedelta(days=3)},
    ).content.decode()
    assert 'name="date_from" value="2026-03-01"' in body
    assert 'name="date_to" value="2026-03-04"' in body


def test_a_range_of_centuries_lists_the_days_with_leads_only(world, calls, signed_in):
    f = figures(signed_in(world.manager), date_from="1900-01-01", date_to="9998-12-31")
    # The fixture's day and the one or two days of the world's calls of the last hours.
    assert (f.trend_rows[0]["day"], f.trend_rows[0]["received"]) == (DAY, 6)
    assert len(f.trend_rows) <= 3
    assert all(row["received"] for row in f.trend_rows)


# --- the previous period, the accounts compared, the leaderboard


@pytest.fixture
def day_before(world):
    """The previous period of DAY..DAY: two answered calls (100 s, 200 s) and a NOAGENT."""
    before = NOON - timedelta(days=1)
    made = [
        CallFactory(
            account=world.north,
            agent=world.agent,
            received_at=before,
            response_time=100,
        ),
        CallFactory(
            account=world.north,
            agent=world.agent,
            received_at=before,
            response_time=200,
        ),
        CallFactory(
            account=world.north,
            status=CallStatus.NOAGENT,
            response_time=None,
            recording_url="",
            received_at=before,
        ),
    ]
    # Two days before: outside both periods.
    CallFactory(account=world.north, received_at=NOON - timedelta(days=2))
    return made


def test_each_headline_figure_stands_beside_the_previous_period(
    world, calls, day_before, signed_in
):
    client = signed_in(world.manager)
    response = client.get(
        reverse("pages:dashboard"), {"date_from": DAY, "date_to": DAY}
    )
    f = response.context["f"]
    assert (f.previous_first, f.previous_last) == (DAY - timedelta(days=1),) * 2
    changes = {
        c.key: (c.value, c.previous, c.delta, c.direction, c.verdict) for c in f.changes
    }
    assert changes == {
        "received": (6, 3, 3, "up", "neutral"),
        "answered": (5, 2, 3, "up", "better"),
        "answer_rate": (
            pytest.approx(100 * 5 / 6),
            pytest.approx(100 * 2 / 3),
            16.7,
            "up",
            "better",
        ),
        "median": (40, 150, -110, "down", "better"),
        "p90": (pytest.approx(276), pytest.approx(190), 86, "up", "worse"),
        "within30": (pytest.approx(100 * 2 / 6), 0, 33.3, "up", "better"),
        "within60": (50, 0, 50, "up", "better"),
        "within300": (
            pytest.approx(100 * 4 / 6),
            pytest.approx(100 * 2 / 3),
            0,
            "level",
            "level",
        ),
        "noagent": (1, 1, 0, "level", "level"),
        "appointments": (1, 0, 1, "up", "better"),
    }
    body = response.content.decode()
    median = body.split('id="change-median"')[1].split("</p>")[0]
    assert "▼" in median
    assert "\u2212110 s" in median
    assert "(better)" in median
    assert "was 150 s; lower is better" in median
    assert 'class="change worse" id="change-p90"' in body
    p90 = body.split('id="change-p90"')[1].split("</p>")[0]
    assert "▲" in p90
    assert "+86 s" in p90
    assert "(worse)" in p90
    rate = body.split('id="change-answer_rate"')[1].split("</p>")[0]
    assert "+16.7 pts" in rate
    assert "was 67%; higher is better" in rate
    received = body.split('id="change-received"')[1].split("</p>")[0]
    assert "+3" in received
    assert "(neither better nor worse)" in received
    assert "no change" in body.split('id="change-noagent"')[1].split("</p>")[0]


def test_a_week_is_compared_with_the_seven_days_before(world, signed_in):
    f = figures(signed_in(world.manager), date_from=DAY - timedelta(days=6))
    assert (f.previous_first, f.previous_last) == (
        DAY - timedelta(days=13),
        DAY - timedelta(days=7),
    )
    # Nothing then and nothing now: nothing to compare, said so.
    assert {c.key: c.verdict for c in f.changes}["received"] == "level"
    assert {c.key: c.verdict for c in f.changes}["median"] is None


def test_a_range_reaching_the_first_day_has_no_previous_period(world, signed_in):
    f = figures(signed_in(world.manager), date_from="1900-01-01", date_to="1900-01-02")
    assert f.previous_first is None
    assert all(c.previous is None for c in f.changes)


def test_a_global_manager_compares_the_accounts(world, calls, signed_in):
    CallFactory(account=world.south, received_at=NOON, response_time=20)
    CallFactory(account=world.foreign, received_at=NOON)  # another organization
    response = signed_in(world.global_manager).get(
        reverse("pages:dashboard"), {"date_from": DAY, "date_to": DAY}
    )
    rows = {row["name"]: row for row in response.context["f"].accounts}
    assert set(rows) == {"North", "South"}
    assert (rows["North"]["received"], rows["North"]["answered"]) == (6, 5)
    assert rows["North"]["median"] == 40
    assert rows["North"]["noagent"] == 1
    assert rows["North"]["appointments"] == 1
    assert rows["South"]["received"] == 1
    assert rows["South"]["median"] == 20
    assert rows["South"]["within30"] == 100
    assert '<table id="accounts">' in response.content.decode()
    assert "Elsewhere" not in response.content.decode()


def test_a_manager_of_one_account_has_no_comparison_of_accounts(
    world, calls, signed_in
):
    response = signed_in(world.manager).get(
        reverse("pages:dashboard"), {"date_from": DAY, "date_to": DAY}
    )
    assert response.context["f"].accounts == []
    assert "Accounts compared" not in response.content.decode()
    # Nor a global manager looking at one account.
    f = figures(signed_in(world.global_manager), account=world.north.pk)
    assert f.accounts == []


def _lead_leg(call, *, dialed, answered):
    CallAttempt.objects.create(
        call=call,
        leg=Leg.LEAD,
        number=call.phone,
        provider="simulator",
        outcome=AttemptOutcome.ANSWERED,
        dial_requested_at=call.received_at + timedelta(seconds=dialed),
        answered_at=call.received_at + timedelta(seconds=answered),
    )


def test_the_leaderboard_ranks_on_the_first_human_with_first_touch_beside(
    world, calls, signed_in
):
    # Jordan answers as many calls as Avery (5), with better scores, but the leads wait
    # 100 s for him; Avery's three connected leads waited 20, 30 and 40 s: Avery first.
    for n, response in enumerate((30, 50, 60, 70, 80)):
        call = CallFactory(
            account=world.north,
            agent=world.other_agent,
            received_at=NOON + timedelta(minutes=n),
            response_time=response,
        )
        _lead_leg(call, dialed=5, answered=100)
        if n < 2:
            score_save(
                call=call,
                scorer=world.scorer,
                values={"cat1": True, "cat2": True, "cat3": True},
            )
    for call, human in zip(calls[:3], (20, 30, 40), strict=True):
        _lead_leg(call, dialed=2, answered=human)
    kept = appointment_set_for_call(
        call=calls[0], starts_at=NOON + timedelta(hours=3), by=Actor.AGENT
    )
    appointment_change(appointment=kept, to=Status.KEPT, by=Actor.MANAGER)
    client = signed_in(world.manager)
    response = client.get(
        reverse("pages:dashboard"), {"date_from": DAY, "date_to": DAY}
    )
    board = [
        (
            a["rank"],
            a["name"],
            a["human_median"],
            a["reached"],
            a["leads"],
            a["touch_median"],
            a["answered"],
            a["avg_score"],
            a["answer_rate"],
            a["set_rate"],
            a["show_rate"],
        )
        for a in response.context["leaderboard"]
    ]
    assert board == [
        (1, "Avery Lopez", 30, 3, 5, 2, 5, 1.5, 100.0, 20, 100),
        (2, "Jordan Kim", 100, 5, 5, 5, 5, 3.0, 0.0, 0, None),
    ]
    table = (
        response.content.decode().split('<table id="agents">')[1].split("</table>")[0]
    )
    assert table.index("Avery Lopez") < table.index("Jordan Kim")
    assert "(3 of 5)" in table  # leads a person reached, of those taken
    assert "(0 of 1)" in table  # Jordan: offered one call (Avery's), refused it
    assert "was —" in table  # the day before: no answered leads to set


def test_an_agent_who_reached_nobody_ranks_last(world, calls, signed_in):
    call = CallFactory(account=world.north, agent=world.other_agent, received_at=NOON)
    _lead_leg(call, dialed=3, answered=500)
    response = signed_in(world.manager).get(
        reverse("pages:dashboard"), {"date_from": DAY, "date_to": DAY}
    )
    board = [
        (a["rank"], a["name"], a["human_median"], a["touch_median"])
        for a in response.context["leaderboard"]
    ]
    # Avery answered five calls but no lead leg of theirs connected: no first human.
    assert board == [(1, "Jordan Kim", 500, 3), (2, "Avery Lopez", None, None)]


def test_the_dashboards_queries_do_not_grow_with_agents_or_accounts(
    world, calls, signed_in
):
    from django.db import connection
    from django.test.utils import CaptureQueriesContext

    client = signed_in(world.global_manager)

    def count() -> int:
        with CaptureQueriesContext(connection) as queries:
            figures(client)
        return len(queries)

    before = count()
    for n in range(4):
        account = AccountFactory(organization=world.north.organization, name=f"A{n}")
        agent = in_role("Agent", accounts=[account])
        CallFactory(account=account, agent=agent, received_at=NOON, response_time=n)
        CallFactory(account=account, agent=agent, received_at=NOON - timedelta(days=1))
    assert count() == before
