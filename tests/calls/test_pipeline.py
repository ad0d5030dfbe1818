"""Call setup from queue to final status, driven by the simulator's outcome rules."""

from datetime import timedelta

import pytest
from django.utils import timezone

from calls import services
from calls.models import (
    AttemptOutcome,
    Call,
    CallAttempt,
    CallStatus,
    DialingSettings,
    Leg,
    NoAgentPolicy,
    RingMode,
    SimulatedLeg,
    WorkerBeat,
)
from calls.pipeline import broker, dispatch
from calls.telephony.simulator import talk_seconds
from providers.telephony import Event, EventKind
from tests.accounts.factories import AccountFactory, TeamFactory
from tests.calls.harness import World
from tests.users.factories import agent

pytestmark = pytest.mark.django_db

LEAD = "+13035550123"


@pytest.fixture
def world(monkeypatch, django_capture_on_commit_callbacks):
    return World(monkeypatch, django_capture_on_commit_callbacks)


@pytest.fixture
def account():
    return AccountFactory(timezone="America/Denver")


def queue(world, account, phone=LEAD, **kwargs):
    return world.queue_call(
        account=account,
        phone=phone,
        received_at=timezone.now(),
        whisper="Sales lead. New 2025 Toyota Camry.",
        **kwargs,
    )


def settings_for(account, **values):
    return DialingSettings.objects.create(account=account, **values)


def legs(call, leg=None):
    attempts = CallAttempt.objects.filter(call=call).order_by("id")
    return list(attempts.filter(leg=leg) if leg else attempts)


def test_a_queued_call_rings_an_agent_whispers_and_bridges_the_lead(world, account):
    taker = agent(account, phone="+13035550140")

    call = queue(world, account)
    world.run()

    call.refresh_from_db()
    assert call.status == CallStatus.ANSWER
    assert call.agent == taker
    assert call.attempts == 1
    lead_leg = legs(call, Leg.LEAD)[0]
    # As long as the call's conversation takes to say (calls.telephony.simulator).
    assert call.duration == lead_leg.duration == talk_seconds(lead_leg.pk)
    assert 30 <= call.duration <= 300
    assert call.response_time is not None
    assert call.response_time >= 0
    assert call.recording_url.startswith("https://leads.example.test/calls/recordings/")
    assert call.ended_at is not None
    prompt = next(
        instruction
        for event, instruction in world.instructions
        if event.kind == EventKind.ANSWERED
    )
    assert prompt.say == "Sales lead. New 2025 Toyota Camry. Press 1 to be connected."
    assert prompt.gather
    agent_leg = legs(call, Leg.AGENT)[0]
    assert (agent_leg.outcome, agent_leg.key_pressed, agent_leg.number) == (
        AttemptOutcome.ACCEPTED,
        "1",
        "+13035550140",
    )
    assert agent_leg.ringing_at
    assert agent_leg.answered_at
    assert agent_leg.ended_at
    assert lead_leg.outcome == AttemptOutcome.ANSWERED
    assert lead_leg.number == LEAD


@pytest.mark.parametrize(
    ("first_phone", "outcome"),
    [
        ("+13035550000", AttemptOutcome.NOANSWER),
        ("+13035550001", AttemptOutcome.BUSY),
        ("+13035550002", AttemptOutcome.FAILED),
        ("+13035550003", AttemptOutcome.REFUSED),
    ],
)
def test_sequential_ringing_moves_on_when_an_agent_does_not_take_the_call(
    world, account, first_phone, outcome
):
    settings_for(account, ring_mode=RingMode.SEQUENTIAL)
    first = agent(account, phone=first_phone)
    second = agent(account, phone="+13035550141")

    call = queue(world, account)
    world.run()

    call.refresh_from_db()
    assert call.status == CallStatus.ANSWER
    assert call.agent == second
    offered = legs(call, Leg.AGENT)
    assert [(a.agent, a.outcome) for a in offered] == [
        (first, outcome),
        (second, AttemptOutcome.ACCEPTED),
    ]


