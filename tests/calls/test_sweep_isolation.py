"""The calls sweep handles each item alone (``core.sweeps.each``) and each of its parts
alone: one poisoned call (the probe's: a write-back raising inside its final transition
made 81 sweeps in a row fail, so no other tenant's legs were settled) is counted, set
aside after ``SET_ASIDE_AFTER`` failures with its reason, and never stops the others."""

import time
from datetime import timedelta

import pytest
from django.utils import timezone

from calls import media, services
from calls.models import AttemptOutcome, Call, CallAttempt, CallStatus
from calls.pipeline import broker, waiting
from calls.signals import call_finished
from calls.telephony import simulator
from core.models import SetAside
from core.sweeps import SET_ASIDE_AFTER
from tests.calls.legs import connected_call, switch_says

pytestmark = pytest.mark.django_db


@pytest.fixture(autouse=True)
def no_callbacks(monkeypatch):
    """The simulator's callbacks never arrive; nothing is handed to a broker."""
    monkeypatch.setattr(simulator, "_at", lambda *args, **kwargs: None)
    monkeypatch.setattr(
        simulator.SimulatorProvider,
        "hangup",
        lambda self, *, provider_id, attempt_id: None,
    )
    monkeypatch.setattr(broker, "dispatch_setup", lambda call_id, at=None, **_: None)


def ended_in_talk():
    """A call whose 95 s talk ended a minute ago, every callback of it lost."""
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
    return call, lead_leg


@pytest.fixture
def poisoned():
    """Connect a receiver of ``call_finished`` that raises for the calls in the returned
    list, as the CRM write-back did for a name with control characters; counts its tries."""
    calls: list[int] = []
    tries: list[int] = []

    def write_back(sender, call, **kwargs):
        if call.pk in calls:
            tries.append(call.pk)
            raise ValueError("All strings must be XML compatible")

    call_finished.connect(write_back, weak=False)
    yield calls, tries
    call_finished.disconnect(write_back)


def test_one_poisoned_call_never_stops_the_sweep_and_is_set_aside(poisoned):
    bad_calls, tries = poisoned
    healthy = [ended_in_talk()[0] for _ in range(5)]
    bad, bad_leg = ended_in_talk()
    healthy += [ended_in_talk()[0] for _ in range(5)]
    bad_calls.append(bad.pk)

    counts = services.calls_sweep()

    assert counts["failed"] == 1
    for call in healthy:  # every other tenant's call, finished from the switch's record
        call.refresh_from_db()
        assert call.status == CallStatus.ANSWER
        assert call.duration == 95
        assert call.ended_at is not None
        assert call.attempts == 1
        assert not CallAttempt.objects.filter(call=call, ended_at__isnull=True).exists()
    bad.refresh_from_db()
    assert bad.ended_at is None  # its final transition rolled back, to be tried again
    row = SetAside.objects.get(sweep="calls.silent", item=str(bad_leg.pk))
    assert (row.failures, row.set_aside) == (1, False)

    for _ in range(SET_ASIDE_AFTER + 2):
        services.calls_sweep()

    row.refresh_from_db()
    assert row.set_aside is True
    assert row.failures == SET_ASIDE_AFTER
    assert row.error == "ValueError: All strings must be XML compatible"
    assert tries == [bad.pk] * SET_ASIDE_AFTER  # no longer tried once set aside
    assert SetAside.objects.count() == 1  # nothing else failed


def test_a_failing_part_of_the_sweep_never_stops_the_others(monkeypatch):
    """The hand-over and the recordings sweep (the parts after the silent legs) both raise;
    the legs are settled and the answered call left without an end is still finished."""

    def broken(*args, **kwargs):
        raise RuntimeError("part broken")

    monkeypatch.setattr(waiting, "free_agents_with_calls_waiting", broken)
    monkeypatch.setattr(media, "recordings_sweep", broken)
    talked, _ = ended_in_talk()
    cut, agent_leg, lead_leg = connected_call()
    answered = timezone.now() - timedelta(minutes=10)
    CallAttempt.objects.filter(pk=lead_leg.pk).update(
        answered_at=answered,
        ended_at=answered + timedelta(seconds=42),
        outcome=AttemptOutcome.ANSWERED,
        duration=42,
    )
    CallAttempt.objects.filter(pk=agent_leg.pk).update(ended_at=timezone.now())
    Call.objects.filter(pk=cut.pk).update(status=CallStatus.ANSWER)

    counts = services.calls_sweep()

    assert counts["failed"] == 2
    assert counts["answered_finished"] == 1
    talked.refresh_from_db()
    cut.refresh_from_db()
    assert (talked.status, talked.duration) == (CallStatus.ANSWER, 95)
    assert talked.ended_at is not None
    assert (cut.status, cut.duration) == (CallStatus.ANSWER, 42)
    assert cut.ended_at == answered + timedelta(seconds=42)
    assert cut.end_estimated is False
    # A part is no item: nothing is set aside for it, and the next sweep runs it again.
    assert not SetAside.objects.exists()
    assert services.calls_sweep()["failed"] == 2
