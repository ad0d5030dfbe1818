"""The call browser: every filter, sorting, paging, the bookmarkable URL, and the CSV export."""

from __future__ import annotations

import csv
import io
from datetime import datetime, timedelta
from zoneinfo import ZoneInfo

import pytest
from django.urls import reverse

from calls.models import CallStatus
from scoring.services import score_save
from tests.scoring.factories import CallFactory

pytestmark = pytest.mark.django_db

URL = reverse("pages:call-list")


def listed(client, **params) -> list[str]:
    """The lead last names of the rows shown, in order."""
    response = client.get(URL, params)
    assert response.status_code == 200
    return [call.last_name for call in response.context["calls"]]


@pytest.fixture
def manager(world, signed_in):
    return signed_in(world.global_manager)


def test_a_global_manager_sees_every_call_of_the_organization_newest_first(
    world, manager
):
    assert listed(manager) == ["South", "Other", "Buyer"]


@pytest.mark.parametrize(
    ("params", "expected"),
    [
        ({"status": "NOANSWER"}, ["Missed"]),
        ({"source": "Cars.com"}, ["Buyer"]),
        ({"scored": "yes"}, ["Buyer"]),
        ({"scored": "no"}, ["Missed", "South", "Other"]),
        ({"category": "2", "applied": "yes"}, ["Buyer"]),
        ({"category": "2"}, ["Buyer"]),  # a category alone means applied
        ({"category": "3", "applied": "no"}, ["Buyer"]),
        ({"category": "3", "applied": "yes"}, []),
        ({"wow": "yes"}, ["Buyer"]),
        ({"wow": "no"}, []),
        ({"call_end": "Appointment set"}, ["Buyer"]),
        ({"alert": "Hot lead"}, []),
        ({"appointment": "yes"}, ["Buyer"]),
        ({"appointment": "no"}, []),
        ({"q": "pat@buyer"}, ["Buyer"]),
        ({"q": "303-555-0177"}, ["Buyer"]),
        ({"q": "lee other"}, ["Other"]),
        ({"q": "nobody"}, []),
    ],
)
def test_each_filter_narrows_the_calls(world, manager, params, expected):
    CallFactory(
        account=world.south,
        status=CallStatus.NOANSWER,
        last_name="Missed",
        received_at=world.south_call.received_at + timedelta(minutes=5),
    )
    assert listed(manager, **params) == expected


def test_category_applied_starts_empty_so_links_carry_no_applied(world, manager):
    response = manager.get(URL)
    applied = response.context["filter"].form["applied"]
    assert list(applied.field.choices) == [("", "Any"), ("yes", "Yes"), ("no", "No")]
    assert applied.value() is None
    assert '<option value="" selected>Any</option>' in str(applied)


def _team_labels(client) -> list[str]:
    field = client.get(URL).context["filter"].form.fields["team"]
    return [label for _, label in field.choices]


def test_teams_of_several_accounts_are_named_with_their_account(world, signed_in):
    for account in (world.south, world.north):
        for name in ("Service", "Sales"):
            account.teams.create(name=name)
    assert _team_labels(signed_in(world.global_manager)) == [
        "Any",
        "Sales (North)",
        "Service (North)",
        "Sales (South)",
        "Service (South)",
    ]
    # A manager of one account sees its teams by their names alone.
    assert _team_labels(signed_in(world.manager)) == ["Any", "Sales", "Service"]


def test_account_agent_and_team_filters(world, manager):
    team = world.north.teams.create(name="Sales")
    world.other_agent_call.team = team
    world.other_agent_call.save(update_fields=["team"])
    assert listed(manager, account=world.south.pk) == ["South"]
    assert listed(manager, agent=world.agent.pk) == ["Buyer"]
    assert listed(manager, team=team.pk) == ["Other"]


def test_a_choice_outside_the_users_reach_is_a_filter_error_not_data(world, manager):
    response = manager.get(URL, {"account": world.foreign.pk})
    assert response.status_code == 200
    assert "account" in response.context["filter"].errors
    assert "Fay" not in response.content.decode()


def test_the_date_range_counts_days_in_each_accounts_timezone(world, manager):
    # 05:30 UTC on 2026-03-10 is 23:30 on the 9th in Denver, 01:30 on the 10th in New York.
    at = datetime(2026, 3, 10, 5, 30, tzinfo=ZoneInfo("UTC"))
    CallFactory(account=world.north, received_at=at, last_name="DenverNinth")
    CallFactory(account=world.south, received_at=at, last_name="NewYorkTenth")
    assert listed(manager, date_from="2026-03-09", date_to="2026-03-09") == [
        "DenverNinth"
    ]
    assert listed(manager, date_from="2026-03-10", date_to="2026-03-10") == [
        "NewYorkTenth"
    ]
    assert listed(manager, date_from="2026-03-10")[-1] == "NewYorkTenth"
    assert "DenverNinth" not in listed(manager, date_from="2026-03-10")
    assert listed(manager, date_to="2026-03-09") == ["DenverNinth"]