def test_simultaneous_ringing_lets_the_first_to_press_one_win(world, account):
    settings_for(account, ring_mode=RingMode.SIMULTANEOUS)
    agents = [agent(account, phone=f"+1303555015{n}") for n in range(3)]

    call = queue(world, account)
    world.run()

    call.refresh_from_db()
    offered = legs(call, Leg.AGENT)
    assert len(offered) == 3
    assert call.status == CallStatus.ANSWER
    assert call.agent == agents[0]
    assert [a.outcome for a in offered] == [
        AttemptOutcome.ACCEPTED,
        AttemptOutcome.CANCELED,
        AttemptOutcome.CANCELED,
    ]
    assert len(legs(call, Leg.LEAD)) == 1


def test_without_press_one_answering_connects(world, account):
    settings_for(account, press_one_required=False)
    agent(account, phone="+13035550140")

    call = queue(world, account)
    world.run()

    call.refresh_from_db()
    assert call.status == CallStatus.ANSWER
    answered = next(
        instruction
        for event, instruction in world.instructions
        if event.kind == EventKind.ANSWERED
    )
    assert answered.connect
    assert answered.say == "Sales lead. New 2025 Toyota Camry."
    assert not any(event.kind == EventKind.DIGITS for event in world.delivered)


@pytest.mark.parametrize(
    ("lead_phone", "status"),
    [
        ("+13035550000", CallStatus.NOANSWER),
        ("+13035550001", CallStatus.BUSY),
        ("+13035550002", CallStatus.FAILED),
    ],
)
def test_the_lead_is_dialed_up_to_the_attempt_limit_then_the_call_ends(
    world, account, lead_phone, status, settings
):
    # At real time the gaps are the cadence itself (tests/calls/test_time_scale.py: scaled).
    settings.SIMULATOR_TIME_SCALE = 1.0
    settings_for(account, lead_attempt_limit=3, retry_cadence=[0, 120, 600])
    agent(account, phone="+13035550140")

    call = queue(world, account, phone=lead_phone)
    world.run()

    call.refresh_from_db()
    assert call.status == status
    assert call.attempts == 3
    assert len(legs(call, Leg.LEAD)) == 3
    assert call.response_time is None
    assert call.duration is None
    gaps = [round((at - timezone.now()).total_seconds()) for at in world.requeued_for]
    assert gaps[0] == pytest.approx(120, abs=5)
    assert gaps[1] == pytest.approx(600, abs=5)


def test_a_lead_that_hangs_up_at_once_is_answered_with_a_short_call(world, account):
    agent(account, phone="+13035550140")

    call = queue(world, account, phone="+13035550003")
    world.run()

    call.refresh_from_db()
    assert (call.status, call.duration, call.attempts) == (CallStatus.ANSWER, 1, 1)


def test_no_agent_in_schedule_waits_for_the_next_opening(world, account):
    now = timezone.now().astimezone(timezone.get_fixed_timezone(-420))
    hour = now.hour
    start = f"{(hour + 2) % 24:02d}:00"
    end = f"{(hour + 2) % 24:02d}:30"
    agent(account, phone="+13035550140", schedule=(start, end), tz="America/Phoenix")

    call = queue(world, account)
    world.step()  # the setup finds nobody

    call.refresh_from_db()
    assert call.status == CallStatus.QUEUED
    opening = call.next_attempt_at.astimezone(timezone.get_fixed_timezone(-420))
    assert (opening.hour, opening.minute) == ((hour + 2) % 24, 0)
    assert timedelta(0) < call.next_attempt_at - timezone.now() <= timedelta(hours=2)


def test_no_agent_ends_the_call_when_the_account_says_so(world, account):
    settings_for(account, no_agent_policy=NoAgentPolicy.END)

    call = queue(world, account)
    world.run()

    call.refresh_from_db()
    assert call.status == CallStatus.NOAGENT
    assert legs(call) == []


