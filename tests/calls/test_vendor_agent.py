"""A call whose agent is not a user (click-to-call naming an agent of the vendor's system):
rung at the number given, at once, for every round and every retry of the lead."""

from datetime import timedelta

import pytest
from django.utils import timezone

from calls import services
from calls.models import (
    AttemptOutcome,
    Call,
    CallAttempt,
    CallOrigin,
    CallStatus,
    DialingSettings,
    Leg,
    NoAgentPolicy,
    RingMode,
)
from calls.payloads import agent_object, call_object
from providers.telephony import Event, EventKind
from tests.accounts.factories import AccountFactory
from tests.calls.harness import World
from tests.users.factories import agent

pytestmark = pytest.mark.django_db

LEAD = "+13035550123"
VENDOR_AGENT = "+13035550142"


@pytest.fixture
def world(monkeypatch, django_capture_on_commit_callbacks):
    return World(monkeypatch, django_capture_on_commit_callbacks)


@pytest.fixture
def account():
    return AccountFactory(timezone="America/Denver")


def queue_for_vendor_agent(
    world, account, *, number=VENDOR_AGENT, vendor_agent_id="crm-417", phone=LEAD
):
    return world.queue_call(
        account=account,
        phone=phone,
        received_at=timezone.now(),
        origin=CallOrigin.CLICK_TO_CALL,
        vendor_agent_id=vendor_agent_id,
        agent_number=number,
        whisper="Click to call: Pat Lee.",
    )


def legs(call, leg):
    return list(CallAttempt.objects.filter(call=call, leg=leg).order_by("id"))


def agent_legs(call):
    return [(a.agent, a.number, a.outcome) for a in legs(call, Leg.AGENT)]


def test_an_answered_call_rings_the_vendor_agent_and_shows_their_id(world, account):
    call = queue_for_vendor_agent(world, account)
    world.run()

    call.refresh_from_db()
    assert call.status == CallStatus.ANSWER
    assert call.agent is None
    assert call.vendor_agent_id == "crm-417"
    assert call.attempts == 1
    assert call.duration
    assert call.response_time is not None
    assert agent_legs(call) == [(None, VENDOR_AGENT, AttemptOutcome.ACCEPTED)]
    agent_leg = legs(call, Leg.AGENT)[0]
    assert agent_leg.key_pressed == "1"
    assert agent_leg.ended_at
    [lead_leg] = legs(call, Leg.LEAD)
    assert (lead_leg.number, lead_leg.outcome) == (LEAD, AttemptOutcome.ANSWERED)
    assert call.agent_shown == "crm-417"
    # The webhooks' objects: the call names the agent; there is no user to describe.
    assert call_object(call)["agent"] == "crm-417"
    assert agent_object(call.agent, account.organization_id) is None


def test_without_a_vendor_id_the_agent_is_shown_as_their_number(world, account):
    call = queue_for_vendor_agent(world, account, vendor_agent_id="")
    world.run()

    call.refresh_from_db()
    assert call.status == CallStatus.ANSWER
    assert call.agent_shown == call_object(call)["agent"] == VENDOR_AGENT


def test_the_vendor_agent_is_rung_at_once_whatever_the_schedules_and_other_calls(
    world, account
):
    """No user of the account is on duty and an older lead's call waits for one; the same
    vendor agent is on another call already. Neither holds the call back."""
    settings = DialingSettings.objects.create(
        account=account, no_agent_policy=NoAgentPolicy.WAIT
    )
    hour = timezone.now().astimezone(timezone.get_fixed_timezone(-420)).hour
    later = f"{(hour + 2) % 24:02d}:00", f"{(hour + 2) % 24:02d}:30"
    agent(account, phone="+13035550140", schedule=later, tz="America/Phoenix")
    waiting = world.queue_call(account=account, phone=LEAD, received_at=timezone.now())
    world.step()
    waiting.refresh_from_db()
    assert waiting.status == CallStatus.QUEUED
    assert waiting.waiting_since

    first = queue_for_vendor_agent(world, account, phone="+13035550124")
    second = queue_for_vendor_agent(world, account, phone="+13035550125")
    world.step()
    world.step()

    assert settings.ring_mode == RingMode.SEQUENTIAL
    for call in (first, second):
        call.refresh_from_db()
        assert call.status == CallStatus.DIALING
        assert call.rounds == 1
        [leg] = legs(call, Leg.AGENT)
        assert (leg.agent, leg.number, leg.ended_at) == (None, VENDOR_AGENT, None)
    assert not legs(waiting, Leg.AGENT)


