"""The demo's appointments, through ``manage.py seed_demo`` as `make run` runs it: past
ones marked by the manager (and some not), today's set and confirmed, tomorrow's proposed;
a second run adds nothing."""

from io import StringIO

import pytest
from django.core.management import call_command
from django.utils import timezone

from appointments.models import Actor, Appointment, AppointmentChange, Status

pytestmark = pytest.mark.django_db


def seed() -> None:
    call_command("seed_demo", stdout=StringIO(), stderr=StringIO())


def test_the_demo_has_appointments_in_every_part_of_their_life():
    seed()
    statuses = set(Appointment.objects.values_list("status", flat=True))
    assert {Status.KEPT, Status.NO_SHOW, Status.CONFIRMED, Status.PROPOSED} <= statuses
    now = timezone.now()
    # Past ones nobody marked: what the morning report lists as "outcome missing".
    assert Appointment.objects.filter(
        status__in=[Status.SET, Status.CONFIRMED], starts_at__lt=now
    ).exists()
    # Marked by a manager, each change kept.
    assert AppointmentChange.objects.filter(
        by=Actor.MANAGER, status_to=Status.KEPT, by_user__isnull=False
    ).exists()
    # The scorers' appointment members made appointments too.
    assert Appointment.objects.filter(set_by=Actor.SCORER).exists()

    before = Appointment.objects.count()
    changes = AppointmentChange.objects.count()
    seed()
    assert Appointment.objects.count() == before
    assert AppointmentChange.objects.count() == changes
