"""Appointments in a real browser (Chromium through Playwright): a manager sets one on the
call page, finds it on the day's appointments and marks it kept; the agent sets, moves and
marks one kept on the call page; the manager marks the day's appointments kept and
no-show; the dashboard shows the set and show rates and the two speed numbers."""

from __future__ import annotations

import datetime as dt
from zoneinfo import ZoneInfo

import pytest
from django.urls import reverse
from django.utils import timezone

from appointments.models import Actor, Appointment, Status
from appointments.services import appointment_change, appointment_set_for_call
from calls.models import AttemptOutcome, CallAttempt, Leg
from tests.scoring.factories import CallFactory

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


def test_the_agent_sets_moves_and_marks_kept_on_the_call_page(world, open_as):
    zone = ZoneInfo(world.north.timezone)
    tomorrow = timezone.now().astimezone(zone).date() + dt.timedelta(days=1)
    page = open_as(world.agent)
    page.goto(reverse("pages:call-detail", args=[world.agent_call.pk]))
    card = page.locator("#appointments")
    page.get_by_label("Date").fill(tomorrow.isoformat())
    page.get_by_label("Time (America/Denver").fill("10:30")
    page.get_by_role("button", name="Set the appointment").click()
    page.wait_for_url(f"**/calls/{world.agent_call.pk}/#appointments")
    first = Appointment.objects.get(call=world.agent_call)
    assert first.starts_at == dt.datetime.combine(tomorrow, dt.time(10, 30), zone)
    assert "Move the appointment to another time" in card.inner_text()

    # A new time moves it: the first ends rescheduled, a new one replaces it.
    page.get_by_label("Time (America/Denver").fill("14:15")
    page.get_by_role("button", name="Move the appointment").click()
    page.wait_for_url(f"**/calls/{world.agent_call.pk}/#appointments")
    moved = Appointment.objects.get(call=world.agent_call, replaces=first)
    assert moved.starts_at == dt.datetime.combine(tomorrow, dt.time(14, 15), zone)
    old = page.locator(f"#appointment-{first.pk}")
    assert "Rescheduled" in old.locator(".badge").inner_text()
    assert "moved to" in old.inner_text()
    assert "14:15" in old.inner_text()
    assert old.get_by_role("button").count() == 0
    new = page.locator(f"#appointment-{moved.pk}")
    assert new.locator(".badge").inner_text() == "Set"

    new.get_by_role("button", name="Kept").click()
    page.wait_for_url(f"**/calls/{world.agent_call.pk}/#appointments")
    new = page.locator(f"#appointment-{moved.pk}")
    assert new.locator(".badge").inner_text() == "Kept"
    assert "Marked kept" in page.locator(".messages").inner_text()
    assert "Avery Lopez (agent)" in new.locator(".timeline").inner_text()
    assert [
        (a.starts_at.astimezone(zone).time(), a.status)
        for a in Appointment.objects.filter(call=world.agent_call).order_by("pk")
    ] == [(dt.time(10, 30), Status.RESCHEDULED), (dt.time(14, 15), Status.KEPT)]


def test_the_manager_marks_the_days_appointments_kept_and_no_show(world, open_as):
    zone = ZoneInfo(world.north.timezone)
    today = timezone.now().astimezone(zone).date()
    pat = appointment_set_for_call(
        call=world.agent_call,
        starts_at=dt.datetime.combine(today, dt.time(23, 0), zone),
        by=Actor.AGENT,
    )
    lee = appointment_set_for_call(
        call=world.other_agent_call,
        starts_at=dt.datetime.combine(today, dt.time(23, 30), zone),
        by=Actor.AGENT,
    )
    # Another organization's appointment that day: never on this manager's page.
    elsewhere = ZoneInfo(world.foreign.timezone)
    appointment_set_for_call(
        call=world.foreign_call,
        starts_at=dt.datetime.combine(
            timezone.now().astimezone(elsewhere).date(), dt.time(23, 0), elsewhere
        ),
        by=Actor.AGENT,
    )
    page = open_as(world.manager)
    page.goto(reverse("pages:appointments"))
    rows = page.locator("#appointments-day tbody tr")
    assert rows.count() == 2
    assert "Pat Buyer" in rows.nth(0).inner_text()
    assert "Lee Other" in rows.nth(1).inner_text()
    assert "Fay Foreign" not in page.locator("#appointments-day").inner_text()

    page.get_by_role("button", name="No-show: Lee Other").click()
    page.wait_for_url(f"**/appointments/?day={today.isoformat()}")
    page.get_by_role("button", name="Kept: Pat Buyer").click()
    page.wait_for_url(f"**/appointments/?day={today.isoformat()}")
    rows = page.locator("#appointments-day tbody tr")
    assert rows.nth(0).locator(".badge").inner_text() == "Kept"
    assert rows.nth(1).locator(".badge").inner_text() == "No-show"
    assert page.locator("#appointments-day tbody button").count() == 0
    pat.refresh_from_db()
    lee.refresh_from_db()
    assert (pat.status, lee.status) == (Status.KEPT, Status.NO_SHOW)


