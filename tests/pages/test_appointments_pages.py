"""Appointments on the pages: the call page's card (set, move, confirm, kept, no-show,
cancel, a proposal accepted or dismissed, each change kept with the role and the person
who made it; refusals change nothing; a scorer reads only; another organization is not
found) and the managers' day of appointments in each account's own timezone."""

from __future__ import annotations

import datetime as dt
import re
from zoneinfo import ZoneInfo

import pytest
from django.urls import reverse
from django.utils import timezone

from appointments.models import Actor, Appointment, AppointmentChange, Kind, Status
from appointments.services import (
    appointment_change,
    appointment_make,
    appointment_set_for_call,
)
from calls.models import CallStatus
from tests.accounts.factories import AccountFactory
from tests.scoring.factories import CallFactory

pytestmark = pytest.mark.django_db

DENVER = ZoneInfo("America/Denver")  # the world's North
LOS_ANGELES = ZoneInfo("America/Los_Angeles")
NEW_YORK = ZoneInfo("America/New_York")


def in_days(days: int, at: str = "10:30", zone: ZoneInfo = DENVER) -> dt.datetime:
    """``days`` from today in ``zone``, at ``at`` there."""
    day = timezone.now().astimezone(zone).date() + dt.timedelta(days=days)
    return dt.datetime.combine(day, dt.time.fromisoformat(at), zone)


def form(moment: dt.datetime, **more: str) -> dict[str, str]:
    return {
        "appointment-date": moment.date().isoformat(),
        "appointment-time": moment.strftime("%H:%M"),
        "appointment-kind": more.get("kind", Kind.SALES_VISIT),
        "appointment-vehicle": more.get("vehicle", ""),
    }


def set_url(call) -> str:
    return reverse("pages:call-appointment-set", args=[call.pk])


def change_url(appointment, to: str) -> str:
    return reverse(
        "pages:call-appointment-change",
        args=[appointment.call_id, appointment.pk, to],
    )


def history(appointment) -> list[tuple[str, str, str, int | None]]:
    return list(
        AppointmentChange.objects.filter(appointment=appointment).values_list(
            "status_from", "status_to", "by", "by_user"
        )
    )


def squeezed(html: str) -> str:
    """White space collapsed, and none left beside a tag."""
    return re.sub(r"\s*(<[^>]*>)\s*", r"\1", " ".join(html.split()))


def card(client, call) -> str:
    response = client.get(reverse("pages:call-detail", args=[call.pk]))
    assert response.status_code == 200
    body = squeezed(response.content.decode())
    if 'id="appointments"' not in body:
        return ""
    return body.split('id="appointments"')[1].split("</section>")[0]


def proposal(call, starts_at: dt.datetime) -> Appointment:
    return appointment_make(
        call=call,
        starts_at=starts_at,
        by=Actor.SERVICE,
        status=Status.PROPOSED,
        kind=Kind.TEST_DRIVE,
        vehicle="2024 Honda Civic",
        evidence="Saturday at ten thirty works.",
    )


# --- the call page's card


def test_a_manager_sets_an_appointment_in_the_dealers_time(world, signed_in):
    call = world.agent_call
    call.called_on_year, call.called_on_make, call.called_on_model = (
        "2024",
        "Honda",
        "Civic",
    )
    call.save(update_fields=["called_on_year", "called_on_make", "called_on_model"])
    client = signed_in(world.manager)
    shown = card(client, call)
    assert "No appointment made on this call." in shown
    assert 'value="2024 Honda Civic"' in shown  # the vehicle the lead called on
    assert "America/Denver" in shown  # the time is the dealer's
    assert "Set the appointment</button>" in shown

    moment = in_days(3)
    response = client.post(
        set_url(call), form(moment, kind=Kind.TEST_DRIVE, vehicle="2024 Honda Civic")
    )

    assert response.status_code == 302
    assert response["Location"] == f"/calls/{call.pk}/#appointments"
    made = Appointment.objects.get(call=call)
    assert (made.starts_at, made.kind, made.vehicle, made.status) == (
        moment,
        Kind.TEST_DRIVE,
        "2024 Honda Civic",
        Status.SET,
    )
    assert (made.set_by, made.set_by_user) == (Actor.MANAGER, world.manager)
    assert history(made) == [("", "set", "manager", world.manager.pk)]
    followed = client.get(response["Location"])
    abbreviation = moment.strftime("%Z")  # MST or MDT
    assert (
        f"Appointment set for {moment:%a %Y-%m-%d} 10:30 {abbreviation}."
        in followed.content.decode()
    )
    shown = card(client, call)
    assert f"{moment:%a %Y-%m-%d} 10:30 {abbreviation}</strong>" in shown
    assert "Test drive · 2024 Honda Civic" in shown
    assert "Set by Morgan Reyes (manager)" in shown
    assert "new → Set by Morgan Reyes (manager)" in shown
    assert "Move the appointment</button>" in shown


