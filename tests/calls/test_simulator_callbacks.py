"""The simulated switch's callbacks: those of one moment travel in one task, applied in
order; a ring due at once is applied by the process that dialed, once the dial commits."""

import pytest
from django.db import OperationalError

from calls import tasks
from calls.models import CallAttempt, SimulatedLeg
from calls.telephony import simulator
from providers.telephony import Event, EventKind
from tests.accounts.factories import AccountFactory
from tests.calls.harness import agent_leg

pytestmark = pytest.mark.django_db


@pytest.fixture
def published(monkeypatch):
    sent: list[tuple[str, dict]] = []

    def publish(task, *, kwargs, **options):
        sent.append((task.name, kwargs))
        return True

    monkeypatch.setattr(simulator, "publish_or_leave_to_sweep", publish)
    return sent


def test_the_events_of_one_moment_are_recorded_and_sent_in_one_task_in_order(
    published, django_capture_on_commit_callbacks
):
    leg = agent_leg(AccountFactory())
    events = (
        Event(leg.pk + 1, EventKind.COMPLETED, duration=40),
        Event(leg.pk + 1, EventKind.RECORDING, recording_url="https://r.test/1.wav"),
        Event(leg.pk, EventKind.COMPLETED),
    )

    with django_capture_on_commit_callbacks(execute=True):
        simulator._at(42, *events)

    ((name, kwargs),) = published
    assert name == "calls.tasks.simulator_events_task"
    assert [(e["attempt_id"], e["kind"]) for e in kwargs["events"]] == [
        (leg.pk + 1, "completed"),
        (leg.pk + 1, "recording"),
        (leg.pk, "completed"),
    ]
    assert kwargs["events"][0]["duration"] == 40
    assert kwargs["events"][1]["recording_url"] == "https://r.test/1.wav"
    # The switch's record of both legs' ends, written at once.
    ends = SimulatedLeg.objects.filter(attempt_id__in=[leg.pk, leg.pk + 1])
    assert sorted(ends.values_list("ended_by", flat=True)) == ["completed"] * 2


def test_one_event_is_still_sent_as_simulator_event_task(
    published, django_capture_on_commit_callbacks
):
    leg = agent_leg(AccountFactory())

    with django_capture_on_commit_callbacks(execute=True):
        simulator._at(2, Event(leg.pk, EventKind.ANSWERED), webhook=True)

    ((name, kwargs),) = published
    assert name == "calls.tasks.simulator_event_task"
    assert (kwargs["attempt_id"], kwargs["kind"]) == (leg.pk, "answered")


def test_a_ring_due_now_is_applied_at_commit_without_a_task(
    published, django_capture_on_commit_callbacks
):
    leg = agent_leg(AccountFactory())

    with django_capture_on_commit_callbacks(execute=False) as callbacks:
        simulator._at(0, Event(leg.pk, EventKind.RINGING))
    assert CallAttempt.objects.get(pk=leg.pk).ringing_at is None  # not before commit
    for callback in callbacks:
        callback()

    assert published == []
    assert CallAttempt.objects.get(pk=leg.pk).ringing_at is not None


def test_a_ring_due_later_travels_as_a_task(
    published, settings, django_capture_on_commit_callbacks
):
    settings.SIMULATOR_CALLBACK_DELAY = 1.5  # a slow provider's status callbacks
    leg = agent_leg(AccountFactory())

    with django_capture_on_commit_callbacks(execute=True):
        simulator._at(0, Event(leg.pk, EventKind.RINGING))

    assert [name for name, _ in published] == ["calls.tasks.simulator_event_task"]
    assert CallAttempt.objects.get(pk=leg.pk).ringing_at is None


def test_a_ring_the_database_fails_is_sent_as_a_task_which_retries(
    published, monkeypatch, django_capture_on_commit_callbacks
):
    leg = agent_leg(AccountFactory())

    def down(event):
        raise OperationalError("the database went away")

    monkeypatch.setattr("calls.services.call_event", down)
    with django_capture_on_commit_callbacks(execute=True):
        simulator._at(0, Event(leg.pk, EventKind.RINGING))

    assert [name for name, _ in published] == ["calls.tasks.simulator_event_task"]


def test_a_batch_failing_half_way_retries_only_the_events_not_yet_applied(
    monkeypatch,
):
    applied = []

    def deliver(*, attempt_id, kind, due=None, **rest):
        if attempt_id == 2 and 0 not in applied:
            applied.append(0)  # one failure only
            raise OperationalError("the database went away")
        applied.append(attempt_id)

    monkeypatch.setattr(tasks, "_simulator_deliver", deliver)
    events = [{"attempt_id": n, "kind": "completed"} for n in (1, 2, 3)]
    task = tasks.simulator_events_task
    task.push_request(kwargs={"events": events, "due": None})
    try:
        with pytest.raises(OperationalError):
            task._orig_run(events=events, due=None)
        assert task.request.kwargs == {"events": events[1:], "due": None}
        task._orig_run(**task.request.kwargs)
    finally:
        task.pop_request()

    assert applied == [1, 0, 2, 3]
