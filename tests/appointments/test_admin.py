"""Appointments in support's admin: the list and a page in the dealer's timezone with the
appointment's life, the marks made through the services as support's, a mark the life
refuses reported and not made, and the call's page listing its appointments."""

import datetime as dt
from zoneinfo import ZoneInfo

import pytest
from django.urls import reverse

from appointments.models import Actor, AppointmentChange, Status
from appointments.services import appointment_change, appointment_set_for_call
from tests.scoring.factories import AccountFactory, CallFactory

pytestmark = pytest.mark.django_db


@pytest.fixture
def booked():
    account = AccountFactory(timezone="America/Denver")
    call = CallFactory(account=account, first_name="Sam", last_name="Rivera")
    return appointment_set_for_call(
        call=call,
        starts_at=dt.datetime(2026, 11, 28, 10, 30, tzinfo=ZoneInfo("America/Denver")),
        by=Actor.AGENT,
    )


def test_the_list_and_page_show_the_start_in_the_dealers_zone_and_the_life(
    admin_client, booked
):
    listed = admin_client.get(reverse("admin:appointments_appointment_changelist"))
    page = admin_client.get(
        reverse("admin:appointments_appointment_change", args=[booked.pk])
    )
    call_page = admin_client.get(
        reverse("admin:calls_call_change", args=[booked.call_id])
    )

    assert listed.status_code == page.status_code == call_page.status_code == 200
    assert "2026-11-28 10:30:00 MST" in listed.content.decode()
    assert "Sam Rivera" in listed.content.decode()
    assert "2026-11-28 10:30:00 MST" in page.content.decode()
    assert "2026-11-28 10:30:00 MST" in call_page.content.decode()


def test_supports_marks_go_through_the_life(admin_client, admin_user, booked):
    appointment_change(appointment=booked, to=Status.CANCELLED, by=Actor.AGENT)
    kept_too = appointment_set_for_call(
        call=booked.call, starts_at=booked.starts_at + dt.timedelta(days=1), by="agent"
    )

    answer = admin_client.post(
        reverse("admin:appointments_appointment_changelist"),
        {"action": "mark_kept", "_selected_action": [booked.pk, kept_too.pk]},
        follow=True,
    )

    assert answer.status_code == 200
    text = answer.content.decode()
    assert "1 marked kept." in text
    assert f"{booked.pk}: An appointment cancelled cannot become kept." in text
    booked.refresh_from_db()
    kept_too.refresh_from_db()
    assert booked.status == Status.CANCELLED
    assert kept_too.status == Status.KEPT
    last = AppointmentChange.objects.filter(appointment=kept_too).last()
    assert last is not None
    assert (last.by, last.by_user) == (Actor.STAFF, admin_user)
