"""Scorecards, scores, coaching and revisions through the scoring services."""

import re
from datetime import date, time, timedelta

import pytest
from django.core.exceptions import ValidationError
from django.utils import timezone

from accounts.models import Account
from accounts.services import account_create
from calls.models import CallStatus
from scoring.models import (
    ChoiceKind,
    RevisionKind,
    Score,
    Scorecard,
    ScorecardCategory,
)
from scoring.services import (
    SCORED_MEMBERS,
    coaching_mark_read,
    coaching_save,
    score_save,
    scorecard_create_default,
)
from tests.accounts.factories import AccountFactory, OrganizationFactory
from tests.scoring.factories import CallFactory, in_role

pytestmark = pytest.mark.django_db


@pytest.fixture
def account():
    return AccountFactory()


@pytest.fixture
def scorer(account):
    return in_role("Scorer", accounts=[account], first_name="Robin", last_name="Ames")


def test_a_new_account_gets_the_default_scorecard():
    account = account_create(
        account=Account(
            organization=OrganizationFactory(),
            name="Fresh Motors",
            timezone="America/Denver",
        )
    )
    scorecard = Scorecard.objects.get(account=account)
    names = [c.name for c in scorecard.categories.order_by("slot")]
    assert len(names) == 10
    assert all(names)
    assert names[0] == "Greeted the customer by name"
    kinds = {c.kind for c in scorecard.choices.all()}
    assert kinds == {ChoiceKind.CALL_END, ChoiceKind.ALERT, ChoiceKind.DEPARTMENT}


def test_the_default_scorecard_is_made_once():
    account = AccountFactory(scorecard=False)
    first = scorecard_create_default(account=account)
    assert scorecard_create_default(account=account) == first
    assert ScorecardCategory.objects.filter(scorecard=first).count() == 10


def test_an_account_made_with_the_orm_gets_no_scorecard():
    # No post_save hook: the scorecard comes from account_create, or the first score.
    account = AccountFactory(scorecard=False)
    assert not Scorecard.objects.filter(account=account).exists()


def test_the_first_score_stores_the_default_scorecard():
    account = AccountFactory(scorecard=False)
    scorer = in_role("Scorer", accounts=[account])
    score = score_save(
        call=CallFactory(account=account), scorer=scorer, values={"cat1": True}
    )
    assert Scorecard.objects.filter(account=account).count() == 1
    assert score.category_names[0] == "Greeted the customer by name"


def test_score_keeps_the_scorecard_it_was_scored_under(account, scorer):
    call = CallFactory(account=account)
    score_save(
        call=call, scorer=scorer, values={"cat1": True, "cat3": True, "wow": True}
    )
    ScorecardCategory.objects.filter(scorecard=account.scorecard, slot=1).update(
        name="Renamed later", points=9
    )
    ScorecardCategory.objects.filter(scorecard=account.scorecard, slot=10).update(
        name=""
    )

    score = Score.objects.get(call=call)
    assert score.category_names[0] == "Greeted the customer by name"
    assert score.category_names[9] == "Confirmed contact details"
    assert score.category_points == [1] * 10
    assert (score.cat1, score.cat2, score.cat3, score.wow) == (True, False, True, True)
    assert score.points == 2
    assert score.scorer_name == "Robin Ames"


def test_score_saves_every_scored_member(account, scorer):
    call = CallFactory(account=account)
    values = {
        "first_name": "Samuel",
        "last_name": "Rivera",
        "alt_phone": "303-555-0199",
        "email": "sam@example.org",
        "department": "Sales",
        "notes": "Wants a test drive.",
        "appointment_date": "2026-11-24",
        "appointment_time": "15:30",
        "call_end": "Appointment set",
        "alert": "Hot lead, Manager follow-up",
        "current_make": "Honda",
        "current_model": "Civic",
        "current_year": "2015",
        "current_registration": "ABC-123",
        "current_summary": "Dent on the rear door.",
        "called_on_make": "Toyota",
        "called_on_model": "RAV4",
        "called_on_year": "2025",
        "called_on_registration": "",
        "called_on_summary": "Blue, hybrid.",
        "lead_type": "New",
    }
    score = score_save(call=call, scorer=scorer, values=values)
    score.refresh_from_db()
    assert score.appointment_date == date(2026, 11, 24)
    assert score.appointment_time == time(15, 30)
    assert score.alert == "Hot lead, Manager follow-up"
    for member in set(values) - {"appointment_date", "appointment_time"}:
        assert getattr(score, member) == values[member], member