def _lead_leg(call, *, dialed, answered):
    CallAttempt.objects.create(
        call=call,
        leg=Leg.LEAD,
        number=call.phone,
        provider="simulator",
        outcome=AttemptOutcome.ANSWERED,
        dial_requested_at=call.received_at + dt.timedelta(seconds=dialed),
        answered_at=call.received_at + dt.timedelta(seconds=answered),
    )


def test_the_dashboard_shows_set_and_show_rates_and_both_speed_numbers(world, open_as):
    # Four answered leads of Avery's on a past day: three dialed after 4, 6 and 8 s and
    # connected after 20, 40 and 60 s, one never dialed. Two got an appointment: one
    # kept, one a no-show. Set rate 2 of 4, show rate 1 of 2; first touch median 6 s
    # (90th percentile 7.6 s), first human median 40 s (56 s).
    zone = ZoneInfo(world.north.timezone)
    day = dt.date(2026, 3, 4)
    noon = dt.datetime.combine(day, dt.time(12), zone)
    calls = [
        CallFactory(
            account=world.north,
            agent=world.agent,
            received_at=noon + dt.timedelta(minutes=n),
            phone=f"+1303555031{n}",
        )
        for n in range(4)
    ]
    for call, dialed, answered in zip(calls, (4, 6, 8), (20, 40, 60), strict=False):
        _lead_leg(call, dialed=dialed, answered=answered)
    for call, outcome in zip(calls, (Status.KEPT, Status.NO_SHOW), strict=False):
        appointment = appointment_set_for_call(
            call=call, starts_at=noon + dt.timedelta(hours=4), by=Actor.AGENT
        )
        appointment_change(appointment=appointment, to=outcome, by=Actor.MANAGER)
    page = open_as(world.manager)
    page.goto(
        reverse("pages:dashboard") + f"?date_from={day.isoformat()}&date_to={day}"
    )
    assert page.locator("#speed-touch-median").inner_text() == "6 s"
    assert page.locator("#speed-touch-p90").inner_text() == "8 s"
    assert page.locator("#speed-human-median").inner_text() == "40 s"
    assert page.locator("#speed-human-p90").inner_text() == "56 s"

    overall = page.locator("#appointment-figures tbody").nth(0).locator("tr").nth(0)
    cells = [cell.inner_text() for cell in overall.locator("td").all()]
    # Range, answered, set, set rate, due, kept, no-show, missing, show, no-show rate.
    assert cells == [
        "2026-03-04 to 2026-03-04",
        "4",
        "2",
        "50%",
        "2",
        "1",
        "1",
        "0",
        "50%",
        "50%",
    ]
    agent = page.locator("#appointment-figures tbody").nth(1).locator("tr").nth(1)
    assert agent.locator("td").nth(0).inner_text() == "Avery Lopez"
    assert agent.locator("td").nth(3).inner_text() == "50% was —"

    leader = page.locator("#agents tbody tr").nth(0).locator("td")
    assert leader.nth(0).inner_text() == "1"
    assert leader.nth(1).inner_text() == "Avery Lopez"
    assert leader.nth(2).inner_text() == "40 s (3 of 4)"  # first human
    assert leader.nth(3).inner_text() == "6 s"  # first touch
    assert leader.nth(7).inner_text() == "50% was —"  # set rate
    assert leader.nth(8).inner_text() == "50% was —"  # show rate
