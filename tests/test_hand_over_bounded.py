"""One hand-over mechanism for every outbox (core.handover): while no worker consumes,
however many sweeps run, each pending row is handed to the broker once (after a short
grace when its own publish on commit never came); only once its hand-over may have been
lost (the broker's visibility timeout passed, or a new broker server) is it handed over
again, once. Before, messages and texts were handed over again every 30 s and webhook
deliveries every sweep while they waited (issue 35: the queue grew to 247,323)."""

from __future__ import annotations

from collections import Counter
from datetime import timedelta
from typing import Any

import pytest
from django.conf import settings
from django.utils import timezone

from core import handover
from core.models import Effect
from core.outbox import effects_sweep
from notify.models import Message, MessageKind
from notify.services import messages_sweep
from tests.texting.factories import text_in_thread
from texting.models import TextStatus
from texting.services import texts_sweep
from webhooks.models import WebhookDelivery
from webhooks.services import (
    webhook_deliveries_sweep,
    webhook_endpoint_create,
    webhook_event_emit,
)

pytestmark = [pytest.mark.django_db, pytest.mark.outbox]

SWEEPS = (messages_sweep, texts_sweep, webhook_deliveries_sweep, effects_sweep)


@pytest.fixture
def published(monkeypatch):
    """Each publish through the one hand-over path: (task, the row's id)."""
    sent: Counter[tuple[str, int]] = Counter()

    def publish(task, *, kwargs, **options):
        ((_, row_id),) = kwargs.items()
        sent[(task.name.rsplit(".", 1)[1], row_id)] += 1
        return True

    monkeypatch.setattr(handover, "publish_or_leave_to_sweep", publish)
    return sent


@pytest.fixture
def pending(tenant, settings, monkeypatch):
    """One pending row of each outbox, stored as a process that stopped before its
    publish on commit leaves it: no hand-over mark."""
    now = timezone.now()
    Message.objects.create(
        key="bounded",
        kind=MessageKind.CRM,
        to="crm@x.example",
        subject="s",
        text="t",
        due_at=now,
    )
    text_in_thread(
        tenant.account, "+13035550123", at=now, body="Hi", status=TextStatus.SCHEDULED
    )
    settings.WEBHOOK_ALLOWED_ADDRESSES = ["127.0.0.1"]
    webhook_endpoint_create(
        organization=tenant.organization, url="https://127.0.0.1:9/hook"
    )
    webhook_event_emit(
        type="call_completed",
        organization_id=tenant.organization.pk,
        account=tenant.account,
        objects={"n": 1},
        subject="call:1",
    )
    Effect.objects.create(
        key="bounded", kind="notify.crm_final", params={"call_id": 1}, due_at=now
    )
    assert WebhookDelivery.objects.filter(dispatched_at__isnull=True).count() == 1
    return now


def sweep_all(now):
    for sweep in SWEEPS:
        sweep(now=now)


def test_a_stopped_worker_leaves_one_task_per_row_however_many_sweeps_run(
    pending, published
):
    # Within the grace, the publish on commit may still come: nothing is handed over.
    sweep_all(pending)
    assert not published

    # Ten minutes of sweeps every 10 s with no worker: each row handed over once.
    for tick in range(4, 64):
        sweep_all(pending + timedelta(seconds=10 * tick))
    assert sorted(published) == sorted(
        [
            ("message_send_task", Message.objects.get().pk),
            ("text_send_task", text_pk()),
            ("webhook_deliver_task", WebhookDelivery.objects.get().pk),
            ("effect_run_task", Effect.objects.get().pk),
        ]
    )
    assert set(published.values()) == {1}

    # Past the broker's visibility timeout the hand-over may have been lost: once more.
    options: dict[str, Any] = settings.CELERY_BROKER_TRANSPORT_OPTIONS
    visibility = float(options["visibility_timeout"])
    sweep_all(timezone.now() + timedelta(seconds=visibility + 1))
    # Marked again as it was handed over: the next sweeps leave it to the queue again.
    sweep_all(timezone.now() + timedelta(minutes=5))
    assert set(published.values()) == {2}


def test_a_new_broker_server_has_every_waiting_row_handed_over_once_more(
    pending, published, monkeypatch
):
    later = pending + timedelta(minutes=1)
    sweep_all(later)
    assert set(published.values()) == {1}

    # The broker answering now started after those hand-overs (a Redis that restarted
    # empty): what it held is lost.
    started = timezone.now()
    monkeypatch.setattr(handover, "broker_first_seen", lambda: started)
    sweep_all(later)
    sweep_all(later)
    assert set(published.values()) == {2}
    assert len(published) == 4


def text_pk() -> int:
    from texting.models import Text

    return Text.objects.get().pk