def test_a_bad_date_is_shown_as_an_error(manager, world):
    response = manager.get(URL, {"date_from": "yesterday"})
    assert response.status_code == 200
    assert "date_from" in response.context["filter"].errors
    assert "Some filters are not valid" in response.content.decode()


@pytest.mark.parametrize(
    ("params", "refused", "shown"),
    [
        ({"date_to": "9999-12-31"}, ["date_to"], ["South", "Other", "Buyer"]),
        (
            {"date_from": "9999-12-31", "date_to": "9999-12-31"},
            ["date_from", "date_to"],
            ["South", "Other", "Buyer"],
        ),
        ({"date_from": "0001-01-01"}, ["date_from"], ["South", "Other", "Buyer"]),
        ({"date_from": "1899-12-31", "q": "buyer"}, ["date_from"], ["Buyer"]),
    ],
)
def test_a_date_at_the_end_of_the_calendar_is_a_filter_error(
    manager, world, params, refused, shown
):
    response = manager.get(URL, params)
    assert response.status_code == 200
    assert response.context["filter"].errors == {
        name: ["Enter a date between 1900-01-01 and 9998-12-31."] for name in refused
    }
    page = response.content.decode()
    assert "Some filters are not valid" in page
    for name in refused:  # beside its field, too
        assert (
            f'<p class="error" id="id_{name}-error">'
            "Enter a date between 1900-01-01 and 9998-12-31.</p>"
        ) in page
    # The refused day is left out, not guessed at; the other filters still apply.
    assert [call.last_name for call in response.context["calls"]] == shown


def test_the_date_inputs_stop_at_the_days_the_service_accepts(manager, world):
    page = manager.get(URL).content.decode()
    for name in ("date_from", "date_to"):
        assert (
            f'<input type="date" name="{name}" min="1900-01-01" max="9998-12-31" '
            f'id="id_{name}">' in page
        )


def test_columns_sort_both_ways_and_the_heading_links_keep_the_filters(world, manager):
    assert listed(manager, sort="lead") == ["Buyer", "Other", "South"]
    assert listed(manager, sort="-lead") == ["South", "Other", "Buyer"]
    assert listed(manager, sort="received") == ["Buyer", "Other", "South"]
    page = manager.get(URL, {"status": "ANSWER", "sort": "lead"}).content.decode()
    assert 'href="?status=ANSWER&amp;sort=-lead"' in page


def test_pages_of_fifty_keep_the_filters_in_their_links(world, manager):
    start = world.agent_call.received_at - timedelta(days=1)
    for n in range(55):
        CallFactory(
            account=world.north,
            last_name=f"Bulk{n:02d}",
            received_at=start - timedelta(minutes=n),
            source="Bulk",
        )
    first = manager.get(URL, {"source": "Bulk"})
    assert len(first.context["calls"]) == 50
    assert 'href="?source=Bulk&amp;page=2"' in first.content.decode()
    second = manager.get(URL, {"source": "Bulk", "page": 2})
    assert [c.last_name for c in second.context["calls"]] == [
        f"Bulk{n}" for n in range(50, 55)
    ]


def test_an_agent_sees_only_their_own_calls(world, signed_in):
    assert listed(signed_in(world.agent)) == ["Buyer"]


def test_the_filter_form_asks_htmx_for_the_table_only(world, manager):
    response = manager.get(
        URL, {"status": "ANSWER"}, HTTP_HX_REQUEST="true", HTTP_HX_TARGET="results"
    )
    body = response.content.decode()
    assert "<table>" in body
    assert "<html" not in body


@pytest.mark.parametrize("extra_calls", [0, 30])
def test_the_list_costs_the_same_queries_however_many_calls(
    world, manager, extra_calls, django_assert_max_num_queries
):
    for n in range(extra_calls):
        call = CallFactory(account=world.north, agent=world.agent, last_name=f"Q{n}")
        if n % 2:
            score_save(call=call, scorer=world.scorer, values={"cat1": True})
    # Three of them read the filters' choices: the sources, the category names, and the
    # call-end reasons with the alert tags.
    with django_assert_max_num_queries(13):
        assert (
            manager.get(URL, {"status": "ANSWER", "sort": "-agent"}).status_code == 200
        )


# --- export


