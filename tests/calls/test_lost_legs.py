"""Legs we heard nothing of are settled from the provider's own record, never guessed: a
leg still up stays up (its agent busy), one that ended is ended as it did, one the
provider never placed is hung up first. A late answer for a lead leg already given up
answers the call instead of dialing the lead again."""

import time
from datetime import timedelta

import pytest
from django.utils import timezone

from calls import services
from calls.models import (
    AttemptOutcome,
    Call,
    CallAttempt,
    CallStatus,
    Leg,
)
from calls.pipeline import broker
from calls.telephony import simulator
from providers.telephony import Event, EventKind, Instruction
from tests.calls.legs import LEAD, connected_call, switch_says
from webhooks.models import WebhookEvent
from webhooks.services import webhook_endpoint_create

pytestmark = pytest.mark.django_db


@pytest.fixture(autouse=True)
def no_callbacks(monkeypatch):
    """The simulator's callbacks never arrive (their worker is gone); hang-ups are noted."""
    hangups: list[int] = []
    monkeypatch.setattr(simulator, "_at", lambda *args, **kwargs: None)
    monkeypatch.setattr(
        simulator.SimulatorProvider,
        "hangup",
        lambda self, *, provider_id, attempt_id: hangups.append(attempt_id),
    )
    monkeypatch.setattr(broker, "dispatch_setup", lambda call_id, at=None, **_: None)
    return hangups


def test_a_silent_leg_the_switch_says_is_still_up_stays_up(no_callbacks):
    call, agent_leg, lead_leg = connected_call()
    switch_says(agent_leg, answered_at=time.time() - 3000)
    switch_says(lead_leg, answered_at=time.time() - 3000)

    counts = services.calls_sweep()

    assert counts["silent"] == 2
    call.refresh_from_db()
    lead_leg.refresh_from_db()
    agent_leg.refresh_from_db()
    assert call.status == CallStatus.ANSWER  # the lead's answer, read from the record
    assert lead_leg.ended_at is None
    assert lead_leg.checked_at is not None
    assert agent_leg.ended_at is None  # the agent stays busy: the call is live
    assert no_callbacks == []
    # Checked just now: the next sweep leaves them alone.
    assert services.calls_sweep()["silent"] == 0


def test_a_silent_answered_call_is_finished_from_the_switchs_record(no_callbacks):
    call, agent_leg, lead_leg = connected_call()
    ended = time.time() - 60
    switch_says(
        lead_leg,
        answered_at=ended - 95,
        ends_at=ended,
        ended_by="completed",
        duration=95,
    )
    switch_says(agent_leg, answered_at=ended - 120, ends_at=ended, ended_by="completed")

    services.calls_sweep()

    call.refresh_from_db()
    assert call.status == CallStatus.ANSWER
    assert call.duration == 95
    assert call.ended_at is not None
    assert not CallAttempt.objects.filter(call=call, ended_at__isnull=True).exists()
    assert no_callbacks == []


def test_a_lead_leg_the_switch_never_placed_is_hung_up_before_it_is_given_up(
    no_callbacks,
):
    call, agent_leg, lead_leg = connected_call()
    switch_says(agent_leg, answered_at=time.time() - 3000)  # no record of the lead leg

    services.calls_sweep()

    lead_leg.refresh_from_db()
    call.refresh_from_db()
    # Never placed: no dial, so no "no answer" and no attempt (test_undialed_lead_legs).
    assert lead_leg.outcome == AttemptOutcome.CANCELED
    assert lead_leg.ended_at is not None
    assert lead_leg.pk in no_callbacks  # hung up (its agent's leg too) first
    assert call.attempts == 0
    assert call.status == CallStatus.QUEUED  # dialed again: a new leg
    assert call.next_attempt_at is not None
    assert call.next_attempt_at <= timezone.now()