def test_the_agent_sets_it_then_moves_it_to_another_time(world, signed_in):
    call = world.agent_call
    client = signed_in(world.agent)
    client.post(set_url(call), form(in_days(2)))
    first = Appointment.objects.get(call=call)

    response = client.post(set_url(call), form(in_days(4, "15:00")), follow=True)

    assert f"Appointment moved to {in_days(4, '15:00'):%a %Y-%m-%d} 15:00" in (
        response.content.decode()
    )
    first.refresh_from_db()
    moved = Appointment.objects.get(replaces=first)
    assert (first.status, moved.status, moved.starts_at) == (
        Status.RESCHEDULED,
        Status.SET,
        in_days(4, "15:00"),
    )
    assert history(first) == [
        ("", "set", "agent", world.agent.pk),
        ("set", "rescheduled", "agent", world.agent.pk),
    ]
    assert history(moved) == [("", "set", "agent", world.agent.pk)]
    assert f"moved to {in_days(4, '15:00'):%a %Y-%m-%d} 15:00" in card(client, call)


def test_confirmed_kept_and_corrected_each_with_the_role_and_person(world, signed_in):
    call = world.agent_call
    booked = appointment_set_for_call(
        call=call, starts_at=in_days(1), by=Actor.AGENT, by_user=world.agent
    )
    agent = signed_in(world.agent)
    assert "Confirm</button>" in card(agent, call)
    assert agent.post(change_url(booked, "confirmed")).status_code == 302
    manager = signed_in(world.manager)
    response = manager.post(change_url(booked, "kept"), follow=True)
    assert "Marked kept: the lead came" in response.content.decode()
    assert "No-show after all</button>" in card(manager, call)
    signed_in(world.staff).post(change_url(booked, "no_show"))

    booked.refresh_from_db()
    assert booked.status == Status.NO_SHOW
    assert history(booked) == [
        ("", "set", "agent", world.agent.pk),
        ("set", "confirmed", "agent", world.agent.pk),
        ("confirmed", "kept", "manager", world.manager.pk),
        ("kept", "no_show", "staff", world.staff.pk),
    ]
    shown = card(signed_in(world.manager), call)
    assert "Kept → No-show by Stef (support)" in shown
    assert "Set → Confirmed by Avery Lopez (agent)" in shown


@pytest.mark.parametrize(
    ("role", "to", "actor"),
    [
        ("agent", "no_show", "agent"),
        ("global_manager", "cancelled", "manager"),
        ("manager", "kept", "manager"),
    ],
)
def test_each_mark_is_kept_with_who_made_it(world, signed_in, role, to, actor):
    booked = appointment_set_for_call(
        call=world.agent_call, starts_at=in_days(1), by=Actor.AGENT
    )
    user = world.users()[role]
    assert signed_in(user).post(change_url(booked, to)).status_code == 302
    booked.refresh_from_db()
    assert booked.status == to
    assert history(booked)[-1] == ("set", to, actor, user.pk)


def test_a_proposal_is_set_by_a_person(world, signed_in):
    call = world.agent_call
    proposed = proposal(call, in_days(5))
    client = signed_in(world.manager)
    shown = card(client, call)
    assert "Proposed by the service from the transcript" in shown
    assert "Saturday at ten thirty works." in shown
    assert "Set this appointment</button>" in shown
    assert "Dismiss</button>" in shown

    response = client.post(change_url(proposed, "set"), follow=True)

    assert "Appointment set (" in response.content.decode()
    proposed.refresh_from_db()
    assert proposed.status == Status.SET
    assert history(proposed) == [
        ("", "proposed", "service", None),
        ("proposed", "set", "manager", world.manager.pk),
    ]