def exported(client, **params) -> list[dict[str, str]]:
    response = client.get(reverse("pages:call-export"), params)
    assert response.status_code == 200
    assert response["Content-Type"] == "text/csv; charset=utf-8"
    assert response.streaming
    text = b"".join(response.streaming_content).decode()
    return list(csv.DictReader(io.StringIO(text)))


def test_the_export_holds_the_filtered_calls_with_the_members_of_part_2_3(
    world, manager
):
    rows = exported(manager, scored="yes")
    assert [row["id"] for row in rows] == [str(world.agent_call.pk)]
    row = rows[0]
    assert row["dealerName"] == "North"
    assert row["firstName"] == "Pat"
    assert row["lastName"] == "Buyer"
    assert row["cat1"] == "1"
    assert row["cat3"] == "0"
    assert row["wow"] == "1"
    assert row["callEnd"] == "Appointment set"
    assert row["transcibedBy"] == "Sasha Scorer"
    assert row["cat1Name"] == "Greeted the customer by name"
    assert list(rows[0])[:6] == [
        "id",
        "altid",
        "dealerName",
        "source",
        "status",
        "date",
    ]


def test_the_export_of_several_accounts_writes_each_in_its_own_timezone(world, manager):
    at = datetime(2026, 3, 10, 5, 30, tzinfo=ZoneInfo("UTC"))
    north = CallFactory(account=world.north, received_at=at)
    south = CallFactory(account=world.south, received_at=at)
    rows = {
        row["id"]: row
        for row in exported(manager, date_from="2026-03-09", date_to="2026-03-10")
    }
    assert (rows[str(north.pk)]["date"], rows[str(north.pk)]["time"]) == (
        "2026-03-09",
        "23:30:00",
    )
    assert (rows[str(south.pk)]["date"], rows[str(south.pk)]["time"]) == (
        "2026-03-10",
        "01:30:00",
    )


def test_an_empty_export_is_a_header_only_and_a_bad_filter_is_a_400(world, manager):
    assert exported(manager, q="nobody") == []
    assert (
        manager.get(reverse("pages:call-export"), {"date_to": "soon"}).status_code
        == 400
    )


@pytest.mark.parametrize(
    ("params", "name"),
    [
        ({"date_to": "9999-12-31"}, "date_to"),
        ({"date_from": "0001-01-01"}, "date_from"),
    ],
)
def test_an_export_past_the_end_of_the_calendar_is_a_400_before_any_row(
    world, manager, params, name
):
    response = manager.get(reverse("pages:call-export"), params)
    assert response.status_code == 400
    assert not response.streaming
    assert response["Content-Type"] == "text/plain; charset=utf-8"
    assert response.content.decode() == (
        f"Some filters are not valid: * {name}\n"
        "  * Enter a date between 1900-01-01 and 9998-12-31."
    )


@pytest.mark.parametrize("extra_calls", [0, 40])
def test_the_export_costs_the_same_queries_however_many_calls(
    world, manager, extra_calls, django_assert_max_num_queries
):
    for n in range(extra_calls):
        CallFactory(account=world.north if n % 2 else world.south, last_name=f"E{n}")
    with django_assert_max_num_queries(12):
        rows = exported(manager)
    assert len(rows) == 3 + extra_calls


def test_past_the_count_cap_the_browser_says_more_than(world, manager, monkeypatch):
    from pages import views

    def count(**params) -> str:
        body = manager.get(URL, params).content.decode()
        return body.split('<strong id="count">')[1].split("</strong>")[0]

    monkeypatch.setattr(views, "COUNT_UP_TO", 2)
    assert count() == "More than 2 calls"
    assert count(q="pat") == "1 call"
    monkeypatch.setattr(views, "COUNT_UP_TO", 3)
    assert count() == "3 calls"


def test_the_alert_filter_finds_a_tag_among_several(world, manager):
    score_save(
        call=world.other_agent_call,
        scorer=world.scorer,
        values={"alert": "Poor audio, Hot lead"},
    )
    assert listed(manager, alert="Hot lead") == ["Other"]
    assert listed(manager, alert="Unhappy customer") == []


def _choices(client, name: str) -> list[str]:
    field = client.get(URL).context["filter"].form.fields[name]
    return [label for value, label in field.choices if value != ""]


