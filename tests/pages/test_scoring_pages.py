"""The scoring workspace: score next from the queue, the form prefilled from the lead, save,
save and next, inline errors that keep what was typed, skip, and the scorer's day."""

from __future__ import annotations

from datetime import timedelta

import pytest
from django.urls import reverse
from django.utils import timezone

from scoring.models import Score, Scorecard, ScorecardChoice, ScoringClaim
from scoring.services import score_save
from tests.scoring.factories import CallFactory

pytestmark = pytest.mark.django_db


@pytest.fixture
def scorer(world, signed_in):
    return signed_in(world.scorer)


def test_score_next_holds_the_oldest_unscored_call_and_opens_it(world, scorer):
    response = scorer.post(reverse("pages:scoring-next"))
    assert response.status_code == 302
    assert response["Location"] == reverse(
        "pages:scoring-call", args=[world.other_agent_call.pk]
    )
    assert ScoringClaim.objects.get(call=world.other_agent_call).scorer == world.scorer


def test_an_empty_queue_says_so(world, scorer):
    score_save(call=world.other_agent_call, scorer=world.scorer, values={})
    response = scorer.post(reverse("pages:scoring-next"), follow=True)
    assert response.redirect_chain[-1][0] == reverse("pages:scoring-home")
    assert "The queue is empty" in response.content.decode()


def test_the_workspace_shows_the_call_and_the_form_prefilled_from_the_lead(
    world, scorer
):
    call = world.other_agent_call
    call.called_on_make, call.called_on_model, call.lead_type = "Toyota", "RAV4", "New"
    call.whisper, call.call_notes = (
        "Sales lead. New Toyota RAV4.",
        "Customer comments: ASAP",
    )
    call.transcription = "Agent: Hello Lee."
    call.save()
    response = scorer.get(reverse("pages:scoring-call", args=[call.pk]))
    assert response.status_code == 200
    body = response.content.decode()
    form = response.context["form"]
    assert form["first_name"].value() == "Lee"
    assert form["last_name"].value() == "Other"
    assert form["alt_phone"].value() == call.phone
    assert form["email"].value() == call.email
    assert form["called_on_make"].value() == "Toyota"
    assert form["lead_type"].value() == "New"
    for text in (
        "Sales lead. New Toyota RAV4.",
        "Customer comments: ASAP",
        "Agent: Hello Lee.",
        "Used the lead&#x27;s name within the first 15 seconds.",
        "<kbd>0</kbd>",
        'data-rate="1.5"',
        "Ctrl</kbd>+<kbd>Enter</kbd> save and next",
    ):
        assert text in body, text


def test_save_and_next_scores_the_call_and_opens_the_next(world, scorer):
    first = world.other_agent_call
    second = CallFactory(
        account=world.north, received_at=first.received_at + timedelta(minutes=1)
    )
    data = {
        "cat1": "on",
        "cat10": "on",
        "wow": "on",
        "first_name": "Lee",
        "last_name": "Other",
        "call_end": "Appointment set",
        "alert": ["Hot lead", "Manager follow-up"],
        "appointment_date": "2026-12-02",
        "appointment_time": "10:30",
        "lead_type": "Used",
        "department": "Sales",
        "notes": "Wants a test drive.",
        "next": "1",
    }
    response = scorer.post(reverse("pages:scoring-call", args=[first.pk]), data)
    assert response["Location"] == reverse("pages:scoring-call", args=[second.pk])
    score = Score.objects.get(call=first)
    assert score.applied == [True] + [False] * 8 + [True]
    assert (score.wow, score.call_end, score.alert) == (
        True,
        "Appointment set",
        "Hot lead, Manager follow-up",
    )
    assert str(score.appointment_date) == "2026-12-02"
    assert score.appointment_time is not None
    assert score.appointment_time.strftime("%H:%M") == "10:30"
    assert score.scorer == world.scorer
    assert score.notes == "Wants a test drive."


