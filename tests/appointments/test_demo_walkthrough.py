"""The README's appointment walkthrough, for real: ``manage.py demo_appointment`` on
`make run`'s demo data against a Celery worker with its scheduler on Redis (the simulator
provider): the appointment set, the reminder handed to the simulator by the texting sweep,
the simulated lead's "C" confirming it, the manager marking it kept; each step printed
with its page."""

from __future__ import annotations

import re
from io import StringIO
from zoneinfo import ZoneInfo

import pytest
from django.core.management import call_command
from django.core.management.base import CommandError

from appointments.models import Actor, Appointment, Reminder, ReminderKind, Status
from config.celery import app
from tests.processes import service_env, start_worker
from texting.models import Direction, TextStatus

pytestmark = [pytest.mark.slow, pytest.mark.django_db(transaction=True)]


def test_the_demo_lead_gets_an_appointment_a_reminder_confirms_and_is_kept(tmp_path):
    call_command("seed_demo", stdout=StringIO(), stderr=StringIO())
    app.control.purge()
    worker = start_worker(tmp_path, env=service_env(), beat=True)
    out = StringIO()
    try:
        call_command(
            "demo_appointment", "--wait", "90", "--base-url", "http://x", stdout=out
        )
    finally:
        worker.stop()
    printed = out.getvalue()
    found = re.search(r"http://x/calls/(\d+)/#appointments", printed)
    assert found is not None, printed
    call_id = int(found.group(1))
    appointment = Appointment.objects.get(call_id=call_id, status=Status.KEPT)
    assert appointment.account.name == "Demo Motors North"
    assert [
        (change.status_to, change.by) for change in appointment.changes.order_by("pk")
    ] == [
        (Status.SET, Actor.AGENT),
        (Status.CONFIRMED, Actor.LEAD),
        (Status.KEPT, Actor.MANAGER),
    ]
    text = Reminder.objects.get(appointment=appointment, kind=ReminderKind.BOOKED).text
    assert text is not None
    assert text.status in {TextStatus.SENT, TextStatus.DELIVERED}
    assert "Reply C to confirm or R to reschedule." in text.body
    reply = appointment.account.texts.get(
        direction=Direction.IN, lead_phone=appointment.phone, body="C"
    )
    assert reply.call_id == call_id
    lines = printed.splitlines()
    assert [line[:3] for line in lines if line[:1].isdigit()] == [
        "1. ",
        "2. ",
        "3. ",
        "4. ",
    ]
    assert "The lead replied 'C' by text: the appointment is confirmed" in printed
    day = appointment.starts_at.astimezone(ZoneInfo(appointment.account.timezone))
    assert f"http://x/appointments/?day={day:%Y-%m-%d}" in printed
    assert "http://x/dashboard/" in printed


def test_without_the_demo_data_it_says_to_run_make_run_first():
    with pytest.raises(CommandError, match="run `make run`"):
        call_command("demo_appointment", stdout=StringIO())
