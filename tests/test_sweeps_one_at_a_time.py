"""The sweeps every worker sends again on reconnecting to the broker run one at a time
across the workers (core/locks.py): a run waits for the one under way and then runs, is
dropped if that one holds on too long, and a worker killed mid-sweep leaves no lock behind."""

import logging
import threading
import time

import psycopg
import pytest
from django.conf import settings
from django.db import connection

from calls.models import CallStatus
from calls.pipeline import broker
from calls.tasks import calls_sweep_task
from calls.telephony import simulator
from core import locks
from core.locks import lock_key
from core.tasks import effects_sweep_task
from emails.tasks import lead_emails_sweep_task
from leads.tasks import leads_sweep_task
from notify.tasks import messages_sweep_task
from tests.calls.legs import connected_call, switch_says
from texting.tasks import texts_sweep_task
from webhooks.tasks import webhooks_sweep_task

# (task, the service it runs, what it returns when another run is under way)
SWEEPS = [
    (calls_sweep_task, "calls.services.calls_sweep", {}),
    (leads_sweep_task, "leads.services.leads_sweep", 0),
    (webhooks_sweep_task, "webhooks.services.webhook_deliveries_sweep", 0),
    (texts_sweep_task, "texting.services.texts_sweep", 0),
    (messages_sweep_task, "notify.services.messages_sweep", 0),
    (lead_emails_sweep_task, "emails.services.lead_emails_sweep", 0),
    (effects_sweep_task, "core.outbox.effects_sweep", 0),
]

each_sweep = pytest.mark.parametrize(
    ("task", "service", "skipped"),
    SWEEPS,
    ids=[task.name.rsplit(".", 1)[1] for task, _, _ in SWEEPS],
)


def test_every_sweep_sent_on_reconnecting_is_one_at_a_time():
    """A sweep named in SWEEPS_ON_CONNECT and left out of SWEEPS would run once per worker."""
    guarded = {task.name for task, _, _ in SWEEPS}
    on_connect = {
        settings.CELERY_BEAT_SCHEDULE[name]["task"]
        for name in settings.SWEEPS_ON_CONNECT
    }
    assert on_connect == guarded


def other_session():
    """A second database session, as another worker process has."""
    params = connection.get_connection_params()
    return psycopg.connect(
        dbname=connection.settings_dict["NAME"],
        host=params.get("host"),
        port=params.get("port"),
        user=params.get("user"),
        autocommit=True,
    )


def holds(session, task) -> None:
    (taken,) = session.execute(
        "SELECT pg_try_advisory_lock(%s)", [lock_key(task.name)]
    ).fetchone()
    assert taken


@pytest.fixture
def looks(monkeypatch):
    """Each pause between two looks at a lock held elsewhere runs the fixture's hooks."""
    hooks: list = []
    monkeypatch.setattr(locks, "_pause", lambda seconds: [hook() for hook in hooks])
    return hooks


@pytest.mark.django_db
@each_sweep
def test_a_sweep_waits_for_the_run_under_way_then_runs(
    task, service, skipped, monkeypatch, looks
):
    ran: list[str] = []

    def sweep():
        ran.append("swept")
        return {"swept": 1}

    monkeypatch.setattr(service, sweep)
    with other_session() as worker:
        holds(worker, task)
        waited: list[bool] = []

        def the_other_run_ends():
            waited.append(not ran)
            worker.execute("SELECT pg_advisory_unlock(%s)", [lock_key(task.name)])

        looks.append(the_other_run_ends)
        assert task() == {"swept": 1}
        # It looked, did not run, then ran once the lock was free.
        assert waited == [True]
        assert ran == ["swept"]
        # This run let its lock go: the other worker can take it again.
        holds(worker, task)