def test_the_workspace_of_an_account_without_a_scorecard_writes_nothing(world, scorer):
    call = world.other_agent_call
    Scorecard.objects.filter(account=world.north).delete()
    url = reverse("pages:scoring-call", args=[call.pk])
    response = scorer.get(url)
    assert response.status_code == 200
    # The default categories and lists are shown, and nothing is stored.
    assert response.context["form"]["cat1"].label == "Greeted the customer by name"
    assert "Appointment set" in [
        name for name, _ in response.context["form"].fields["call_end"].choices
    ]
    assert not Scorecard.objects.filter(account=world.north).exists()
    assert scorer.post(url, {"cat1": "on", "save": "1"})["Location"] == url
    scorecard = Scorecard.objects.get(account=world.north)
    assert scorecard.categories.count() == 10
    assert Score.objects.get(call=call).category_names[0] == (
        "Greeted the customer by name"
    )


def test_save_stays_on_the_call_and_a_second_save_keeps_a_revision(world, scorer):
    call = world.other_agent_call
    url = reverse("pages:scoring-call", args=[call.pk])
    assert scorer.post(url, {"cat2": "on", "save": "1"})["Location"] == url
    scorer.post(url, {"cat2": "on", "cat3": "on", "save": "1"})
    assert Score.objects.get(call=call).revisions.count() == 2
    form = scorer.get(url).context["form"]
    assert form["cat3"].value() is True
    assert form["cat1"].value() is False


def test_errors_show_inline_and_nothing_typed_is_lost(world, scorer):
    call = world.other_agent_call
    data = {
        "cat4": "on",
        "first_name": "x" * 46,
        "notes": "Long call, keep this.",
        "appointment_date": "2026-13-45",
        "call_end": "Appointment set",
    }
    response = scorer.post(reverse("pages:scoring-call", args=[call.pk]), data)
    assert response.status_code == 422
    form = response.context["form"]
    assert form["notes"].value() == "Long call, keep this."
    assert form["cat4"].value() is True
    assert form["call_end"].value() == "Appointment set"
    assert "at most 45 characters" in str(form.errors["first_name"])
    assert not Score.objects.filter(call=call).exists()
    # The service's own checks come back inline too.
    data["first_name"] = "Lee"
    response = scorer.post(reverse("pages:scoring-call", args=[call.pk]), data)
    assert response.status_code == 422
    assert response.context["form"].errors["appointment_date"] == [
        "The appointment date must be a valid date (YYYY-MM-DD)."
    ]
    assert 'id="id_appointment_date-error"' in response.content.decode()


def test_a_choice_outside_the_accounts_lists_is_refused_inline(world, scorer):
    response = scorer.post(
        reverse("pages:scoring-call", args=[world.other_agent_call.pk]),
        {"call_end": "Sold a boat", "alert": ["Nope"]},
    )
    assert response.status_code == 422
    assert set(response.context["form"].errors) == {"call_end", "alert"}


def test_an_appointment_call_end_without_the_appointment_date_is_refused_inline(
    world, scorer
):
    url = reverse("pages:scoring-call", args=[world.other_agent_call.pk])
    response = scorer.post(
        url, {"call_end": "Appointment set", "appointment_time": "10:30"}
    )
    assert response.status_code == 422
    assert response.context["form"].errors == {
        "appointment_date": [
            "The call end “Appointment set” needs the appointment date."
        ]
    }
    assert 'id="id_appointment_date-error"' in response.content.decode()
    assert not Score.objects.filter(call=world.other_agent_call).exists()
    # Another call end needs none, and the flag follows the scorecard's entry.
    assert scorer.post(url, {"call_end": "Voicemail"}).status_code == 302
    ScorecardChoice.objects.filter(
        scorecard__account=world.north, name="Voicemail"
    ).update(needs_appointment=True)
    assert scorer.post(url, {"call_end": "Voicemail"}).status_code == 422
    response = scorer.post(
        url, {"call_end": "Appointment set", "appointment_date": "2026-12-02"}
    )
    assert response.status_code == 302
    assert str(Score.objects.get(call=world.other_agent_call).appointment_date) == (
        "2026-12-02"
    )


