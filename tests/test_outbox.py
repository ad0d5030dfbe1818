"""The one outbox (core.outbox): an effect is recorded with its change, handed over on
commit and marked; built once; a transient failure waits and tries again a bounded
number of times, any other fails at once with its reason; the sweep sends again only what
was never handed over or whose hand-over was lost, so the queue never holds more than one
task per effect however often it runs."""

from __future__ import annotations

from datetime import timedelta
from typing import Any

import pytest
from django.conf import settings
from django.db import OperationalError, transaction
from django.utils import timezone

from core import handover
from core.models import Effect, EffectStatus
from core.outbox import (
    MAX_TRIES,
    effect,
    effect_record,
    effect_run,
    effect_send_again,
    effects_sweep,
)
from tests.handover import hold_hand_overs

pytestmark = [pytest.mark.django_db, pytest.mark.outbox]

RUNS: list[dict[str, object]] = []
FAILURES: list[Exception] = []


@effect("tests.probe")
def probe(**params: object) -> None:
    if FAILURES:
        raise FAILURES.pop(0)
    RUNS.append(params)


@pytest.fixture(autouse=True)
def _clean():
    RUNS.clear()
    FAILURES.clear()


@pytest.fixture
def published(monkeypatch):
    """Every hand-over to the broker, by effect id (the broker itself is Redis: a
    publish that works returns True)."""
    sent: list[int] = []

    def publish(task, *, kwargs, **options):
        sent.append(kwargs["effect_id"])
        return True

    monkeypatch.setattr(handover, "publish_or_leave_to_sweep", publish)
    return sent


def recorded(capture, key="probe:1", **params) -> Effect:
    with capture(execute=True), transaction.atomic():
        effect_record(kind="tests.probe", key=key, about="call 1", **params)
    return Effect.objects.get(key=key)


def test_an_effect_is_handed_over_once_its_change_commits_and_marked(
    django_capture_on_commit_callbacks, published
):
    row = recorded(django_capture_on_commit_callbacks, call_id=7)

    assert published == [row.pk]
    assert row.dispatched_at is not None
    assert (row.kind, row.params, row.status) == (
        "tests.probe",
        {"call_id": 7},
        EffectStatus.PENDING,
    )


def test_a_rolled_back_change_records_nothing(
    django_capture_on_commit_callbacks, published
):
    def change_that_fails() -> None:
        with transaction.atomic():
            effect_record(kind="tests.probe", key="probe:1", call_id=7)
            raise RuntimeError("the change failed")

    with django_capture_on_commit_callbacks(execute=True), pytest.raises(RuntimeError):
        change_that_fails()

    assert not Effect.objects.exists()
    assert published == []


def test_the_same_change_seen_twice_records_one_effect(
    django_capture_on_commit_callbacks, published
):
    recorded(django_capture_on_commit_callbacks)
    recorded(django_capture_on_commit_callbacks)

    assert Effect.objects.count() == 1
    assert len(published) == 1


def test_an_effect_is_built_once_however_often_it_is_delivered(
    django_capture_on_commit_callbacks, published
):
    row = recorded(django_capture_on_commit_callbacks, call_id=7)

    assert effect_run(effect_id=row.pk) == "done"
    assert effect_run(effect_id=row.pk) == "done"

    assert RUNS == [{"call_id": 7}]
    row.refresh_from_db()
    assert (row.status, row.tries, row.error) == (EffectStatus.DONE, 1, "")


def test_a_transient_failure_waits_and_tries_again_at_most_max_tries(
    django_capture_on_commit_callbacks, published
):
    row = recorded(django_capture_on_commit_callbacks)
    FAILURES.extend(OperationalError("the database went away") for _ in range(99))

    assert effect_run(effect_id=row.pk) == "retry"
    row.refresh_from_db()
    assert (row.status, row.tries) == (EffectStatus.PENDING, 1)
    assert row.error == "OperationalError: the database went away"
    assert row.due_at > timezone.now()
    assert effect_run(effect_id=row.pk) == "not due"

    outcomes = []
    for _ in range(MAX_TRIES + 3):
        Effect.objects.filter(pk=row.pk).update(due_at=timezone.now())
        outcomes.append(effect_run(effect_id=row.pk))

    row.refresh_from_db()
    assert outcomes == ["retry"] * (MAX_TRIES - 2) + ["failed"] + ["done"] * 4
    assert (row.status, row.tries) == (EffectStatus.FAILED, MAX_TRIES)
    assert RUNS == []


def test_any_other_failure_fails_at_once_and_support_sends_it_again(
    django_capture_on_commit_callbacks, published
):
    row = recorded(django_capture_on_commit_callbacks, call_id=7)
    FAILURES.append(ValueError("All strings must be XML compatible"))

    assert effect_run(effect_id=row.pk) == "failed"
    row.refresh_from_db()
    assert (row.status, row.tries, row.error) == (
        EffectStatus.FAILED,
        1,
        "ValueError: All strings must be XML compatible",
    )
    assert effects_sweep(now=timezone.now() + timedelta(days=1)) == 0

    with django_capture_on_commit_callbacks(execute=True):
        effect_send_again(effect=row)
    assert published == [row.pk, row.pk]
    assert effect_run(effect_id=row.pk) == "done"
    assert RUNS == [{"call_id": 7}]


def test_the_sweep_sends_again_only_what_was_never_handed_over_or_lost(
    django_capture_on_commit_callbacks, published, monkeypatch
):
    handed = recorded(django_capture_on_commit_callbacks, key="probe:handed")
    # The broker was down when this one committed: the publish failed, marked refused.
    monkeypatch.setattr(handover, "publish_or_leave_to_sweep", lambda *a, **k: False)
    never = recorded(django_capture_on_commit_callbacks, key="probe:never")
    assert never.dispatched_at == handover.REFUSED
    monkeypatch.undo()
    sent: list[int] = []

    def publish(task, *, kwargs, **options):
        sent.append(kwargs["effect_id"])
        return True

    monkeypatch.setattr(handover, "publish_or_leave_to_sweep", publish)

    # Many sweeps while no worker runs: the one refused is sent once, the other not at
    # all, until a hand-over is older than the broker would hold it.
    soon = timezone.now()
    for _ in range(10):
        effects_sweep(now=soon)
    assert sent == [never.pk]

    options: dict[str, Any] = settings.CELERY_BROKER_TRANSPORT_OPTIONS
    visibility = float(options["visibility_timeout"])
    later = timezone.now() + timedelta(seconds=visibility + 1)
    assert effects_sweep(now=later) == 2
    assert effects_sweep(now=soon) == 0  # both marked again
    assert sent == [never.pk, handed.pk, never.pk]


def test_an_effect_whose_process_stopped_before_handing_it_over_is_swept_after_a_grace(
    django_capture_on_commit_callbacks, published, monkeypatch
):
    # Committed, and the process gone before its publish on commit: no mark at all.
    hold_hand_overs(monkeypatch, "core.tasks.effect_run_task")
    row = recorded(django_capture_on_commit_callbacks)
    monkeypatch.undo()
    monkeypatch.setattr(
        handover, "publish_or_leave_to_sweep", lambda *a, kwargs, **k: True
    )
    assert row.dispatched_at is None

    assert effects_sweep(now=timezone.now()) == 0  # its publish may still come
    later = timezone.now() + handover.SWEEP_GRACE + timedelta(seconds=1)
    assert effects_sweep(now=later) == 1
    assert effects_sweep(now=later) == 0