def test_the_filters_offer_only_what_the_users_calls_and_scorecards_hold(
    world, manager, signed_in
):
    CallFactory(account=world.foreign, source="Foreign Source")
    from scoring.models import ChoiceKind, Scorecard, ScorecardChoice

    scorecard, _ = Scorecard.objects.get_or_create(account=world.foreign)
    for kind, name in (
        (ChoiceKind.CALL_END, "Foreign end"),
        (ChoiceKind.ALERT, "Foreign tag"),
    ):
        ScorecardChoice.objects.create(scorecard=scorecard, kind=kind, name=name)
    assert _choices(manager, "agent") == ["Jordan Kim", "Avery Lopez"]  # by last name
    assert _choices(manager, "category")[0] == "1. Greeted the customer by name"
    assert "Foreign Source" not in _choices(manager, "source")
    assert "Cars.com" in _choices(manager, "source")
    assert "Appointment set" in _choices(manager, "call_end")
    assert "Foreign end" not in _choices(manager, "call_end")
    assert "Hot lead" in _choices(manager, "alert")
    assert "Foreign tag" not in _choices(manager, "alert")
    foreign = signed_in(world.foreign_manager)
    assert "Foreign Source" in _choices(foreign, "source")
    assert "Cars.com" not in _choices(foreign, "source")
    assert "Foreign end" in _choices(foreign, "call_end")
    assert "Foreign tag" in _choices(foreign, "alert")
    assert "Avery Lopez" not in _choices(foreign, "agent")


def test_the_export_follows_the_pages_sort(world, manager):
    by_lead = [row["lastName"] for row in exported(manager, sort="lead")]
    assert by_lead == sorted(by_lead)
    assert len(by_lead) == 3
    assert [row["lastName"] for row in exported(manager, sort="-lead")] == by_lead[::-1]
    assert [row["lastName"] for row in exported(manager)] == ["Buyer", "Other", "South"]


def test_the_source_choices_are_every_source_in_reach_and_the_agents_own(world):
    """``call_sources`` (on PostgreSQL a walk of the (account, source) index) lists the
    sources of every call the user may read, once each, alphabetical: several per
    account, none empty, an agent's own calls in an account out of reach included, and
    for staff every account's."""
    from scoring.selectors import call_sources, calls_visible_to

    for account, source in (
        (world.north, "Zeta"),
        (world.north, "Alpha"),
        (world.north, ""),
        (world.south, "Alpha"),
        (world.south, "bravo"),
        (world.foreign, "Foreign Source"),
    ):
        CallFactory(account=account, source=source)
    CallFactory(account=world.foreign, agent=world.agent, source="Agent Elsewhere")
    for user in (
        world.global_manager,
        world.agent,
        world.foreign_manager,
        world.staff,
    ):
        found = call_sources(user=user)
        assert found == sorted(
            set(
                calls_visible_to(user)
                .exclude(source="")
                .values_list("source", flat=True)
            )
        )
    assert "" not in call_sources(user=world.staff)
    assert {"Zeta", "Alpha", "bravo"} <= set(call_sources(user=world.global_manager))
    assert "Foreign Source" not in call_sources(user=world.global_manager)
    assert call_sources(user=world.agent) == ["Agent Elsewhere", "Cars.com"]
    assert "Foreign Source" in call_sources(user=world.staff)


def test_call_end_and_alert_choices_keep_the_names_only_scores_in_reach_hold(
    world, manager
):
    """A call end or an alert tag since removed from the scorecard stays offered while a
    score in reach holds it: on a score with only a call end, and on one with only alert
    tags (``score_list_names`` reads them through a partial index of such scores). A
    foreign score's names are not offered, and a score with neither adds nothing."""
    from scoring.models import ChoiceKind, ScorecardChoice
    from tests.scoring.factories import answered_call

    for last_name, values in (
        ("EndOnly", {"call_end": "Not interested"}),
        ("TagsOnly", {"alert": "Poor audio, Manager follow-up"}),
        ("Neither", {"cat1": True}),
    ):
        call = answered_call(world.agent, account=world.north, last_name=last_name)
        score_save(call=call, scorer=world.scorer, values=values)
    foreign = answered_call(world.agent, account=world.foreign)
    score_save(
        call=foreign,
        scorer=world.staff,
        values={"call_end": "Wrong number", "alert": "Unhappy customer"},
    )
    ScorecardChoice.objects.filter(
        name__in=["Not interested", "Wrong number", "Poor audio", "Unhappy customer"],
        kind__in=[ChoiceKind.CALL_END, ChoiceKind.ALERT],
    ).delete()
    ScorecardChoice.objects.filter(
        scorecard__account__in=[world.north, world.south], name="Manager follow-up"
    ).delete()
    call_ends = _choices(manager, "call_end")
    alerts = _choices(manager, "alert")
    assert "Not interested" in call_ends
    assert {"Poor audio", "Manager follow-up"} <= set(alerts)
    assert "Wrong number" not in call_ends
    assert "Unhappy customer" not in alerts
    assert "" not in call_ends + alerts
    assert listed(manager, call_end="Not interested") == ["EndOnly"]
    assert listed(manager, alert="Manager follow-up") == ["TagsOnly"]
