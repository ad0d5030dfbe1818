"""The call page: recording, lead, attempts, score, revisions, appointments; a manager
coaches, the agent reads the coaching on their own call and marks it read."""

from __future__ import annotations

from datetime import timedelta

import pytest
from django.urls import reverse
from django.utils import timezone

from appointments.models import Actor
from appointments.services import appointment_set_for_call
from scoring.models import Score
from scoring.services import coaching_save, score_save

pytestmark = pytest.mark.django_db


def page(client, call) -> str:
    response = client.get(reverse("pages:call-detail", args=[call.pk]))
    assert response.status_code == 200
    return " ".join(response.content.decode().split())  # white space collapsed


def test_the_call_page_shows_recording_lead_attempts_score_and_revisions(
    world, signed_in
):
    body = page(signed_in(world.manager), world.agent_call)
    assert (
        f'src="{world.agent_call.recording_url.removeprefix("https://leads.example.test")}"'
        in body
    )
    assert "Pat Buyer" in body
    assert "+13035550177" in body
    assert "Offered to Avery Lopez" in body
    assert "Agent pressed 1" in body
    assert "Dialed the lead +13035550177" in body
    assert "Lead answered" in body
    assert "✔</span><span>1. Greeted the customer by name" in body
    assert "✗</span><span>3. Confirmed the vehicle of interest" in body
    assert "Score by Sasha Scorer: first score" in body
    assert "Appointment set" in body


def test_a_manager_coaches_and_the_agent_reads_it_and_marks_it_read(
    world, signed_in, client
):
    call = world.agent_call
    manager = signed_in(world.manager)
    response = manager.post(
        reverse("pages:call-coach", args=[call.pk]), {"notes": "Ask for the trade-in."}
    )
    assert response.status_code == 302
    score = Score.objects.get(call=call)
    assert (score.coach_notes, score.coached_by) == (
        "Ask for the trade-in.",
        "Morgan Reyes",
    )
    # Revisions name what changed as a person reads it, never by field name; the coach
    # is named once, not listed among the changes.
    body = page(manager, call)
    assert "Coaching by Morgan Reyes: notes written</li>" in body
    assert "coached by" not in body
    manager.post(
        reverse("pages:call-coach", args=[call.pk]), {"notes": "Ask for it sooner."}
    )
    assert "Coaching by Morgan Reyes: notes changed</li>" in page(manager, call)
    coaching_save(call=call, coach=world.global_manager, notes="Ask for it sooner.")
    assert "notes taken over</li>" in page(manager, call)
    manager.post(reverse("pages:call-coach", args=[call.pk]), {"notes": ""})
    assert "Coaching by Morgan Reyes: notes cleared</li>" in page(manager, call)
    manager.post(
        reverse("pages:call-coach", args=[call.pk]), {"notes": "Ask for the trade-in."}
    )
    score_save(call=call, scorer=world.scorer, values={"cat3": True, "wow": False})
    assert (
        "Score by Sasha Scorer: category 3 (Confirmed the vehicle of interest), wow"
        in page(manager, call)
    )

    agent = signed_in(world.agent)
    body = page(agent, call)
    assert "Ask for the trade-in." in body
    assert "Mark as read" in body
    assert "Save coaching" not in body  # an agent reads, never writes
    assert (
        agent.post(
            reverse("pages:call-coach", args=[call.pk]), {"notes": "Mine"}
        ).status_code
        == 302
    )
    assert Score.objects.get(call=call).coach_notes == "Ask for the trade-in."
    agent.post(reverse("pages:call-coaching-read", args=[call.pk]))
    assert Score.objects.get(call=call).coaching_read_at is not None
    assert "Mark as read" not in page(agent, call)


def test_coaching_an_unscored_call_says_why_it_cannot(world, signed_in):
    manager = signed_in(world.manager)
    call = world.other_agent_call
    assert "A call is coached once it is scored." in page(manager, call)
    response = manager.post(
        reverse("pages:call-coach", args=[call.pk]), {"notes": "x"}, follow=True
    )
    assert "Only a scored call can be coached." in response.content.decode()


def test_a_scorer_reads_but_does_not_coach(world, signed_in):
    body = page(signed_in(world.scorer), world.agent_call)
    assert "Save coaching" not in body
    assert "Change the score" in body


def test_another_agent_of_the_account_cannot_mark_the_coaching_read(world, signed_in):
    coaching_save(call=world.agent_call, coach=world.manager, notes="Slow down.")
    # The other agent cannot even see the call: 404 (tests/pages/test_access.py); and a
    # manager who can see it does not mark it read for the agent.
    signed_in(world.manager).post(
        reverse("pages:call-coaching-read", args=[world.agent_call.pk])
    )
    assert Score.objects.get(call=world.agent_call).coaching_read_at is None


@pytest.mark.parametrize("revisions", [1, 15])
def test_the_call_page_costs_the_same_queries_however_many_revisions(
    world, signed_in, revisions, django_assert_max_num_queries
):
    first = timezone.now() + timedelta(days=1)
    for n in range(revisions):
        coaching_save(call=world.agent_call, coach=world.manager, notes=f"Note {n}")
        # Each time moves the one before: as many appointments, twice as many changes.
        appointment_set_for_call(
            call=world.agent_call,
            starts_at=first + timedelta(hours=n),
            by=Actor.MANAGER,
            by_user=world.manager,
        )
    client = signed_in(world.manager)
    # 17: the appointment card reads the appointments (with who set them) and their
    # changes (with who made them), two queries whatever their number; the follow-up card
    # its next planned step and the spoken-revocation card its suggestion, one each.
    with django_assert_max_num_queries(17):
        page(client, world.agent_call)