@pytest.mark.parametrize(
    ("number", "outcome"),
    [
        ("+13035550000", AttemptOutcome.NOANSWER),
        ("+13035550001", AttemptOutcome.BUSY),
        ("+13035550003", AttemptOutcome.REFUSED),
    ],
)
@pytest.mark.parametrize("ring_mode", [RingMode.SEQUENTIAL, RingMode.SIMULTANEOUS])
def test_a_vendor_agent_who_does_not_take_the_call_ends_it_noagent_after_the_rounds(
    world, account, number, outcome, ring_mode
):
    DialingSettings.objects.create(
        account=account,
        ring_mode=ring_mode,
        agent_rounds=3,
        agent_round_pause_seconds=0,
    )
    # A user on duty is never offered the call instead.
    agent(account, phone="+13035550140")

    call = queue_for_vendor_agent(world, account, number=number)
    world.run()

    call.refresh_from_db()
    assert call.status == CallStatus.NOAGENT
    assert (call.rounds, call.unanswered_rounds, call.attempts) == (3, 3, 0)
    assert agent_legs(call) == [(None, number, outcome)] * 3
    assert [leg.round for leg in legs(call, Leg.AGENT)] == [1, 2, 3]
    assert legs(call, Leg.LEAD) == []


def test_a_lead_who_does_not_answer_is_retried_through_the_same_vendor_agent(
    world, account
):
    DialingSettings.objects.create(
        account=account, lead_attempt_limit=3, retry_cadence=[0, 120, 600]
    )
    agent(account, phone="+13035550140")

    call = queue_for_vendor_agent(world, account, phone="+13035550000")
    world.run()

    call.refresh_from_db()
    assert call.status == CallStatus.NOANSWER
    assert call.attempts == 3
    assert call.rounds == 3
    assert agent_legs(call) == [(None, VENDOR_AGENT, AttemptOutcome.ACCEPTED)] * 3
    assert [(leg.number, leg.outcome) for leg in legs(call, Leg.LEAD)] == [
        ("+13035550000", AttemptOutcome.NOANSWER)
    ] * 3
    assert call.agent is None
    assert call.agent_shown == "crm-417"


def test_a_vendor_agents_call_is_cancelled_while_ringing_not_once_they_took_it(
    world, account
):
    ringing = queue_for_vendor_agent(world, account, number="+13035550000")
    world.step()  # the setup rings the vendor agent, who never answers
    taken = queue_for_vendor_agent(world, account, phone="+13035550000")
    while not legs(taken, Leg.LEAD):
        world.step()

    assert services.call_cancel(call=ringing) is True
    assert services.call_cancel(call=taken) is False
    world.run()

    ringing.refresh_from_db()
    taken.refresh_from_db()
    assert ringing.status == CallStatus.CANCEL
    assert [leg.outcome for leg in legs(ringing, Leg.AGENT)] == [
        AttemptOutcome.CANCELED
    ]
    assert taken.status == CallStatus.NOANSWER  # its lead never answers


def test_a_repeated_answer_or_press_one_dials_the_lead_once(world, account):
    call = queue_for_vendor_agent(world, account)
    while not legs(call, Leg.LEAD):
        world.step()
    agent_leg = legs(call, Leg.AGENT)[0]

    pressed = services.call_event(Event(agent_leg.pk, EventKind.DIGITS, digits="1"))
    answered = services.call_event(Event(agent_leg.pk, EventKind.ANSWERED))

    assert not pressed.connect
    assert not answered.connect
    assert len(legs(call, Leg.LEAD)) == 1
    call.refresh_from_db()
    assert call.status == CallStatus.DIALING
    assert call.attempts == 1
    world.run()
    call.refresh_from_db()
    assert call.status == CallStatus.ANSWER
    assert len(legs(call, Leg.LEAD)) == 1


def test_a_free_user_is_never_handed_a_vendor_agents_call(world, account):
    user = agent(account, phone="+13035550140")
    call = queue_for_vendor_agent(world, account)
    # Waiting out a lead's retry that fell due, left to the sweep.
    Call.objects.filter(pk=call.pk).update(
        next_attempt_at=timezone.now() - timedelta(seconds=1),
        setup_dispatched_at=None,
    )

    assert services.agents_on_duty_hand_over(agent_ids=[user.pk], account_ids=[]) == []
    call.refresh_from_db()
    assert call.setup_dispatched_at is None