def test_a_call_nobody_takes_ends_as_noagent_after_the_rounds(world, account):
    settings_for(account, agent_rounds=2, agent_round_pause_seconds=0)
    agent(account, phone="+13035550003")
    agent(account, phone="+13035550000")

    call = queue(world, account)
    world.run()

    call.refresh_from_db()
    assert call.status == CallStatus.NOAGENT
    assert call.rounds == 2
    assert call.unanswered_rounds == 2
    assert len(legs(call, Leg.AGENT)) == 4


def test_a_team_call_is_offered_to_that_teams_agents_only(world, account):
    sales, service = TeamFactory(account=account), TeamFactory(account=account)
    agent(account, phone="+13035550140", teams=[sales])
    servicer = agent(account, phone="+13035550141", teams=[service])

    call = queue(world, account, team=service)
    world.run()

    call.refresh_from_db()
    assert call.agent == servicer
    assert [a.agent for a in legs(call, Leg.AGENT)] == [servicer]


def test_a_test_accounts_call_goes_to_the_simulator(world, settings):
    settings.TELEPHONY_PROVIDER = "twilio"
    account = AccountFactory(is_test=True)
    agent(account, phone="+13035550140")

    call = queue(world, account)
    world.run()

    call.refresh_from_db()
    assert call.is_test
    assert call.status == CallStatus.ANSWER
    assert {a.provider for a in legs(call)} == {"simulator"}


# --- idempotency and ordering ------------------------------------------------------------------


def test_setup_delivered_twice_offers_the_call_once(world, account):
    agent(account, phone="+13035550140")
    call = queue(world, account)

    world.step()
    services.call_setup(call_id=call.pk)

    assert len(legs(call, Leg.AGENT)) == 1
    assert len(world.dials) == 1


def test_a_dial_delivered_twice_rings_once(world, account):
    agent(account, phone="+13035550140")
    call = queue(world, account)
    world.step()
    attempt = legs(call, Leg.AGENT)[0]

    services.attempt_dial(attempt_id=attempt.pk)
    services.attempt_dial(attempt_id=attempt.pk)

    assert world.dials == [attempt.pk]


def test_duplicate_and_late_events_change_nothing(world, account):
    agent(account, phone="+13035550140")
    call = queue(world, account)
    world.run()
    call.refresh_from_db()
    lead_leg = legs(call, Leg.LEAD)[0]
    before = (
        call.status,
        call.duration,
        call.response_time,
        call.attempts,
        call.agent_id,
        lead_leg.ended_at,
    )

    for kind in (
        EventKind.COMPLETED,
        EventKind.RINGING,
        EventKind.ANSWERED,
        EventKind.NO_ANSWER,
        EventKind.BUSY,
    ):
        services.call_event(Event(lead_leg.pk, kind, duration=999))
    services.call_event(
        Event(legs(call, Leg.AGENT)[0].pk, EventKind.DIGITS, digits="1")
    )

    call.refresh_from_db()
    lead_leg.refresh_from_db()
    assert (
        call.status,
        call.duration,
        call.response_time,
        call.attempts,
        call.agent_id,
        lead_leg.ended_at,
    ) == before
    assert len(legs(call, Leg.LEAD)) == 1


def test_a_completion_that_arrives_before_the_answer_still_answers_the_call(
    world, account
):
    agent(account, phone="+13035550140")
    call = queue(world, account)
    while not legs(call, Leg.LEAD):
        world.step()
    lead_leg = legs(call, Leg.LEAD)[0]

    services.call_event(Event(lead_leg.pk, EventKind.COMPLETED, duration=42))
    services.call_event(Event(lead_leg.pk, EventKind.ANSWERED))

    call.refresh_from_db()
    assert (call.status, call.duration) == (CallStatus.ANSWER, 42)


def test_an_unknown_attempt_is_ignored():
    assert services.call_event(Event(987654, EventKind.ANSWERED)).hangup is False


