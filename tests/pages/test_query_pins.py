"""Query counts pinned for the pages not pinned elsewhere (issue 22): each page, as its
usual role sees it, costs an exact number of queries on the pages' world, and the same
number once that world holds several times more calls, scores, legs, coaching, texts,
appointments, agents and accounts, so an N+1 fails here. (The call browser, call page,
thread, dashboard, coaching queue and scoring workspace GET are pinned in their own
modules.)"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from datetime import timedelta
from zoneinfo import ZoneInfo

import pytest
from django.contrib.auth.tokens import default_token_generator
from django.test import Client
from django.utils import timezone
from django.utils.encoding import force_bytes
from django.utils.http import urlsafe_base64_encode

from appointments.models import Actor, Appointment
from appointments.services import appointment_set_for_call
from calls.models import Call
from notify.models import Channel, Message, MessageKind, MessageStatus
from scoring.services import coaching_save, score_save
from tests.accounts.factories import AccountFactory
from tests.handover import hold_hand_overs
from tests.pages.conftest import PASSWORD, World, make_world
from tests.scoring.factories import CallFactory, answered_call, in_role
from tests.texting.factories import text_in_thread, texting_on

SCORED = {
    "cat1": True,
    "wow": True,
    "call_end": "Appointment set",
    "appointment_date": "2026-12-01",
}


def scored_call(world: World, *, agent_name: str = "agent", coached: bool) -> Call:
    """An answered call of North taken by one of its agents, with both legs, a score
    and, when ``coached``, the manager's coaching (not read yet)."""
    call = answered_call(getattr(world, agent_name), account=world.north)
    score_save(call=call, scorer=world.scorer, values=SCORED)
    if coached:
        coaching_save(call=call, coach=world.manager, notes="Ask for the appointment.")
    return call


def grow(world: World, times: int) -> None:
    """``times`` more of everything the pages read: scored and coached calls of both
    agents with their legs, calls waiting to be scored, texts, alerts sent, agents, and
    accounts in the global manager's reach."""
    now = timezone.now()
    for n in range(times):
        for name in ("agent", "other_agent"):
            call = scored_call(world, agent_name=name, coached=True)
            appointment_set_for_call(
                call=call, starts_at=now, by=Actor.AGENT, by_user=call.agent
            )
            Message.objects.create(
                key=f"alert:{call.pk}:{world.manager.pk}",
                account=world.north,
                call=call,
                user=world.manager,
                kind=MessageKind.ALERT,
                channel=Channel.EMAIL,
                status=MessageStatus.SENT,
                to=world.manager.username,
                subject="New lead",
                text="A new lead.",
                due_at=call.received_at,
            )
        CallFactory(account=world.north, received_at=now - timedelta(minutes=n + 5))
        CallFactory(account=world.south, received_at=now - timedelta(minutes=n + 5))
        text_in_thread(
            world.north,
            world.agent_call.phone,
            at=now - timedelta(minutes=n),
            body=f"Text {n}",
            sent_by=world.manager,
        )
        in_role("Agent", accounts=[world.north])
        account = AccountFactory(organization=world.north.organization)
        CallFactory(account=account, agent=in_role("Agent", accounts=[account]))


@dataclass(frozen=True)
class Page:
    """One request: who makes it, and what it is (``prepare`` sets up, uncounted, what
    the request acts on, and returns its path and form data: ``None`` for a GET)."""

    id: str
    role: str | None  # a World user, or None for a visitor not signed in
    prepare: Callable[[World], tuple[str, dict[str, str] | None]]
    queries: int
    status: int = 200


def get(path: str) -> Callable[[World], tuple[str, None]]:
    return lambda world: (path, None)


def post(path: str) -> Callable[[World], tuple[str, dict[str, str]]]:
    return lambda world: (path, {})


def reset(world: World) -> tuple[str, dict[str, str]]:
    return "/password/reset/", {"email": world.agent.email}