def test_the_form_at_the_proposals_time_accepts_it(world, signed_in):
    call = world.agent_call
    proposed = proposal(call, in_days(5))
    client = signed_in(world.agent)
    assert "Move the appointment</button>" in card(client, call)

    response = client.post(set_url(call), form(in_days(5)), follow=True)

    assert "Proposal accepted: appointment set for" in response.content.decode()
    proposed.refresh_from_db()
    assert proposed.status == Status.SET
    assert Appointment.objects.filter(call=call).count() == 1
    assert history(proposed)[-1] == ("proposed", "set", "agent", world.agent.pk)


def test_a_proposal_is_dismissed(world, signed_in):
    proposed = proposal(world.agent_call, in_days(5))
    response = signed_in(world.manager).post(
        change_url(proposed, "cancelled"), follow=True
    )
    assert "Proposal dismissed." in response.content.decode()
    proposed.refresh_from_db()
    assert proposed.status == Status.CANCELLED
    assert history(proposed)[-1] == (
        "proposed",
        "cancelled",
        "manager",
        world.manager.pk,
    )


# --- refusals


def test_a_change_the_life_refuses_is_422_and_changes_nothing(world, signed_in):
    booked = appointment_set_for_call(
        call=world.agent_call, starts_at=in_days(1), by=Actor.AGENT
    )
    appointment_change(appointment=booked, to=Status.CANCELLED, by=Actor.AGENT)
    before = history(booked)

    response = signed_in(world.manager).post(change_url(booked, "kept"))

    assert response.status_code == 422
    body = response.content.decode()
    assert "An appointment cancelled cannot become kept." in body
    assert 'role="alert"' in body
    booked.refresh_from_db()
    assert booked.status == Status.CANCELLED
    assert history(booked) == before


def _spring_forward() -> dt.date:
    """The next day within a year when Denver's clocks go forward."""
    today = timezone.now().astimezone(DENVER).date()
    for days in range(1, 366):
        day = today + dt.timedelta(days=days)
        noon = dt.datetime.combine(day, dt.time(12), DENVER)
        offsets = [
            moment.astimezone(dt.UTC).replace(tzinfo=None) - moment.replace(tzinfo=None)
            for moment in (noon, noon - dt.timedelta(days=1))
        ]
        if offsets[0] < offsets[1]:  # fewer hours behind UTC: the clocks went forward
            return day
    raise AssertionError("no spring forward within a year")


@pytest.mark.parametrize(
    ("data", "problem"),
    [
        (
            {"appointment-date": "", "appointment-time": "10:30"},
            "This field is required.",
        ),
        (
            {"appointment-date": "2026-02-30", "appointment-time": "10:30"},
            "Enter a valid date.",
        ),
        (
            {"appointment-date": "tomorrow", "appointment-time": "25:00"},
            "Enter a valid time.",
        ),
        (
            {"appointment-date": "past", "appointment-time": "10:30"},
            "That is more than a day ago: an appointment is set from yesterday on.",
        ),
        (
            {"appointment-date": "9999-12-31", "appointment-time": "23:59"},
            "Enter a date within a year from today.",
        ),
        (
            {"appointment-date": "spring", "appointment-time": "02:30"},
            "02:30 does not exist on",
        ),
    ],
)
def test_a_time_that_is_not_valid_is_422_and_sets_nothing(
    world, signed_in, data, problem
):
    days = {
        "tomorrow": in_days(1).date().isoformat(),
        "past": in_days(-2).date().isoformat(),
        "spring": _spring_forward().isoformat(),
    }
    data = {
        **data,
        "appointment-date": days.get(
            data["appointment-date"], data["appointment-date"]
        ),
        "appointment-kind": Kind.SALES_VISIT,
    }
    response = signed_in(world.manager).post(set_url(world.agent_call), data)
    assert response.status_code == 422
    assert problem in response.content.decode()
    assert not Appointment.objects.exists()


def test_yesterday_is_still_accepted(world, signed_in):
    moment = timezone.now().astimezone(DENVER) - dt.timedelta(hours=20)
    response = signed_in(world.manager).post(set_url(world.agent_call), form(moment))
    assert response.status_code == 302
    assert Appointment.objects.get().starts_at == moment.replace(
        second=0, microsecond=0
    )