def test_an_answered_lead_whose_record_is_gone_is_ended_at_the_last_moment_known(
    no_callbacks, settings
):
    """The provider forgot a call in talk (the probe: Redis lost with the simulator's records
    in it): the answered leg is never settled as not answered, and the call gets its end,
    a duration to the last moment known, marked estimated, and ``call_completed``."""
    call, agent_leg, lead_leg = connected_call()
    answered = timezone.now() - timedelta(minutes=50)
    last_checked = answered + timedelta(seconds=70)
    CallAttempt.objects.filter(pk=lead_leg.pk).update(
        answered_at=answered, checked_at=last_checked
    )
    Call.objects.filter(pk=call.pk).update(status=CallStatus.ANSWER)
    switch_says(agent_leg, answered_at=time.time() - 3000)  # no record of the lead leg
    settings.WEBHOOK_ALLOWED_ADDRESSES = ["127.0.0.1"]
    webhook_endpoint_create(
        organization=call.account.organization, url="https://127.0.0.1:9/hook"
    )

    services.calls_sweep()

    call.refresh_from_db()
    lead_leg.refresh_from_db()
    assert lead_leg.outcome == AttemptOutcome.ANSWERED
    assert call.status == CallStatus.ANSWER
    assert call.ended_at is not None
    assert call.duration == 70
    assert call.end_estimated is True
    assert CallAttempt.objects.filter(call=call, leg=Leg.LEAD).count() == 1
    assert WebhookEvent.objects.filter(
        subject=f"call:{call.pk}", type="call_completed"
    ).exists()


def test_an_answered_call_whose_leg_ended_behind_its_back_is_finished_by_the_sweep(
    no_callbacks,
):
    """An answered call with its lead leg ended but no end of its own (as an answered leg
    settled as unanswered left it) is finished by the sweep, from the leg."""
    call, agent_leg, lead_leg = connected_call()
    answered = timezone.now() - timedelta(minutes=10)
    CallAttempt.objects.filter(pk=lead_leg.pk).update(
        answered_at=answered,
        ended_at=answered + timedelta(seconds=42),
        outcome=AttemptOutcome.NOANSWER,
    )
    CallAttempt.objects.filter(pk=agent_leg.pk).update(ended_at=timezone.now())
    Call.objects.filter(pk=call.pk).update(status=CallStatus.ANSWER)

    counts = services.calls_sweep()

    call.refresh_from_db()
    assert counts["answered_finished"] == 1
    assert call.ended_at == answered + timedelta(seconds=42)
    assert call.duration == 42
    assert call.end_estimated is True
    assert services.calls_sweep()["answered_finished"] == 0


def test_a_late_answer_for_a_lead_leg_given_up_answers_the_call_instead_of_a_retry(
    no_callbacks,
):
    call, agent_leg, lead_leg = connected_call()
    services.call_event(Event(lead_leg.pk, EventKind.NO_ANSWER))
    call.refresh_from_db()
    assert call.status == CallStatus.QUEUED
    assert call.next_attempt_at is not None

    services.call_event(Event(lead_leg.pk, EventKind.COMPLETED, duration=40))

    call.refresh_from_db()
    lead_leg.refresh_from_db()
    assert call.status == CallStatus.ANSWER
    assert call.duration == 40
    assert call.agent_id == agent_leg.agent_id
    assert lead_leg.outcome == AttemptOutcome.ANSWERED
    assert CallAttempt.objects.filter(call=call, leg=Leg.LEAD).count() == 1
    # The retry that was waiting finds nothing to do.
    services.call_setup(call_id=call.pk)
    assert CallAttempt.objects.filter(call=call).count() == 2


def test_a_connect_cut_off_half_way_leaves_no_lead_leg_ringing_for_ever(monkeypatch):
    """The worker lost the broker and cancelled the task connecting the lead, after the
    switch noted the dial: the switch's record is whole or absent, never a leg placed with
    no end, which the sweep would find live for ever."""
    _call, agent_leg, lead_leg = connected_call()

    def cut_off(*args, **kwargs):
        raise SystemExit("task cancelled")

    monkeypatch.setattr(simulator.SimulatorProvider, "_ring", cut_off)
    with pytest.raises(SystemExit):
        simulator.SimulatorProvider().follow(
            attempt_id=agent_leg.pk,
            instruction=Instruction(
                connect=True, lead_attempt_id=lead_leg.pk, number=LEAD
            ),
        )

    assert (
        simulator.SimulatorProvider().leg_status(provider_id="", attempt_id=lead_leg.pk)
        is None
    )  # never placed: the sweep hangs it up and the lead is dialed again
