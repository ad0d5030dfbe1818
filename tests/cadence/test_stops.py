"""The cadence stops at the first reply, appointment, opt-out or withdrawn consent, or
person taking over (an agent connected, a person's text, a person's stop on the call
page): every step not run yet is marked stopped with the reason, and a step already
handed to a worker then does nothing. Only the account's own lead is touched."""

from __future__ import annotations

from datetime import timedelta
from zoneinfo import ZoneInfo

import pytest
from django.urls import reverse
from django.utils import timezone

from appointments.models import Actor
from appointments.services import appointment_make
from cadence.models import PlannedStep, StepStatus
from cadence.services import step_run, steps_hand_over_due
from calls.models import Call, CallStatus, NoAgentPolicy
from tests.cadence.conftest import (
    AGENT,
    ANSWERS,
    LEAD,
    SENDER,
    dealer,
    lead_not_reached,
    make_due,
    statuses,
)
from tests.scoring.factories import in_role
from tests.users.factories import agent
from texting.inbound import text_receive
from texting.models import Text
from texting.services import text_reply_send

pytestmark = pytest.mark.django_db


@pytest.fixture
def receive(world):
    """A lead's text as Twilio posts it, committed."""
    sids = iter(range(1, 100))

    def received(body, *, sender=LEAD, to=SENDER):
        with world.capture(execute=True):
            return text_receive(
                to_number=to,
                from_number=sender,
                body=body,
                provider="twilio",
                provider_id=f"SM{next(sids)}",
            )

    return received


def stopped_with(account, reason: str) -> None:
    assert statuses(account) == [
        (position, StepStatus.STOPPED, reason) for position in range(6)
    ]


def test_a_reply_by_the_lead_stops_the_cadence(world, account, receive):
    lead_not_reached(world, account)
    receive("Is the blue one still there?")
    stopped_with(account, "The lead replied by text.")


def test_an_appointment_stops_the_cadence(world, account):
    call = lead_not_reached(world, account)
    appointment_make(
        call=call, starts_at=timezone.now() + timedelta(days=2), by=Actor.AGENT
    )
    stopped_with(account, "An appointment was made.")


def test_a_text_opt_out_stops_the_cadence(world, account, receive):
    lead_not_reached(world, account)
    receive("STOP")
    stopped_with(account, "The lead opted out of texts.")


def test_a_reply_that_reads_like_an_opt_out_stops_the_cadence(world, account, receive):
    lead_not_reached(world, account)
    receive("Please don't text me anymore")
    stopped_with(account, "The lead's reply may be an opt-out.")


def test_a_managers_do_not_call_mark_stops_the_cadence_at_its_next_step(
    world, account, client, handed
):
    call = lead_not_reached(world, account)
    client.force_login(in_role("Manager", accounts=[account]))
    response = client.post(
        reverse("pages:call-do-not-call", args=[call.pk]), {"reason": "On the phone"}
    )
    assert response.status_code == 302
    day1 = PlannedStep.objects.get(account=account, position=1)
    make_due(day1)
    steps_hand_over_due()
    calls = Call.objects.count()

    with world.capture(execute=True):
        assert step_run(step_id=day1.pk) == "stopped"

    assert Call.objects.count() == calls
    stopped_with(account, "The lead withdrew consent (Marked by a manager).")


def test_a_persons_text_stops_the_cadence(world, account):
    call = lead_not_reached(world, account)
    manager = in_role("Manager", accounts=[account])
    with world.capture(execute=True):
        text_reply_send(call=call, user=manager, body="Hi Sam, when suits you?")
    stopped_with(account, "A person texted the lead.")


def test_an_agent_connected_on_the_cadences_call_stops_the_rest(world, handed):
    account = dealer(agents=False)
    account.dialing_settings.no_agent_policy = NoAgentPolicy.END
    account.dialing_settings.save()
    missed = lead_not_reached(world, account, phone=ANSWERS)
    assert missed.status == CallStatus.NOAGENT
    agent(account, phone=AGENT)
    day1 = PlannedStep.objects.get(account=account, position=1)
    make_due(day1)
    steps_hand_over_due()

    with world.capture(execute=True):
        step_run(step_id=day1.pk)
    world.run()

    made = PlannedStep.objects.get(pk=day1.pk).made_call
    assert made is not None
    made.refresh_from_db()
    assert made.status == CallStatus.ANSWER
    assert [status for _, status, _ in statuses(account)] == [
        StepStatus.STOPPED,  # handed over with day 1, stopped before its turn
        StepStatus.DONE,
        *[StepStatus.STOPPED] * 4,
    ]
    assert statuses(account)[2][2] == "An agent reached the lead on a call."


def test_a_step_handed_over_and_then_stopped_does_nothing(world, account, receive):
    lead_not_reached(world, account)
    day3 = PlannedStep.objects.get(account=account, position=2)
    make_due(day3)
    steps_hand_over_due()
    receive("Not now, thanks")
    texts = Text.objects.count()

    assert step_run(step_id=day3.pk) == "done"
    assert Text.objects.count() == texts
    assert PlannedStep.objects.get(pk=day3.pk).status == StepStatus.STOPPED


def test_the_call_page_shows_the_next_step_and_a_person_stops_it(
    world, account, client
):
    call = lead_not_reached(world, account)
    PlannedStep.objects.filter(account=account, position=0).update(
        status=StepStatus.DONE
    )
    manager = in_role("Manager", accounts=[account], first_name="Dana", last_name="Q")
    client.force_login(manager)
    page = " ".join(
        client.get(reverse("pages:call-detail", args=[call.pk]))
        .content.decode()
        .split()
    )
    day1 = PlannedStep.objects.get(account=account, position=1)
    assert "Follow-up" in page
    assert "Next: <strong>call</strong> on " in page
    assert "(America/Denver), then 4 more steps." in page
    local = day1.due_at.astimezone(ZoneInfo("America/Denver"))
    assert f"{local:%a, %b} {local.day}, " in page

    response = client.post(reverse("pages:call-cadence-stop", args=[call.pk]))

    assert response.status_code == 302
    day1.refresh_from_db()
    assert (day1.status, day1.reason, day1.stopped_by) == (
        StepStatus.STOPPED,
        "Stopped by Dana Q on the call page.",
        manager,
    )
    assert PlannedStep.objects.filter(status=StepStatus.PLANNED).count() == 0
    page = client.get(reverse("pages:call-detail", args=[call.pk])).content.decode()
    assert "Stop the follow-up" not in page


def test_another_accounts_people_cannot_stop_it_and_stops_never_cross(
    world, receive, client
):
    north = dealer()
    south = dealer("Lakeside Honda", sender="+13035550998")
    north_call = lead_not_reached(world, north)
    lead_not_reached(world, south)
    client.force_login(in_role("Manager", accounts=[south]))

    refused = client.post(reverse("pages:call-cadence-stop", args=[north_call.pk]))
    receive("Who is this?", to="+13035550998")  # the lead replies to south only

    assert refused.status_code == 404
    assert {status for _, status, _ in statuses(north)} == {StepStatus.PLANNED}
    stopped_with(south, "The lead replied by text.")
