"""A manager sets an appointment on the call page, finds it on the day's appointments and
marks it kept, in a real browser (Chromium through Playwright)."""

from __future__ import annotations

from zoneinfo import ZoneInfo

import pytest
from django.urls import reverse
from django.utils import timezone

from appointments.models import Appointment, Status

pytestmark = [pytest.mark.slow, pytest.mark.django_db(transaction=True)]


def test_a_manager_sets_an_appointment_and_marks_it_kept_on_the_day(world, open_as):
    # Late today at the dealer's: today's page (the manager's first account's day) lists it.
    today = timezone.now().astimezone(ZoneInfo(world.north.timezone)).date()
    page = open_as(world.manager)
    page.goto(reverse("pages:call-detail", args=[world.agent_call.pk]))
    card = page.locator("#appointments")
    assert "No appointment made on this call." in card.inner_text()
    page.get_by_label("Date").fill(today.isoformat())
    page.get_by_label("Time (America/Denver").fill("23:45")
    page.get_by_label("Kind").select_option(label="Test drive")
    page.get_by_label("Vehicle").fill("2024 Honda Civic")
    page.get_by_role("button", name="Set the appointment").click()
    page.wait_for_url(f"**/calls/{world.agent_call.pk}/#appointments")
    assert "Appointment set for" in page.locator(".messages").inner_text()
    assert "23:45" in card.inner_text()
    assert "Test drive · 2024 Honda Civic" in card.inner_text()
    assert "Move the appointment" in card.inner_text()

    page.get_by_role("navigation", name="Pages").get_by_role(
        "link", name="Appointments"
    ).click()
    page.wait_for_url("**/appointments/")
    row = page.locator("#appointments-day tbody tr")
    assert row.count() == 1
    assert "23:45 MST" in row.inner_text() or "23:45 MDT" in row.inner_text()
    assert "Pat Buyer" in row.inner_text()
    assert "Avery Lopez" in row.inner_text()
    row.get_by_role("button", name="Kept").click()
    page.wait_for_url(f"**/appointments/?day={today.isoformat()}")
    row = page.locator("#appointments-day tbody tr")
    assert "Kept" in row.locator("td").nth(6).inner_text()
    assert row.get_by_role("button").count() == 0
    assert Appointment.objects.get(call=world.agent_call).status == Status.KEPT