def test_a_scorer_reads_the_card_and_changes_nothing(world, signed_in):
    call = world.agent_call
    booked = appointment_set_for_call(call=call, starts_at=in_days(1), by=Actor.AGENT)
    client = signed_in(world.scorer)
    shown = card(client, call)
    assert f'id="appointment-{booked.pk}"' in shown
    assert "<form" not in shown
    assert "<button" not in shown
    assert client.post(set_url(call), form(in_days(2))).status_code == 403
    assert client.post(change_url(booked, "kept")).status_code == 403
    booked.refresh_from_db()
    assert booked.status == Status.SET
    assert Appointment.objects.count() == 1


def test_another_organizations_manager_finds_neither_call_nor_appointment(
    world, signed_in
):
    booked = appointment_set_for_call(
        call=world.agent_call, starts_at=in_days(1), by=Actor.AGENT
    )
    client = signed_in(world.foreign_manager)
    assert client.post(set_url(world.agent_call), form(in_days(2))).status_code == 404
    assert client.post(change_url(booked, "kept")).status_code == 404
    mark = reverse("pages:appointment-mark", args=[booked.pk, "kept"])
    assert client.post(mark, {"day": in_days(1).date().isoformat()}).status_code == 404
    booked.refresh_from_db()
    assert booked.status == Status.SET
    assert history(booked) == [("", "set", "agent", None)]


def test_an_appointment_of_another_call_is_not_found_on_this_one(world, signed_in):
    other = appointment_set_for_call(
        call=world.other_agent_call, starts_at=in_days(1), by=Actor.AGENT
    )
    url = reverse(
        "pages:call-appointment-change",
        args=[world.agent_call.pk, other.pk, "kept"],
    )
    assert signed_in(world.manager).post(url).status_code == 404
    url = reverse(
        "pages:call-appointment-change",
        args=[world.agent_call.pk, other.pk, "rescheduled"],
    )
    assert signed_in(world.manager).post(url).status_code == 404
    other.refresh_from_db()
    assert other.status == Status.SET


def test_a_call_not_answered_has_no_card_until_it_has_an_appointment(world, signed_in):
    call = world.other_agent_call
    call.status = CallStatus.NOANSWER
    call.save(update_fields=["status"])
    client = signed_in(world.manager)
    assert card(client, call) == ""
    appointment_set_for_call(call=call, starts_at=in_days(1), by=Actor.MANAGER)
    assert "Sales visit" in card(client, call)


# --- the day's appointments


@pytest.fixture
def boundaries(world):
    """On 2027-01-15: a lead in New York at 00:15 (05:15 UTC) and one in Los Angeles at
    23:30 (07:30 UTC the next day); the evening before in New York and the first minutes
    of the next day in Los Angeles are other days; and another organization's."""
    west = AccountFactory(
        organization=world.north.organization,
        name="West",
        timezone="America/Los_Angeles",
    )
    day = dt.date(2027, 1, 15)

    def at(account, zone, day, hour, minute, **lead):
        call = CallFactory(account=account, **lead)
        return appointment_set_for_call(
            call=call,
            starts_at=dt.datetime.combine(day, dt.time(hour, minute), zone),
            by=Actor.AGENT,
            kind=Kind.SERVICE,
            vehicle="2019 Ford F-150",
        )

    return {
        "day": day,
        "east_early": at(world.south, NEW_YORK, day, 0, 15, first_name="Nia"),
        "west_late": at(west, LOS_ANGELES, day, 23, 30, first_name="Wes"),
        "east_before": at(
            world.south, NEW_YORK, day - dt.timedelta(days=1), 23, 50, first_name="Eve"
        ),
        "west_after": at(
            west, LOS_ANGELES, day + dt.timedelta(days=1), 0, 5, first_name="Wil"
        ),
        "foreign": at(world.foreign, DENVER, day, 12, 0, first_name="Fay"),
    }


def day_page(client, day: dt.date | None = None):
    query = {"day": day.isoformat()} if day else {}
    response = client.get(reverse("pages:appointments"), query)
    assert response.status_code == 200
    return response, squeezed(response.content.decode())