@pytest.mark.django_db
@each_sweep
def test_a_sweep_is_dropped_when_the_run_under_way_holds_on(
    task, service, skipped, monkeypatch, caplog
):
    monkeypatch.setattr(locks, "WAIT_AT_MOST", 0.2)
    monkeypatch.setattr(service, lambda: pytest.fail("ran beside the other run"))
    with other_session() as worker:
        holds(worker, task)
        with caplog.at_level(logging.INFO, logger="core.locks"):
            first = task()
            assert first == skipped
            # Each skipped run answers with its own copy: changing one changes no other.
            if isinstance(first, dict):
                first["changed"] = 1
            assert task() == skipped
    assert [(r.event, r.event_fields["sweep"]) for r in caplog.records] == [
        ("sweep.skipped", task.name)
    ] * 2


@pytest.mark.django_db
def test_a_worker_killed_mid_sweep_leaves_no_lock_behind(monkeypatch):
    shipped_wait = locks.WAIT_AT_MOST
    monkeypatch.setattr(locks, "WAIT_AT_MOST", 0.0)
    monkeypatch.setattr("leads.services.leads_sweep", lambda: 1)
    with other_session() as worker:
        holds(worker, leads_sweep_task)
        assert leads_sweep_task() == 0
    # Its connection gone, as with a worker killed mid-sweep. The server's process for
    # that session lets the lock go as it exits, a moment after the client hangs up
    # (CI once looked in between), so the next run waits as a shipped run would.
    monkeypatch.setattr(locks, "WAIT_AT_MOST", shipped_wait)
    assert leads_sweep_task() == 1


@pytest.mark.django_db
def test_other_databases_run_every_sweep(monkeypatch):
    """The embedded default (SQLite) has no advisory locks: every run goes ahead."""
    monkeypatch.setattr(connection, "vendor", "sqlite")
    monkeypatch.setattr(
        connection, "cursor", lambda: pytest.fail("no statement for the lock")
    )
    monkeypatch.setattr("leads.services.leads_sweep", lambda: 1)
    assert leads_sweep_task() == 1


@pytest.fixture
def silent_call(monkeypatch):
    """A connected call whose two legs the provider went silent on an hour ago (its
    callbacks never arrive); the switch's record says both are still up."""
    monkeypatch.setattr(simulator, "_at", lambda *args, **kwargs: None)
    monkeypatch.setattr(broker, "dispatch_setup", lambda call_id, at=None, **_: None)
    call, agent_leg, lead_leg = connected_call()
    for leg in (agent_leg, lead_leg):
        switch_says(leg, answered_at=time.time() - 3000)
    return call, [agent_leg, lead_leg]


@pytest.mark.django_db(transaction=True)
def test_two_calls_sweeps_side_by_side_ask_the_provider_once_per_leg(
    silent_call, monkeypatch, looks
):
    """The case seen after a broker outage: two workers' sweeps on the same silent legs.
    The second starts while the first is asking the provider, waits for it, then finds
    both legs checked just now."""
    call, legs = silent_call
    asked: list[int] = []
    first_asks = threading.Event()
    second_waits = threading.Event()
    go_on = threading.Event()
    status = simulator.SimulatorProvider.leg_status

    def slow_status(self, *, attempt_id, **kwargs):
        asked.append(attempt_id)
        first_asks.set()
        go_on.wait(10)
        return status(self, attempt_id=attempt_id, **kwargs)

    monkeypatch.setattr(simulator.SimulatorProvider, "leg_status", slow_status)
    looks.append(second_waits.set)
    counts: dict[str, dict] = {}

    def sweep(name):
        try:
            counts[name] = calls_sweep_task()
        finally:
            connection.close()

    first = threading.Thread(target=sweep, args=("first",))
    second = threading.Thread(target=sweep, args=("second",))
    first.start()
    try:
        assert first_asks.wait(10)
        second.start()
        # Without the lock the second would be asking the provider by now, not waiting.
        assert second_waits.wait(10)
    finally:
        go_on.set()
        first.join(10)
        second.join(10)

    assert counts["first"]["silent"] == 2
    assert counts["second"]["silent"] == 0  # checked just now by the first
    assert sorted(asked) == sorted(leg.pk for leg in legs)
    # Both still up on the switch: each checked once, neither ended.
    for leg in legs:
        leg.refresh_from_db()
        assert leg.checked_at is not None
        assert leg.ended_at is None
    call.refresh_from_db()
    assert call.status == CallStatus.ANSWER
