"""Support's scoring pages: scorecards edited in the admin, scores read on the call page."""

from datetime import UTC, datetime

import pytest
from django.urls import reverse
from django.utils import timezone

from scoring.models import (
    ChoiceKind,
    LearntSuggester,
    Score,
    ScorecardChoice,
    ScoreRevision,
)
from scoring.services import coaching_save, score_save
from tests.accounts.factories import AccountFactory
from tests.admin_pages import form_data, text_of, typed
from tests.scoring.factories import CallFactory, in_role
from users.models import User

pytestmark = pytest.mark.django_db


@pytest.fixture
def account():
    return AccountFactory(name="Demo Motors North")


def test_support_renames_a_category_and_adds_a_call_end_reason(admin_client, account):
    url = reverse("admin:scoring_scorecard_change", args=[account.scorecard.pk])
    page = admin_client.get(url)
    assert page.status_code == 200
    data = form_data(page, "scorecard_form")
    reasons = ScorecardChoice.objects.filter(scorecard=account.scorecard).count()
    data = typed(
        data,
        {
            "categories-0-name": "Said hello by name",
            "categories-0-points": "3",
            "categories-9-name": "",
            "choices-__prefix__-kind": None,
            f"choices-{reasons}-kind": ChoiceKind.CALL_END,
            f"choices-{reasons}-name": "Transferred to service",
            f"choices-{reasons}-position": "9",
            f"choices-{reasons}-needs_appointment": "on",
        },
    )
    response = admin_client.post(url, dict(data.items()))
    assert response.status_code == 302, text_of(response)
    categories = list(account.scorecard.categories.order_by("slot"))
    assert (categories[0].name, categories[0].points) == ("Said hello by name", 3)
    assert categories[9].name == ""
    assert account.scorecard.choices.filter(
        kind=ChoiceKind.CALL_END, name="Transferred to service", needs_appointment=True
    ).exists()
    # The default "Appointment set" comes with the flag, and a plain post keeps it.
    assert account.scorecard.choices.get(
        kind=ChoiceKind.CALL_END, name="Appointment set"
    ).needs_appointment


def test_the_scorecard_list_shows_every_account(admin_client, account):
    AccountFactory(name="Demo Motors South")
    page = text_of(admin_client.get(reverse("admin:scoring_scorecard_changelist")))
    assert "Demo Motors North" in page
    assert "Demo Motors South" in page


def test_support_reads_what_each_account_learnt_without_the_weights(
    admin_client, account
):
    LearntSuggester.objects.create(
        account=account,
        member="cat4",
        name="Asked about a trade-in",
        source="learnt",
        examples=120,
        rule_f1=0.33,
        learnt_f1=0.85,
        weights={"features": {"a:swap": [1.5, 2.0]}},
        trained_at=timezone.now(),
    )
    rows = text_of(
        admin_client.get(reverse("admin:scoring_learntsuggester_changelist"))
    )
    assert "Demo Motors North" in rows
    assert "Asked about a trade-in" in rows
    row = LearntSuggester.objects.get(account=account)
    page = admin_client.get(
        reverse("admin:scoring_learntsuggester_change", args=[row.pk])
    )
    assert page.status_code == 200
    assert "a:swap" not in page.content.decode()


def test_the_call_page_shows_the_score_coaching_and_revisions(admin_client, account):
    call = CallFactory(account=account)
    scorer = in_role("Scorer", accounts=[account], first_name="Robin", last_name="Ames")
    score_save(
        call=call,
        scorer=scorer,
        values={
            "cat1": True,
            "call_end": "Appointment set",
            "appointment_date": "2026-12-02",
        },
    )
    score_save(call=call, scorer=scorer, values={"cat2": True})
    manager = in_role(
        "Manager", accounts=[account], first_name="Dana", last_name="Cole"
    )
    coaching_save(call=call, coach=manager, notes="Ask for the appointment sooner.")

    page = text_of(admin_client.get(reverse("admin:calls_call_change", args=[call.pk])))
    assert "✔ Greeted the customer by name (1 pt)" in page
    assert "✔ Introduced self and dealership (1 pt)" in page
    assert "Appointment set" in page
    assert "Ask for the appointment sooner." in page
    assert "Dana Cole" in page
    # Revisions name what changed as support reads it, never the raw member names.
    assert (
        "Score by Robin Ames: category 2 (Introduced self and dealership): False → True"
        in page
    )
    assert (
        "Coaching by Dana Cole: coached by: '' → 'Dana Cole'; "
        "coach notes: '' → 'Ask for the appointment sooner.'" in page
    )
    assert "coach_notes" not in page
    assert "cat2:" not in page
    score_page = admin_client.get(
        reverse("admin:scoring_score_change", args=[Score.objects.get(call=call).pk])
    )
    assert score_page.status_code == 200
    assert "Robin Ames" in text_of(score_page)
    assert "call end: None → 'Appointment set'" in text_of(score_page)
    assert "coached_by" not in text_of(score_page)


def test_an_unscored_calls_page_shows_no_score_block(admin_client, account):
    call = CallFactory(account=account)

    response = admin_client.get(reverse("admin:calls_call_change", args=[call.pk]))

    assert response.status_code == 200
    page = text_of(response)
    assert "Score: #1" not in page
    assert "points: 0" not in page
    assert "Scorer name" not in page
    assert 'id="score-0"' not in response.content.decode()


def test_the_call_list_filters_scored_and_unscored(admin_client, account):
    scored, unscored = CallFactory(account=account), CallFactory(account=account)
    score_save(
        call=scored, scorer=in_role("Scorer", accounts=[account]), values={"wow": True}
    )
    url = reverse("admin:calls_call_changelist")

    def ids(value):
        response = admin_client.get(url, {"scored": value})
        return {row.pk for row in response.context["cl"].result_list}

    assert ids("yes") == {scored.pk}
    assert ids("no") == {unscored.pk}


def test_the_score_pages_read_in_the_dealers_timezone(client):
    # As the call's page does: the score of a Denver dealer's call, read from Tokyo.
    client.force_login(
        User.objects.create_superuser(
            username="root@example.com", timezone="Asia/Tokyo"
        )
    )
    denver = AccountFactory(timezone="America/Denver")
    call = CallFactory(account=denver)
    score = score_save(
        call=call, scorer=in_role("Scorer", accounts=[denver]), values={}
    )
    coaching_save(call=call, coach=in_role("Manager", accounts=[denver]), notes="Hm.")
    at = datetime(2026, 11, 22, 16, 14, 3, tzinfo=UTC)
    Score.objects.filter(pk=score.pk).update(
        scored_at=at, coached_at=at, coaching_read_at=at
    )
    ScoreRevision.objects.filter(score=score).update(changed_at=at)

    listed = text_of(client.get(reverse("admin:scoring_score_changelist")))
    page = text_of(client.get(reverse("admin:scoring_score_change", args=[score.pk])))

    assert "2026-11-22 09:14:03 MST" in listed
    # Scored at, coached at, coaching read at, and each of the two revisions.
    assert page.count("2026-11-22 09:14:03 MST") == 5
    for elsewhere in ("Nov. 23", "1:14 a.m.", "16:14", "UTC", "JST"):
        assert elsewhere not in listed + page
