"""A lead leg that never reached the provider is no dial of the lead (CONTRACT.md:
``callAttempts`` counts every dial of the lead). The probe's case: PostgreSQL was out of
reach while an agent pressed 1, the switch hung up on the agent before our answer came,
so the lead leg our answer created was never dialed. The sweep finds it silent and the
switch with no record of it: it is not settled as "no answer", not counted, and the lead
is dialed again as the account's limit and cadence allow."""

from datetime import timedelta

import pytest
from django.utils import timezone

from calls import services
from calls.models import (
    AttemptOutcome,
    CallAttempt,
    CallStatus,
    DialingSettings,
    Leg,
    SimulatedLeg,
)
from calls.telephony.simulator import talk_seconds
from providers.telephony import EventKind
from tests.accounts.factories import AccountFactory
from tests.calls.harness import World, dials_of
from tests.users.factories import agent

pytestmark = pytest.mark.django_db


@pytest.fixture
def world(monkeypatch, django_capture_on_commit_callbacks):
    return World(monkeypatch, django_capture_on_commit_callbacks)


def lead_legs(call):
    return list(CallAttempt.objects.filter(call=call, leg=Leg.LEAD).order_by("pk"))


def switch_hangs_up_before_our_answer_to_press_one(world, *, at_press):
    """Run the world until the ``at_press``-th key press is next; the switch has already
    hung up that agent's leg (our answer came too late), and the key press is delivered:
    the pipeline makes the lead leg, the switch has no agent leg to dial it from."""

    def key_press(item):
        return item.what == "event" and item.payload.kind == EventKind.DIGITS

    for presses in range(at_press):
        if presses:
            world.step()  # the key press before, answered in time
        press = world.run_until(key_press)
    SimulatedLeg.objects.filter(attempt_id=press.payload.attempt_id).update(
        ends_at=timezone.now() - timedelta(seconds=1), ended_by="completed"
    )
    world.step()


def sweep_once_the_legs_are_silent(world):
    """The periodic sweep, run after the lost-leg threshold (the switch sends nothing)."""
    with world.capture(execute=True):
        services.calls_sweep(now=timezone.now() + timedelta(minutes=5))


def test_a_lead_leg_never_dialed_is_no_attempt_and_the_lead_is_dialed_again(world):
    """With one dial allowed, the undialed leg used it up and ended the call NOANSWER
    with a lead who was never rung."""
    account = AccountFactory()
    DialingSettings.objects.create(account=account, lead_attempt_limit=1)
    agent(account, phone="+13035550140")
    call = world.queue_call(
        account=account, phone="+13035550123", received_at=timezone.now()
    )

    switch_hangs_up_before_our_answer_to_press_one(world, at_press=1)
    [never_dialed] = lead_legs(call)
    assert dials_of(never_dialed.pk) == 0
    sweep_once_the_legs_are_silent(world)
    call.refresh_from_db()
    assert call.attempts == 0
    assert call.status == CallStatus.QUEUED
    world.run()

    call.refresh_from_db()
    first, dialed = lead_legs(call)
    assert first.pk == never_dialed.pk
    assert first.outcome == AttemptOutcome.CANCELED  # hung up by us, never "no answer"
    assert first.ended_at is not None
    assert dials_of(first.pk) == 0
    assert dials_of(dialed.pk) == 1
    assert dialed.outcome == AttemptOutcome.ANSWERED
    assert call.status == CallStatus.ANSWER
    assert call.attempts == 1
    assert call.duration == talk_seconds(dialed.pk)
    assert call.ended_at is not None
    assert call.agent is not None
    assert not CallAttempt.objects.filter(call=call, ended_at__isnull=True).exists()


def test_a_lead_who_never_answers_is_dialed_to_the_limit_not_counting_an_undialed_leg(
    world,
):
    """Three dials allowed, the second accepted key press never reaches the switch: the
    lead is still dialed three times, and the call ends NOANSWER with three attempts."""
    account = AccountFactory()
    agent(account, phone="+13035550140")
    call = world.queue_call(
        account=account, phone="+13035550000", received_at=timezone.now()
    )

    switch_hangs_up_before_our_answer_to_press_one(world, at_press=2)
    sweep_once_the_legs_are_silent(world)
    world.run()

    call.refresh_from_db()
    legs = lead_legs(call)
    assert [leg.outcome for leg in legs] == [
        AttemptOutcome.NOANSWER,
        AttemptOutcome.CANCELED,
        AttemptOutcome.NOANSWER,
        AttemptOutcome.NOANSWER,
    ]
    assert [dials_of(leg.pk) for leg in legs] == [1, 0, 1, 1]
    assert call.status == CallStatus.NOANSWER
    assert call.attempts == 3
    assert call.ended_at is not None
    assert call.duration is None
    assert not CallAttempt.objects.filter(call=call, ended_at__isnull=True).exists()