def test_the_day_lists_each_accounts_local_day_by_time(world, signed_in, boundaries):
    response, body = day_page(signed_in(world.global_manager), boundaries["day"])
    assert [a.pk for a in response.context["appointments"]] == [
        boundaries["east_early"].pk,
        boundaries["west_late"].pk,
    ]
    table = body.split('id="appointments-day"')[1]
    assert table.index("00:15 EST") < table.index("23:30 PST")
    assert 'Nia Rivera<span class="muted">+13035550123</span>' in table
    assert "Service</td><td>2019 Ford F-150</td><td>South</td>" in table
    assert f'href="/calls/{boundaries["east_early"].call_id}/#appointments"' in table
    for other in ("Eve", "Wil", "Fay"):
        assert other not in table


def test_another_organization_never_sees_the_days_appointments(
    world, signed_in, boundaries
):
    response, body = day_page(signed_in(world.foreign_manager), boundaries["day"])
    assert [a.pk for a in response.context["appointments"]] == [
        boundaries["foreign"].pk
    ]
    for other in ("Nia", "Wes", "South", "West"):
        assert other not in body.split('id="appointments-day"')[1]


def test_a_manager_marks_one_kept_and_comes_back_to_the_same_day(
    world, signed_in, boundaries
):
    client = signed_in(world.global_manager)
    east = boundaries["east_early"]
    _, body = day_page(client, boundaries["day"])
    assert f"/appointments/{east.pk}/kept" in body
    assert f"/appointments/{east.pk}/no_show" in body

    response = client.post(
        reverse("pages:appointment-mark", args=[east.pk, "kept"]),
        {"day": "2027-01-15"},
    )

    assert response.status_code == 302
    assert response["Location"] == "/appointments/?day=2027-01-15"
    east.refresh_from_db()
    assert east.status == Status.KEPT
    assert history(east)[-1] == ("set", "kept", "manager", world.global_manager.pk)
    _, body = day_page(client, boundaries["day"])
    row = body.split(f'id="appointment-{east.pk}"')[1].split("</tr>")[0]
    assert "Kept</span>" in row
    assert "<button" not in row  # marked: the call page corrects it


def test_a_refused_mark_on_the_day_page_is_422_and_changes_nothing(
    world, signed_in, boundaries
):
    east = boundaries["east_early"]
    appointment_change(appointment=east, to=Status.CANCELLED, by=Actor.AGENT)
    response = signed_in(world.global_manager).post(
        reverse("pages:appointment-mark", args=[east.pk, "no_show"]),
        {"day": "2027-01-15"},
    )
    assert response.status_code == 422
    assert "An appointment cancelled cannot become no-show." in (
        response.content.decode()
    )
    east.refresh_from_db()
    assert east.status == Status.CANCELLED


def test_a_proposal_on_the_day_waits_for_a_person(world, signed_in):
    proposed = proposal(world.agent_call, in_days(0, "23:59"))
    _, body = day_page(signed_in(world.manager))
    row = body.split(f'id="appointment-{proposed.pk}"')[1].split("</tr>")[0]
    assert "Waiting for a person" in row
    assert "Set or dismiss" in row
    assert "<button" not in row


def test_the_day_is_today_in_the_first_accounts_timezone_and_may_be_empty(
    world, signed_in
):
    response, body = day_page(signed_in(world.manager))
    assert response.context["day"] == timezone.now().astimezone(DENVER).date()
    assert "No appointments on" in body
    response, body = day_page(signed_in(world.staff), dt.date(2027, 1, 15))
    assert "No appointments on Fri 2027-01-15." in body


def test_a_day_that_is_not_valid_says_so_and_shows_today(world, signed_in):
    response = signed_in(world.manager).get(
        reverse("pages:appointments"), {"day": "0001-01-01"}
    )
    assert response.status_code == 200
    assert response.context["day"] == timezone.now().astimezone(DENVER).date()
    assert "Showing today." in response.content.decode()


@pytest.mark.parametrize("role", ["agent", "scorer"])
def test_the_day_is_for_managers(world, signed_in, role, boundaries):
    client = signed_in(world.users()[role])
    assert client.get(reverse("pages:appointments")).status_code == 403
    east = boundaries["east_early"]
    mark = reverse("pages:appointment-mark", args=[east.pk, "kept"])
    assert client.post(mark, {"day": "2027-01-15"}).status_code == 403
    assert 'href="/appointments/"' not in client.get("/calls/").content.decode()
    assert (
        'href="/appointments/"'
        in signed_in(world.manager).get("/calls/").content.decode()
    )
