"""The scheduler through a real worker running it (-B), as the Procfile's ``worker`` does,
with the texts' sweep an hour apart: an appointment reminder and a follow-up step falling
due are handed to the provider (the simulator) by the one-second tick, each once and never
before its time."""

from __future__ import annotations

from datetime import timedelta

import pytest
from django.utils import timezone

from cadence.models import Cadence, Channel, PlannedStep, StepStatus, Template
from calls.models import CallStatus
from tests.processes import service_env, start_worker, wait_for
from tests.scoring.factories import CallFactory
from tests.texting.conftest import texting_on
from texting.models import Purpose, Text, TextStatus
from texting.services import texts_to_lead

pytestmark = [pytest.mark.slow, pytest.mark.django_db(transaction=True)]

LEAD = "+13035550147"


def test_a_due_reminder_and_step_are_handed_over_by_the_tick_once(tenant, tmp_path):
    account = tenant.account
    texting_on(account)
    Cadence.objects.create(account=account, enabled=True)
    call = CallFactory(account=account, phone=LEAD, status=CallStatus.NOANSWER)
    (reminder,) = texts_to_lead(
        call=call,
        purpose=Purpose.REMINDER,
        timed=[("See you tomorrow", timezone.now() + timedelta(hours=20))],
    )
    assert reminder is not None
    worker = start_worker(
        tmp_path,
        env=service_env(TEXTS_SWEEP_SECONDS="3600", LOG_LEVEL="INFO"),
        beat=True,
    )
    try:
        due = timezone.now() + timedelta(seconds=3)
        Text.objects.filter(pk=reminder.pk).update(
            due_at=due, created_at=timezone.now() - timedelta(hours=1)
        )
        step = PlannedStep.objects.create(
            account=account,
            phone=LEAD,
            call=call,
            position=2,
            channel=Channel.TEXT,
            template=Template.OWN,
            body="Hi {first_name}, still interested?",
            due_at=due,
        )
        wait_for(
            lambda: (
                Text.objects.filter(pk=reminder.pk, handed_at__isnull=False).exists()
                and PlannedStep.objects.filter(
                    pk=step.pk, made_text__handed_at__isnull=False
                ).exists()
            ),
            timeout=60,
            what="the reminder and the step's text handed to the provider",
            process=worker,
        )
    finally:
        worker.stop()

    reminder.refresh_from_db()
    step.refresh_from_db()
    made = Text.objects.get(pk=step.made_text_id or 0)
    assert step.status == StepStatus.DONE
    assert made.body == "Hi Sam, still interested?"
    for text in (reminder, made):
        assert text.status in {TextStatus.QUEUED, TextStatus.SENT, TextStatus.DELIVERED}
        assert text.provider_id
        assert text.handed_at is not None
        assert text.handed_at >= due  # never before its time
    assert Text.objects.filter(call=call).count() == 2  # each sent once
    assert "texts_due_task" in worker.log.read_text()