def coached_unread(world: World) -> tuple[str, dict[str, str]]:
    call = scored_call(world, coached=True)
    return f"/calls/{call.pk}/coaching/read", {}


def scored_uncoached(world: World) -> tuple[str, dict[str, str]]:
    call = scored_call(world, coached=False)
    return f"/calls/{call.pk}/coaching", {"notes": "Confirm the time."}


def waiting_call(world: World) -> Call:
    # Two days back: a day before the account's today whatever the hour, so its score
    # always marks the day stale for the rollup (five hours back was today or yesterday,
    # by the hour the test ran).
    return CallFactory(
        account=world.north, received_at=timezone.now() - timedelta(days=2)
    )


def score_post(world: World) -> tuple[str, dict[str, str]]:
    call = waiting_call(world)
    return f"/scoring/calls/{call.pk}/", {"call_end": "Not interested", "cat1": "on"}


def skip(world: World) -> tuple[str, dict[str, str]]:
    call = waiting_call(world)
    return f"/scoring/calls/{call.pk}/skip", {}


def of_an_earlier_day(world: World) -> None:
    """The agent's call two days back: what a page changes of it marks its day for the
    dashboard's rollup (a call of the account's today needs no mark), so the count never
    follows the clock (the fixture's call, three hours old, is of today or of yesterday
    by the time of day)."""
    earlier = timezone.now() - timedelta(days=2)
    Call.objects.filter(pk=world.agent_call.pk).update(received_at=earlier)


def reply(world: World) -> tuple[str, dict[str, str]]:
    of_an_earlier_day(world)
    return f"/calls/{world.agent_call.pk}/texts", {"body": "On my way."}


def reset_confirm(world: World) -> tuple[str, None]:
    user = world.agent
    uid = urlsafe_base64_encode(force_bytes(user.pk))
    return f"/password/reset/{uid}/{default_token_generator.make_token(user)}/", None


def password_change(world: World) -> tuple[str, dict[str, str]]:
    return "/password/change/", {
        "old_password": PASSWORD,
        "new_password1": PASSWORD,
        "new_password2": PASSWORD,
    }


def appointments_today(world: World) -> tuple[str, None]:
    """North's day of the appointments ``grow`` made."""
    today = timezone.now().astimezone(ZoneInfo(world.north.timezone)).date()
    return f"/appointments/?day={today.isoformat()}", None


def appointment_set(world: World) -> tuple[str, dict[str, str]]:
    # Three days ahead in the afternoon, for a lead no text went to yet: its three
    # reminders are stored whatever the time of day and however much data there is.
    ahead = timezone.now().astimezone(ZoneInfo(world.north.timezone)) + timedelta(
        days=3
    )
    Call.objects.filter(pk=world.agent_call.pk).update(phone="+13035550188")
    of_an_earlier_day(world)
    return f"/calls/{world.agent_call.pk}/appointments", {
        "appointment-date": ahead.date().isoformat(),
        "appointment-time": "15:00",
        "appointment-kind": "test_drive",
        "appointment-vehicle": "2024 Honda Civic",
    }


def grown_appointment(world: World) -> Appointment:
    appointment = Appointment.objects.filter(call__agent=world.agent).last()
    assert appointment is not None
    return appointment


def appointment_confirm(world: World) -> tuple[str, dict[str, str]]:
    appointment = grown_appointment(world)
    return f"/calls/{appointment.call_id}/appointments/{appointment.pk}/confirmed", {}


def appointment_mark(world: World) -> tuple[str, dict[str, str]]:
    day, _ = appointments_today(world)
    appointment = grown_appointment(world)
    return f"/appointments/{appointment.pk}/kept", {"day": day.split("=")[1]}


def sign_in(world: World) -> tuple[str, dict[str, str]]:
    return "/login/", {"username": world.manager.username, "password": PASSWORD}


