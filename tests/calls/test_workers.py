"""A pending setup or dial is sent again only when what held it was lost: a worker that died
(stopped beating, or came back as a new process without signing off), a worker that lost
the broker, or a broker that came back as a new server. Waiting in a long queue is not
being lost, so an overload never feeds itself."""

from datetime import timedelta

import pytest
from django.utils import timezone

from calls import services, workers
from calls.models import CallAttempt, Leg, WorkerBeat
from calls.pipeline import broker, recovery
from tests.accounts.factories import AccountFactory
from tests.users.factories import agent

pytestmark = pytest.mark.django_db


@pytest.fixture
def dials(monkeypatch):
    """Dial tasks handed to the broker (recorded, never run)."""
    sent: list[int] = []
    monkeypatch.setattr(
        "calls.tasks.attempt_dial_task.apply_async",
        lambda *, kwargs, **options: sent.append(kwargs["attempt_id"]),
    )
    return sent


@pytest.fixture
def undialed_leg():
    """An agent leg created by a setup and not dialed yet."""
    account = AccountFactory()
    taker = agent(account, phone="+13035550140")
    from calls.models import Call

    call = Call.objects.create(
        account=account, phone="+13035550123", received_at=timezone.now()
    )
    return CallAttempt.objects.create(
        call=call,
        leg=Leg.AGENT,
        agent=taker,
        number=taker.phone_number,
        provider="simulator",
    )


def test_a_worker_beating_holds_its_tasks_and_a_silent_one_loses_them_once():
    now = timezone.now()
    workers.worker_started(name="calls@a")
    assert workers.losses_take(now=now) is False
    assert workers.losses_take(now=now + workers.LOST_AFTER / 2) is False

    later = now + workers.LOST_AFTER + timedelta(seconds=1)
    assert workers.losses_take(now=later) is True
    assert workers.losses_take(now=later) is False  # each loss is answered once
    assert not WorkerBeat.objects.filter(name="calls@a").exists()


def test_a_worker_back_as_a_new_process_without_signing_off_lost_its_tasks():
    workers.worker_started(name="calls@a")
    WorkerBeat.objects.filter(name="calls@a").update(
        token="12345"
    )  # an earlier process

    workers.worker_started(name="calls@a")

    assert workers.losses_take() is True
    assert WorkerBeat.objects.get(name="calls@a").lost is False  # it beats on


def test_a_worker_stopping_cleanly_loses_nothing_unless_it_could_not_put_tasks_back(
    monkeypatch,
):
    workers.worker_started(name="calls@a")
    workers.worker_stopped(name="calls@a")
    assert workers.losses_take() is False
    assert not WorkerBeat.objects.filter(name="calls@a").exists()

    workers.worker_started(name="calls@b")
    monkeypatch.setattr(workers.unrestored, "is_set", lambda: True)
    workers.worker_stopped(name="calls@b")
    assert workers.losses_take() is True


def test_a_worker_that_lost_the_broker_may_have_lost_its_tasks():
    workers.worker_started(name="calls@a")
    workers.worker_reconnected(name="calls@a")
    assert workers.losses_take() is True


def test_a_broker_back_as_a_new_server_lost_its_tasks(monkeypatch):
    identity = ["run-1"]
    monkeypatch.setattr(workers, "broker_identity", lambda app: identity[0])
    assert workers.losses_take() is False
    identity[0] = "run-2"
    assert workers.losses_take() is True
    assert workers.losses_take() is False


def test_the_broker_identity_is_the_redis_servers_run_id():
    from config.broker import broker_identity
    from config.celery import app

    first = broker_identity(app)
    assert first
    assert first == broker_identity(app)


def test_a_dial_waiting_in_the_queue_is_never_sent_twice_and_a_lost_one_is(
    undialed_leg, dials
):
    broker.dispatch_dial(undialed_leg.pk)
    assert dials == [undialed_leg.pk]
    now = timezone.now()

    assert services.calls_sweep(now=now + timedelta(minutes=5))["undialed"] == 0
    WorkerBeat.objects.create(name="calls@dead", token="1", beat_at=now)
    lost = now + workers.LOST_AFTER + timedelta(seconds=1)
    assert services.calls_sweep(now=lost)["undialed"] == 1
    assert services.calls_sweep(now=lost)["undialed"] == 0
    assert dials == [undialed_leg.pk, undialed_leg.pk]


def test_a_leg_whose_setup_died_before_ringing_it_is_dialed_by_the_sweep(
    undialed_leg, dials
):
    now = timezone.now()
    assert services.calls_sweep(now=now)["undialed"] == 0  # its setup may ring it yet
    later = now + recovery.UNDIALED_AFTER + timedelta(seconds=1)
    assert services.calls_sweep(now=later)["undialed"] == 1
    assert dials == [undialed_leg.pk]


def test_a_dial_whose_publish_failed_is_left_to_the_sweep(undialed_leg, monkeypatch):
    def broker_down(*, kwargs, **options):
        raise ConnectionError("broker down")

    monkeypatch.setattr("calls.tasks.attempt_dial_task.apply_async", broker_down)
    monkeypatch.setattr("core.handover.breaker.allow", lambda: True)
    broker.dispatch_dial(undialed_leg.pk)
    undialed_leg.refresh_from_db()
    assert undialed_leg.dial_dispatched_at is None


def test_a_lost_setup_is_sent_again_however_young_its_call(monkeypatch):
    """The loss is answered once: a setup pending for a call created a moment before the
    sweep (CI saw it: the broker came back and swept within 5 s of the lead) is sent again
    with the rest, not left for PENDING_AT_MOST."""
    sent: list[int] = []
    monkeypatch.setattr(
        "calls.tasks.call_setup_task.apply_async",
        lambda *, kwargs, **options: sent.append(kwargs["call_id"]),
    )
    from calls.models import Call

    now = timezone.now()
    call = Call.objects.create(
        account=AccountFactory(),
        phone="+13035550123",
        received_at=now,
        setup_dispatched_at=now,
    )
    fresh = Call.objects.create(
        account=call.account, phone="+13035550124", received_at=now
    )
    WorkerBeat.objects.create(name="calls@dead", token="1", beat_at=now)
    WorkerBeat.objects.filter(name="calls@dead").update(lost=True)

    assert services.calls_sweep(now=now + timedelta(seconds=1))["queued"] == 1
    assert sent == [call.pk]  # the one the intake is still handing over is left to it
    assert Call.objects.get(pk=fresh.pk).setup_dispatched_at is None