def test_an_appointment_time_without_its_date_is_refused_inline(world, scorer):
    call = world.other_agent_call
    url = reverse("pages:scoring-call", args=[call.pk])
    response = scorer.post(url, {"call_end": "Voicemail", "appointment_time": "10:30"})
    assert response.status_code == 422
    assert response.context["form"].errors == {
        "appointment_date": ["Give the appointment's date with its time."]
    }
    assert response.context["form"]["appointment_time"].value() == "10:30"
    assert 'id="id_appointment_date-error"' in response.content.decode()
    assert not Score.objects.filter(call=call).exists()
    # A date without its time is fine.
    response = scorer.post(
        url, {"call_end": "Voicemail", "appointment_date": "2026-12-02"}
    )
    assert response.status_code == 302
    score = Score.objects.get(call=call)
    assert (str(score.appointment_date), score.appointment_time) == ("2026-12-02", None)


def test_an_email_that_is_not_an_email_and_years_that_are_not_years_are_refused_inline(
    world, scorer
):
    url = reverse("pages:scoring-call", args=[world.other_agent_call.pk])
    next_year = timezone.now().year + 1
    response = scorer.post(
        url,
        {
            "email": "sam at example",
            "current_year": "15",
            "called_on_year": str(next_year + 1),
        },
    )
    assert response.status_code == 422
    assert response.context["form"].errors == {
        "email": ["The email must be an email address."],
        "current_year": [
            f"The current year must be a year from 1886 to {next_year} (YYYY)."
        ],
        "called_on_year": [
            f"The called-on year must be a year from 1886 to {next_year} (YYYY)."
        ],
    }
    body = response.content.decode()
    for member in ("email", "current_year", "called_on_year"):
        assert f'id="id_{member}-error"' in body, member
    assert not Score.objects.filter(call=world.other_agent_call).exists()
    response = scorer.post(
        url,
        {
            "email": "sam@example.org",
            "current_year": "2015",
            "called_on_year": str(next_year),
        },
    )
    assert response.status_code == 302
    score = Score.objects.get(call=world.other_agent_call)
    assert (score.email, score.current_year, score.called_on_year) == (
        "sam@example.org",
        "2015",
        str(next_year),
    )


def test_skip_gives_the_call_back_to_the_queue(world, scorer):
    scorer.post(reverse("pages:scoring-next"))
    call = world.other_agent_call
    assert scorer.post(reverse("pages:scoring-skip", args=[call.pk]))[
        "Location"
    ] == reverse("pages:scoring-home")
    assert not ScoringClaim.objects.filter(call=call).exists()


def test_the_scorers_day_lists_todays_scores_with_counts_per_hour(world, scorer):
    response = scorer.get(reverse("pages:scoring-home"))
    assert response.context["scored_today"] == 1  # world.agent_call, scored just now
    assert response.context["waiting"] == 1
    assert [s.call_id for s in response.context["scores"]] == [world.agent_call.pk]
    Score.objects.filter(call=world.agent_call).update(
        scored_at=timezone.now() - timedelta(days=2)
    )
    assert scorer.get(reverse("pages:scoring-home")).context["scored_today"] == 0


@pytest.mark.parametrize("scored", [0, 20])
def test_scoring_pages_cost_the_same_queries_however_many_calls(
    world, scorer, scored, django_assert_max_num_queries
):
    for _ in range(scored):
        score_save(
            call=CallFactory(account=world.north),
            scorer=world.scorer,
            values={"cat1": True},
        )
    with django_assert_max_num_queries(10):
        assert scorer.get(reverse("pages:scoring-home")).status_code == 200
    with django_assert_max_num_queries(12):
        assert (
            scorer.get(
                reverse("pages:scoring-call", args=[world.agent_call.pk])
            ).status_code
            == 200
        )
