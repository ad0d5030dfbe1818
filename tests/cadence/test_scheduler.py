"""The scheduler of due rows: each tick (every second) hands the rows falling due in the next
two seconds to the broker with an ``eta`` at their due time, once; a row handed over twice
is sent or run once; the slower sweeps stay the safety net."""

from __future__ import annotations

import time as clock
from datetime import timedelta

import pytest
from django.utils import timezone

from cadence.models import PlannedStep, StepStatus
from cadence.services import step_run, steps_hand_over_due
from calls.models import Call, CallOrigin
from core import handover
from tests.cadence.conftest import lead_not_reached, make_due
from tests.scoring.factories import CallFactory
from texting.models import Purpose, Text, TextStatus
from texting.services import text_send, texts_hand_over_due, texts_to_lead

pytestmark = pytest.mark.django_db


@pytest.fixture
def texts_handed(monkeypatch):
    """The texts handed to the broker: (text id, eta, countdown), never run eagerly."""
    got: list[tuple[int, object, object]] = []
    passed_on = handover.hand_over

    def hand_over(task, *, kwargs, rows=None, **options):
        if task.name != "texting.tasks.text_send_task":
            return passed_on(task, kwargs=kwargs, rows=rows, **options)
        got.append((kwargs["text_id"], options.get("eta"), options.get("countdown")))
        if rows is not None:
            rows.update(dispatched_at=timezone.now())
        return True

    monkeypatch.setattr(handover, "hand_over", hand_over)
    return got


def reminder(account, *, due_in: timedelta) -> Text:
    """An automatic text stored an hour ago for later (a reminder), now due in ``due_in``."""
    call = CallFactory(account=account, phone="+13035550147")
    (text,) = texts_to_lead(
        call=call,
        purpose=Purpose.REMINDER,
        timed=[("See you tomorrow", timezone.now() + timedelta(hours=20))],
    )
    assert text is not None
    Text.objects.filter(pk=text.pk).update(
        created_at=timezone.now() - timedelta(hours=1),
        due_at=timezone.now() + due_in,
    )
    text.refresh_from_db()
    return text


def test_a_text_due_in_a_moment_is_handed_over_once_at_its_due_time_and_sent_once(
    account, texts_handed
):
    soon = reminder(account, due_in=timedelta(milliseconds=900))
    later = reminder(account, due_in=timedelta(seconds=30))
    assert texts_handed == []  # stored for later: nothing handed over on commit

    assert texts_hand_over_due() == 1
    assert texts_hand_over_due() == 0  # the next tick leaves it

    assert texts_handed == [(soon.pk, soon.due_at, None)]
    clock.sleep(max(0.0, (soon.due_at - timezone.now()).total_seconds()))
    assert text_send(text_id=soon.pk) == "sent"
    assert text_send(text_id=soon.pk) == "done"  # delivered twice, sent once
    soon.refresh_from_db()
    later.refresh_from_db()
    assert soon.status == TextStatus.QUEUED
    assert soon.handed_at is not None
    assert soon.handed_at >= soon.due_at
    assert later.status == TextStatus.SCHEDULED
    assert later.dispatched_at is None


def test_a_text_its_own_commit_hands_over_is_left_to_it(account, texts_handed):
    call = CallFactory(account=account, phone="+13035550147")
    texts_to_lead(call=call, purpose=Purpose.REMINDER, timed=[("Booked!", None)])
    assert texts_hand_over_due() == 0


def test_a_text_that_arrives_early_is_handed_over_again(account, texts_handed):
    early = reminder(account, due_in=timedelta(seconds=1))
    texts_hand_over_due()
    Text.objects.filter(pk=early.pk).update(due_at=timezone.now() + timedelta(hours=1))

    assert text_send(text_id=early.pk) == "not due"

    assert Text.objects.get(pk=early.pk).dispatched_at is None
    assert texts_hand_over_due(now=timezone.now() + timedelta(hours=1)) == 1


def test_a_step_is_handed_over_once_at_its_due_time_and_run_once(
    world, account, handed
):
    lead_not_reached(world, account)
    day1 = PlannedStep.objects.get(account=account, position=1)
    at = timezone.now() + timedelta(seconds=1)
    PlannedStep.objects.filter(pk=day1.pk).update(due_at=at)
    handed.clear()

    steps_hand_over_due()
    steps_hand_over_due()

    assert handed.count((day1.pk, at)) == 1
    assert [pk for pk, _ in handed].count(day1.pk) == 1
    clock.sleep(max(0.0, (at - timezone.now()).total_seconds()))
    with world.capture(execute=True):
        assert step_run(step_id=day1.pk) == "done"
        assert step_run(step_id=day1.pk) == "done"
    assert PlannedStep.objects.get(pk=day1.pk).status == StepStatus.DONE
    assert Call.objects.filter(origin=CallOrigin.CADENCE).count() == 1


def test_a_step_handed_over_and_not_run_is_handed_over_again(world, account, handed):
    lead_not_reached(world, account)
    first = PlannedStep.objects.get(account=account, position=0)
    make_due(first)
    steps_hand_over_due()
    first.refresh_from_db()
    assert first.status == StepStatus.HANDED_OVER
    handed.clear()

    assert steps_hand_over_due() == 0
    later = timezone.now() + timedelta(seconds=11)  # not run 10 s past its time
    PlannedStep.objects.exclude(pk=first.pk).update(due_at=later + timedelta(days=1))
    assert steps_hand_over_due(now=later) == 1
    assert [pk for pk, _ in handed] == [first.pk]


def test_a_text_whose_hand_over_was_lost_is_handed_over_again_and_sent_once(
    account, texts_handed
):
    lost = reminder(account, due_in=timedelta(milliseconds=500))
    texts_hand_over_due()
    later = timezone.now() + timedelta(seconds=11)

    assert texts_hand_over_due(now=later) == 1  # still not sent 10 s past its time
    clock.sleep(max(0.0, (lost.due_at - timezone.now()).total_seconds()))
    assert [text_send(text_id=lost.pk) for _ in range(2)] == ["sent", "done"]
    assert [text_id for text_id, _, _ in texts_handed] == [lost.pk, lost.pk]
    assert texts_hand_over_due(now=later + timedelta(seconds=11)) == 0