@pytest.mark.parametrize(
    ("values", "member", "message"),
    [
        (
            {"first_name": "x" * 46},
            "first_name",
            "The first name may not be greater than 45 characters.",
        ),
        (
            {"alt_phone": "1" * 46},
            "alt_phone",
            "The alternate phone may not be greater than 45 characters.",
        ),
        (
            {"call_end": "Went fishing"},
            "call_end",
            "Choose a call end from the account's list.",
        ),
        (
            {"department": "Bodyshop"},
            "department",
            "Choose a department from the account's list.",
        ),
        (
            {"alert": "Hot lead, Nope"},
            "alert",
            "Not an alert tag of this account: Nope.",
        ),
        ({"lead_type": "Demo"}, "lead_type", "The lead type must be New or Used."),
        (
            {"appointment_date": "24/11/2026"},
            "appointment_date",
            "The appointment date must be a valid date (YYYY-MM-DD).",
        ),
        (
            {"appointment_time": "3pm"},
            "appointment_time",
            "The appointment time must be a valid time (HH:MM).",
        ),
    ],
)
def test_bad_values_are_refused_and_change_nothing(
    account, scorer, values, member, message
):
    call = CallFactory(account=account)
    with pytest.raises(ValidationError) as refused:
        score_save(call=call, scorer=scorer, values=values)
    assert refused.value.message_dict == {member: [message]}
    assert not Score.objects.filter(call=call).exists()


def test_an_appointment_time_without_its_date_is_refused_and_changes_nothing(
    account, scorer
):
    call = CallFactory(account=account)
    with pytest.raises(ValidationError) as refused:
        score_save(call=call, scorer=scorer, values={"appointment_time": "15:30"})
    assert refused.value.message_dict == {
        "appointment_date": ["Give the appointment's date with its time."]
    }
    assert not Score.objects.filter(call=call).exists()

    # A date without a time stays allowed; clearing the date of a timed one is refused.
    score_save(call=call, scorer=scorer, values={"appointment_date": "2026-11-24"})
    score_save(call=call, scorer=scorer, values={"appointment_time": "15:30"})
    with pytest.raises(ValidationError) as refused:
        score_save(call=call, scorer=scorer, values={"appointment_date": ""})
    assert refused.value.message_dict == {
        "appointment_date": ["Give the appointment's date with its time."]
    }
    score = Score.objects.get(call=call)
    assert (score.appointment_date, score.appointment_time) == (
        date(2026, 11, 24),
        time(15, 30),
    )
    assert score.revisions.count() == 2


def test_an_unused_category_cannot_be_applied(account, scorer):
    ScorecardCategory.objects.filter(scorecard=account.scorecard, slot=7).update(
        name=""
    )
    call = CallFactory(account=account)
    with pytest.raises(ValidationError) as refused:
        score_save(call=call, scorer=scorer, values={"cat7": True})
    assert refused.value.message_dict == {
        "cat7": ["Category 7 is not used on this scorecard."]
    }


@pytest.mark.parametrize(
    "status", [s for s in CallStatus.values if s != CallStatus.ANSWER]
)
def test_only_answered_calls_can_be_scored(account, scorer, status):
    call = CallFactory(account=account, status=status)
    with pytest.raises(
        ValidationError, match=re.escape("Only answered calls can be scored.")
    ):
        score_save(call=call, scorer=scorer, values={"cat1": True})


def test_a_scorer_of_another_account_may_not_score(account):
    outsider = in_role("Scorer", accounts=[AccountFactory()])
    agent_only = in_role("Agent", accounts=[account])
    call = CallFactory(account=account)
    for user in (outsider, agent_only):
        with pytest.raises(
            ValidationError, match=re.escape("You may not score calls of this account.")
        ):
            score_save(call=call, scorer=user, values={"cat1": True})


