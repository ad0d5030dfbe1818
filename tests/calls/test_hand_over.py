"""Waiting calls and freed agents: a call no agent can take now waits without re-queueing
itself, and the moment an agent's leg ends the oldest waiting call that agent may take is
dispatched (first received, first dialed). At most one setup per call is pending; the sweep
sends another only when one was lost."""

import threading
from datetime import timedelta

import pytest
from django.db import connection, transaction
from django.utils import timezone

from calls import services, workers
from calls.models import Call, CallAttempt, CallStatus, Leg, WorkerBeat
from calls.pipeline import recovery, transitions
from providers.telephony import Event, EventKind
from tests.accounts.factories import AccountFactory
from tests.calls.harness import World
from tests.users.factories import agent

pytestmark = pytest.mark.django_db

LEAD = "+13035550123"


@pytest.fixture
def account():
    return AccountFactory(timezone="America/Denver")


@pytest.fixture
def sent(monkeypatch):
    """The call ids handed to the broker for setup, in order."""
    from calls.tasks import call_setup_task

    ids: list[int] = []
    monkeypatch.setattr(
        call_setup_task,
        "apply_async",
        lambda kwargs, **options: ids.append(kwargs["call_id"]),
    )
    return ids


def open_leg(taker, account):
    """``taker`` talking to a lead right now."""
    busy_with = Call.objects.create(
        account=account,
        phone="+13035550199",
        received_at=timezone.now(),
        status=CallStatus.ANSWER,
    )
    return CallAttempt.objects.create(
        call=busy_with,
        leg=Leg.AGENT,
        agent=taker,
        number=taker.phone_number,
        provider="simulator",
        dial_requested_at=timezone.now(),
    )


def waiting_call(account, received_at):
    return Call.objects.create(
        account=account,
        phone=LEAD,
        received_at=received_at,
        waiting_since=received_at,
        next_attempt_at=timezone.now() + timedelta(seconds=60),
    )


def test_a_setup_with_every_agent_busy_waits_without_queueing_itself_again(
    account, sent, django_capture_on_commit_callbacks
):
    taker = agent(account, phone="+13035550140")
    open_leg(taker, account)
    call = Call.objects.create(account=account, phone=LEAD, received_at=timezone.now())

    with django_capture_on_commit_callbacks(execute=True):
        services.call_setup(call_id=call.pk)

    call.refresh_from_db()
    assert call.status == CallStatus.QUEUED
    assert call.waiting_since is not None
    assert call.setup_dispatched_at is None
    assert sent == []  # it waits for the hand-over (the sweep looks again later)


def test_a_freed_agent_is_handed_the_oldest_waiting_call_at_once(
    account, sent, django_capture_on_commit_callbacks
):
    taker = agent(account, phone="+13035550140")
    leg = open_leg(taker, account)
    now = timezone.now()
    newer = waiting_call(account, now - timedelta(seconds=5))
    oldest = waiting_call(account, now - timedelta(seconds=20))
    waiting_call(account, now - timedelta(seconds=10))

    with django_capture_on_commit_callbacks(execute=True):
        services.call_event(Event(leg.pk, EventKind.COMPLETED))

    assert sent == [oldest.pk]
    oldest.refresh_from_db()
    assert oldest.setup_dispatched_at is not None
    # Handed over while its fallback recheck is still ahead: the setup takes it now.
    with django_capture_on_commit_callbacks(execute=True):
        services.call_setup(call_id=oldest.pk)
    oldest.refresh_from_db()
    newer.refresh_from_db()
    assert oldest.status == CallStatus.DIALING
    assert oldest.waiting_since is None
    assert newer.status == CallStatus.QUEUED
    assert CallAttempt.objects.get(call=oldest, leg=Leg.AGENT).agent == taker


def test_a_freed_agent_is_not_handed_a_call_waiting_out_a_retry(
    account, sent, django_capture_on_commit_callbacks
):
    taker = agent(account, phone="+13035550140")
    leg = open_leg(taker, account)
    Call.objects.create(  # the lead did not answer; the cadence says: again in 2 min
        account=account,
        phone=LEAD,
        received_at=timezone.now(),
        next_attempt_at=timezone.now() + timedelta(minutes=2),
    )

    with django_capture_on_commit_callbacks(execute=True):
        services.call_event(Event(leg.pk, EventKind.COMPLETED))

    assert sent == []


@pytest.mark.django_db(transaction=True)
def test_two_agents_freed_at_once_take_different_calls(monkeypatch, sent):
    account = AccountFactory()
    takers = [agent(account, phone=f"+1303555014{n}") for n in range(2)]
    now = timezone.now()
    calls = [waiting_call(account, now - timedelta(seconds=30 - n)) for n in range(3)]
    both_free = threading.Barrier(2)
    is_free = transitions.agent_free_with_calls_waiting

    def free_then_wait(**kwargs):
        answer = is_free(**kwargs)
        both_free.wait(timeout=10)
        return answer

    monkeypatch.setattr(transitions, "agent_free_with_calls_waiting", free_then_wait)
    handed: list[int | None] = []

    def free(taker):
        try:
            with transaction.atomic():
                handed.append(transitions.hand_over_to_agent(taker.pk))
        finally:
            connection.close()

    threads = [threading.Thread(target=free, args=(t,)) for t in takers]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(timeout=30)

    assert None not in handed
    assert sorted(pk for pk in handed if pk is not None) == [calls[0].pk, calls[1].pk]
    assert sorted(sent) == [calls[0].pk, calls[1].pk]


def test_the_sweep_sends_one_setup_per_call_and_another_only_once_it_was_lost(
    account, sent, django_capture_on_commit_callbacks
):
    agent(account, phone="+13035550140")
    with django_capture_on_commit_callbacks(execute=True):
        call = services.call_queue(
            account=account, phone=LEAD, received_at=timezone.now()
        )
    assert sent == [call.pk]
    now = timezone.now()

    # Waiting long in a queue is not lost: no second setup feeds the backlog.
    assert services.calls_sweep(now=now + timedelta(seconds=20))["queued"] == 0
    assert services.calls_sweep(now=now + timedelta(minutes=5))["queued"] == 0
    # A worker holding the calls queue's tasks died: every pending setup is sent again, once.
    WorkerBeat.objects.create(name="calls@dead", token="1", beat_at=now)
    later = now + workers.LOST_AFTER + timedelta(seconds=1)
    assert services.calls_sweep(now=later)["queued"] == 1
    assert services.calls_sweep(now=later)["queued"] == 0  # the new one is pending
    # Pending past PENDING_AT_MOST, lost without anyone seeing it: sent again.
    much_later = later + recovery.PENDING_AT_MOST + timedelta(seconds=1)
    assert services.calls_sweep(now=much_later)["queued"] == 1
    assert sent == [call.pk, call.pk, call.pk]


def test_the_lead_legs_of_a_busy_account_are_dialed_in_the_order_received(
    monkeypatch, django_capture_on_commit_callbacks, account
):
    world = World(monkeypatch, django_capture_on_commit_callbacks)
    agent(account, phone="+13035550140")
    first, second, third = (
        world.queue_call(account=account, phone=LEAD, received_at=timezone.now())
        for _ in range(3)
    )

    world.run()

    dialed = list(
        CallAttempt.objects.filter(leg=Leg.LEAD)
        .order_by("pk")
        .values_list("call_id", flat=True)
    )
    assert dialed == [first.pk, second.pk, third.pk]
    assert set(Call.objects.filter(pk__in=dialed).values_list("status", flat=True)) == {
        CallStatus.ANSWER
    }