PAGES = [
    Page("home, agent", "agent", get("/"), 3, 302),
    Page("home, manager", "manager", get("/"), 3, 302),
    Page("home, scorer", "scorer", get("/"), 3, 302),
    Page("home, staff", "staff", get("/"), 3, 302),
    Page("calls export CSV", "global_manager", get("/calls/export.csv"), 7),
    Page("coaching save", "manager", scored_uncoached, 12, 302),
    Page("coaching read", "agent", coached_unread, 5, 302),
    # 14: a reply first asks whether its number is shared across organizations (one
    # query), and closes the lead's open handoffs (one UPDATE); as a person's text to the
    # lead it marks its call's day stale for the speed numbers' rollup (the call read, one
    # INSERT).
    Page("text reply", "agent", reply, 14, 302),
    Page("scoring next", "scorer", post("/scoring/next"), 14, 302),
    # 23: a score marks its call's day stale for the dashboard's rollup (one INSERT).
    Page("scoring save", "scorer", score_post, 23, 302),
    Page("scoring skip", "scorer", skip, 5, 302),
    Page("agent page", "agent", get("/me/"), 8),
    # 5: the accounts' timezones, then the day's appointments with account, call, agent.
    Page("appointments of a day", "global_manager", appointments_today, 5),
    # 22: the open appointment is read by the page (to say set, moved or accepted) and
    # twice by the services, in their savepoints; its three reminders take the texting
    # settings, the opt-out and the texts counted against the limit once, then three
    # texts and their reminder rows (one INSERT); 27 with issue 39's rollup: the set
    # and each of the three texts mark the call's day stale (four INSERTs), and one more
    # for its marks (constant, whatever the data).
    Page("appointment set", "manager", appointment_set, 27, 302),
    # 13: with the day of an appointment already started marked stale (one INSERT).
    Page("appointment confirm", "agent", appointment_confirm, 13, 302),
    # 13: marked, the texts of its reminders not sent yet are canceled (one read); the
    # appointment's day marked stale for the rollup (one INSERT).
    Page("appointment mark", "manager", appointment_mark, 13, 302),
    Page("alerts, manager", "manager", get("/alerts/"), 6),
    Page("alerts, global manager", "global_manager", get("/alerts/"), 6),
    Page("alerts save", "global_manager", post("/alerts/"), 9, 302),
    Page("sign-in form", None, get("/login/"), 0),
    Page("sign in", None, sign_in, 9, 302),
    Page("sign out", "manager", post("/logout/"), 4, 302),
    Page("password change form", "agent", get("/password/change/"), 4),
    Page("password change", "agent", password_change, 12, 302),
    Page("password changed", "agent", get("/password/change/done/"), 4),
    Page("password reset form", None, get("/password/reset/"), 0),
    Page("password reset", None, reset, 1, 302),
    Page("password reset sent", None, get("/password/reset/sent/"), 0),
    Page("password reset link", None, reset_confirm, 5, 302),
    Page("password reset done", None, get("/password/reset/done/"), 0),
]


def request(client: Client, path: str, data: dict[str, str] | None) -> int:
    """Make the request and read the whole body; its status."""
    response = client.get(path) if data is None else client.post(path, data)
    if response.streaming:
        b"".join(response.streaming_content)  # type: ignore[attr-defined]
    return response.status_code


@pytest.fixture
def texting(monkeypatch: pytest.MonkeyPatch) -> None:
    """A text handed to the broker is dropped, not sent."""
    hold_hand_overs(monkeypatch, "texting.tasks.text_send_task")


# The pages' world with one more of everything, then five more: the same count for both.
SIZES = [1, 5]


@pytest.mark.parametrize("times", SIZES)
@pytest.mark.parametrize("page", PAGES, ids=lambda page: page.id)
def test_the_page_costs_the_same_exact_queries_however_much_data(
    client, db, texting, django_assert_num_queries, page, times
):
    world = make_world()
    texting_on(world.north)
    grow(world, times)
    if page.role:
        client.force_login(getattr(world, page.role))
    path, data = page.prepare(world)
    with django_assert_num_queries(page.queries):
        status = request(client, path, data)
    assert status == page.status