def test_a_scorer_of_a_whole_organization_reaches_its_accounts():
    organization = OrganizationFactory()
    first, second = (
        AccountFactory(organization=organization),
        AccountFactory(organization=organization),
    )
    scorer = in_role("Scorer", organizations=[organization])
    for account in (first, second):
        assert score_save(
            call=CallFactory(account=account), scorer=scorer, values={"wow": True}
        )
    with pytest.raises(ValidationError):
        score_save(call=CallFactory(), scorer=scorer, values={"wow": True})


def test_every_change_is_kept_as_a_revision(account, scorer):
    call = CallFactory(account=account)
    score_save(call=call, scorer=scorer, values={"cat1": True, "first_name": "Sam"})
    other = in_role("Scorer", accounts=[account], first_name="Lee", last_name="Park")
    score_save(call=call, scorer=other, values={"cat1": False, "cat2": True})
    score_save(call=call, scorer=other, values={"cat2": True})  # nothing changes

    first, second = Score.objects.get(call=call).revisions.all()
    assert first.kind == RevisionKind.SCORE
    assert first.changed_by == scorer
    assert first.changed_by_name == "Robin Ames"
    # The first revision holds every member the new score set, from nothing.
    assert set(first.changes) == set(SCORED_MEMBERS) - {
        "appointment_date",
        "appointment_time",
    }
    assert first.changes["cat1"] == [None, True]
    assert first.changes["first_name"] == [None, "Sam"]
    assert first.changes["notes"] == [None, ""]
    assert first.changes["cat2"] == [None, False]
    assert second.changes == {"cat1": [True, False], "cat2": [False, True]}
    assert second.changed_by_name == "Lee Park"
    assert Score.objects.get(call=call).scorer_name == "Lee Park"


def test_a_manager_coaches_a_scored_call_and_the_agent_reads_it(account, scorer):
    agent = in_role("Agent", accounts=[account])
    call = CallFactory(account=account, agent=agent)
    score_save(call=call, scorer=scorer, values={"cat1": True})
    manager = in_role(
        "Manager", accounts=[account], first_name="Dana", last_name="Cole"
    )

    score = coaching_save(
        call=call, coach=manager, notes="Ask for the appointment sooner."
    )
    assert (score.coach_notes, score.coached_by, score.coach) == (
        "Ask for the appointment sooner.",
        "Dana Cole",
        manager,
    )
    revision = score.revisions.get(kind=RevisionKind.COACHING)
    assert revision.changes == {
        "coach_notes": ["", "Ask for the appointment sooner."],
        "coached_by": ["", "Dana Cole"],
    }
    assert coaching_mark_read(call=call, agent=manager) is False
    assert coaching_mark_read(call=call, agent=agent) is True
    assert coaching_mark_read(call=call, agent=agent) is False
    assert Score.objects.get(call=call).coaching_read_at is not None


def test_coaching_needs_a_score_and_a_manager_of_the_account(account, scorer):
    call = CallFactory(account=account)
    manager = in_role("Manager", accounts=[account])
    with pytest.raises(
        ValidationError, match=re.escape("Only a scored call can be coached.")
    ):
        coaching_save(call=call, coach=manager, notes="Good")
    score_save(call=call, scorer=scorer, values={"cat1": True})
    for outsider in (
        in_role("Manager", accounts=[AccountFactory()]),
        in_role("Agent", accounts=[account]),
        scorer,
    ):
        with pytest.raises(
            ValidationError, match=re.escape("You may not coach calls of this account.")
        ):
            coaching_save(call=call, coach=outsider, notes="Good")


def test_a_global_manager_coaches_every_account_of_the_organization(account, scorer):
    sibling = AccountFactory(organization=account.organization)
    call = CallFactory(account=sibling)
    score_save(
        call=call, scorer=in_role("Scorer", accounts=[sibling]), values={"wow": True}
    )
    chief = in_role("Global Manager", organizations=[account.organization])
    assert coaching_save(call=call, coach=chief, notes="Nice").coached_by


def test_staff_may_score_and_coach_anything(account):
    staff = in_role("Agent", accounts=[AccountFactory()], is_staff=True)
    call = CallFactory(account=account, received_at=timezone.now() - timedelta(days=1))
    score_save(call=call, scorer=staff, values={"cat1": True})
    assert coaching_save(call=call, coach=staff, notes="Fine").coach == staff
