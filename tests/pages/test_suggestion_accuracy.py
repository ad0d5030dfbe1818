"""The suggestions' accuracy page: per account in the viewer's reach, rule against learnt
model for each member and which one is in force; another organization's account (or one
of the organization the manager does not coach) is not found."""

from __future__ import annotations

import datetime as dt

import pytest
from django.urls import reverse

from scoring.models import LearntSuggester

URL = reverse("pages:suggestion-accuracy")
TRAINED = dt.datetime(2026, 12, 7, 3, 30, tzinfo=dt.UTC)


def verdicts(account, *, trade: str) -> None:
    """What a night's learning leaves: the trade-in learnt, the greeting by rule, the
    Poor audio tag too rarely scored to learn; ``trade`` names the account's own reason."""
    common = {"account": account, "trained_at": TRAINED}
    LearntSuggester.objects.create(
        member="cat4",
        name="Asked about a trade-in",
        source="learnt",
        examples=120,
        accounts=2,
        held_out=24,
        rule_precision=0.5,
        rule_recall=0.25,
        rule_f1=1 / 3,
        learnt_precision=0.9,
        learnt_recall=0.8,
        learnt_f1=0.847,
        weights={"version": 1, "classes": [False, True], "intercept": [0.0]},
        reason=trade,
        **common,
    )
    LearntSuggester.objects.create(
        member="cat1",
        name="Greeted the customer by name",
        examples=120,
        held_out=24,
        rule_precision=1.0,
        rule_recall=1.0,
        rule_f1=1.0,
        learnt_precision=0.95,
        learnt_recall=1.0,
        learnt_f1=0.974,
        reason="The phrase rule measures as well or better on the newest calls.",
        **common,
    )
    LearntSuggester.objects.create(
        member="alert:Poor audio",
        name="Poor audio",
        reason="Too few scored calls with transcripts to learn from.",
        **common,
    )


@pytest.fixture
def learnt(world):
    verdicts(world.north, trade="reason of North")
    verdicts(world.foreign, trade="reason of Elsewhere")
    return world


def cells(html: str, member: str) -> list[str]:
    """The texts of one member's row, whitespace folded."""
    row = html.split(f'<tr id="member-{member}">', 1)[1].split("</tr>", 1)[0]
    parts = [part.split(">", 1)[1] for part in row.split("<td")[1:]]
    texts = []
    for part in parts:
        text = part.split("</td>", 1)[0]
        while "<" in text:
            head, rest = text.split("<", 1)
            text = head + " " + rest.split(">", 1)[1]
        texts.append(" ".join(text.split()))
    return texts


def test_a_manager_reads_their_account_s_rule_against_learnt(
    learnt, signed_in, django_assert_max_num_queries
):
    client = signed_in(learnt.manager)
    with django_assert_max_num_queries(8):
        response = client.get(URL)
    assert response.status_code == 200
    html = response.content.decode()
    assert "<h2>North</h2>" in html
    # In the manager's own timezone (Denver).
    assert 'id="trained-at">Learnt 2026-12-06 20:30 MST.' in html
    assert cells(html, "cat4") == [
        "Asked about a trade-in",
        "Learnt",
        "50%",
        "25%",
        "33%",
        "90%",
        "80%",
        "85%",
        "120 from 2 accounts",
        "24",
        "reason of North",
    ]
    assert cells(html, "cat1")[:2] == ["Greeted the customer by name", "Rule"]
    assert cells(html, "alertpoor-audio") == [
        "Alert: Poor audio",
        "Rule",
        *["—"] * 6,
        "0",
        "0",
        "Too few scored calls with transcripts to learn from.",
    ]
    # Categories by slot first, then the tags.
    assert html.index('id="member-cat1"') < html.index('id="member-cat4"')
    assert html.index('id="member-cat4"') < html.index('id="member-alertpoor-audio"')
    assert "reason of Elsewhere" not in html
    # One account in reach: nothing to choose.
    assert '<select name="account"' not in html


@pytest.mark.parametrize("other", ["foreign", "south"])
def test_an_account_out_of_the_manager_s_reach_is_not_found(learnt, signed_in, other):
    client = signed_in(learnt.manager)
    account = getattr(learnt, other)
    response = client.get(URL, {"account": account.pk})
    assert response.status_code == 404
    assert b"reason of Elsewhere" not in response.content


def test_the_other_organization_s_manager_never_sees_north(learnt, signed_in):
    client = signed_in(learnt.foreign_manager)
    assert client.get(URL, {"account": learnt.north.pk}).status_code == 404
    html = client.get(URL).content.decode()
    assert "<h2>Elsewhere</h2>" in html
    assert "reason of Elsewhere" in html
    assert "reason of North" not in html


def test_a_global_manager_chooses_among_their_organization_s_accounts(
    learnt, signed_in
):
    client = signed_in(learnt.global_manager)
    html = client.get(URL, {"account": learnt.north.pk}).content.decode()
    assert f'<option value="{learnt.north.pk}" selected>North</option>' in html
    assert f'<option value="{learnt.south.pk}">South</option>' in html
    assert "Elsewhere" not in html
    assert client.get(URL, {"account": learnt.foreign.pk}).status_code == 404


def test_support_reads_every_account(learnt, signed_in):
    client = signed_in(learnt.staff)
    html = client.get(URL, {"account": learnt.foreign.pk}).content.decode()
    assert "<h2>Elsewhere</h2>" in html
    assert "reason of Elsewhere" in html
    assert f'<option value="{learnt.north.pk}">North</option>' in html


def test_an_account_nothing_was_learnt_for_says_so(learnt, signed_in):
    client = signed_in(learnt.global_manager)
    html = client.get(URL, {"account": learnt.south.pk}).content.decode()
    assert "Nothing learnt yet: the suggestions come from the phrase rules." in html


@pytest.mark.parametrize("role", ["agent", "scorer"])
def test_the_page_is_refused_to_agents_and_scorers(learnt, signed_in, role):
    client = signed_in(learnt.users()[role])
    assert client.get(URL).status_code == 403


def test_a_malformed_account_is_not_found(learnt, signed_in):
    client = signed_in(learnt.staff)
    assert client.get(URL, {"account": "north"}).status_code == 404


def test_managers_find_the_page_in_the_navigation(learnt, signed_in):
    html = signed_in(learnt.manager).get(reverse("pages:coaching")).content.decode()
    assert f'<a href="{URL}">Suggestions</a>' in html
    html = signed_in(learnt.agent).get(reverse("pages:agent-home")).content.decode()
    assert URL not in html