def test_cancel_stops_a_call_that_is_not_connected(world, account):
    agent(account, phone="+13035550000")
    call = queue(world, account)
    world.step()

    assert services.call_cancel(call=call) is True
    world.run()

    call.refresh_from_db()
    assert call.status == CallStatus.CANCEL
    assert [a.outcome for a in legs(call)] == [AttemptOutcome.CANCELED]
    assert services.call_cancel(call=call) is False


def test_a_final_status_never_changes(world, account):
    call = queue(world, account)
    Call.objects.filter(pk=call.pk).update(status=CallStatus.NOAGENT)

    services.call_setup(call_id=call.pk)

    call.refresh_from_db()
    assert call.status == CallStatus.NOAGENT


# --- sweep ----------------------------------------------------------------------------------------


def test_sweep_redispatches_due_calls_and_redials_lost_dials(world, account):
    agent(account, phone="+13035550140")
    stuck = queue(world, account)
    world.queue.clear()  # the broker lost the dispatch: it came back as a new server
    WorkerBeat.objects.create(
        name="broker", token="an earlier run", beat_at=timezone.now()
    )
    later = timezone.now() + timedelta(minutes=5)

    counts = services.calls_sweep(now=later)

    assert counts["queued"] == 1
    world.run()
    stuck.refresh_from_db()
    assert stuck.status == CallStatus.ANSWER


def test_sweep_redials_an_attempt_whose_worker_died_before_dialing(
    world, account, monkeypatch
):
    agent(account, phone="+13035550140")
    call = queue(world, account)
    monkeypatch.setattr(
        dispatch, "_ring_agent", lambda *args: None
    )  # the worker died here
    world.step()
    monkeypatch.undo()
    world.__init__(monkeypatch, world.capture)  # re-install the stand-ins undone above

    counts = services.calls_sweep(now=timezone.now() + timedelta(minutes=1))

    assert counts["undialed"] == 1
    world.run()
    call.refresh_from_db()
    assert call.status == CallStatus.ANSWER


def test_sweep_times_out_legs_the_provider_went_silent_on(world, account):
    agent(account, phone="+13035550140")
    agent(account, phone="+13035550141")
    call = queue(world, account)
    world.step()
    world.queue.clear()  # every provider callback lost,
    SimulatedLeg.objects.all().delete()  # and the switch has no record to tell

    counts = services.calls_sweep(now=timezone.now() + timedelta(minutes=5))

    assert counts["silent"] == 1
    first = legs(call, Leg.AGENT)[0]
    assert first.outcome == AttemptOutcome.NOANSWER
    world.run()
    call.refresh_from_db()
    assert call.status == CallStatus.ANSWER


@pytest.mark.django_db(transaction=True)
def test_two_calls_set_up_at_once_never_ring_the_same_agent(monkeypatch):
    """Both setups see the one agent free; the row lock lets only one of them ring her."""
    import threading

    from django.db import connection

    from calls import routing
    from calls.telephony import simulator

    account = AccountFactory()
    agent(account, phone="+13035550140")
    calls = [
        Call.objects.create(account=account, phone=LEAD, received_at=timezone.now())
        for _ in range(2)
    ]
    monkeypatch.setattr(simulator, "_at", lambda seconds, event, **kwargs: None)
    monkeypatch.setattr(broker, "dispatch_setup", lambda call_id, at=None, **_: None)
    both_looked = threading.Barrier(2)
    looked_up = routing.agents_available

    def available_then_wait(**kwargs):
        found = looked_up(**kwargs)
        both_looked.wait(timeout=10)
        return found

    monkeypatch.setattr(dispatch, "agents_available", available_then_wait)

    def setup(call):
        try:
            services.call_setup(call_id=call.pk)
        finally:
            connection.close()

    threads = [threading.Thread(target=setup, args=(call,)) for call in calls]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(timeout=30)

    assert CallAttempt.objects.filter(leg=Leg.AGENT).count() == 1
    statuses = sorted(
        Call.objects.filter(pk__in=[c.pk for c in calls]).values_list(
            "status", flat=True
        )
    )
    assert statuses == [CallStatus.DIALING, CallStatus.QUEUED]
