"""Handoff timers: each moment a person must act opens one timer (one open per account,
lead and kind), each act of a person closes it, and one tenant's timers are never
another's. The moments come through the apps' own services, as in production."""

from __future__ import annotations

import datetime as dt
from zoneinfo import ZoneInfo

import pytest
from django.utils import timezone

from accounts.models import Account
from appointments.models import Actor, Status
from appointments.services import appointment_change, appointment_make
from calls.models import CallStatus, DialingSettings, NoAgentPolicy
from handoffs.effects import callback
from handoffs.models import ClosedBy, Handoff, HandoffKind
from handoffs.selectors import handoffs_open_of
from handoffs.services import handoff_open
from tests.accounts.factories import AccountFactory
from tests.calls.harness import World
from tests.handover import hold_hand_overs
from tests.scoring.factories import CallFactory, in_role
from tests.texting.conftest import texting_on
from tests.users.factories import agent
from texting.inbound import (
    possible_opt_out_confirm,
    possible_opt_out_dismiss,
    text_receive,
)
from texting.services import text_reply_send

pytestmark = pytest.mark.django_db

LEAD = "+13035550147"
SENDER = "+13035550999"
DENVER = ZoneInfo("America/Denver")


@pytest.fixture(autouse=True)
def _texts_held(monkeypatch):
    hold_hand_overs(monkeypatch, "texting.tasks.text_send_task")


@pytest.fixture
def account(db):
    account = AccountFactory(timezone="America/Denver", name="Demo Motors North")
    DialingSettings.objects.create(account=account, lead_attempt_limit=1)
    texting_on(account)
    return account


@pytest.fixture
def call(account):
    return CallFactory(account=account, phone=LEAD, status=CallStatus.BUSY)


@pytest.fixture
def manager(account):
    return in_role("Manager", accounts=[account], email="boss@north.example")


@pytest.fixture
def receive(django_capture_on_commit_callbacks):
    """A lead's text as Twilio posts it, committed."""
    sids = iter(range(1, 100))

    def received(body, *, sender=LEAD, to=SENDER):
        with django_capture_on_commit_callbacks(execute=True):
            return text_receive(
                to_number=to,
                from_number=sender,
                body=body,
                provider="twilio",
                provider_id=f"SM{next(sids)}",
            )

    return received


def timers(**filters):
    return list(
        Handoff.objects.filter(**filters)
        .order_by("pk")
        .values_list("kind", "opened_by", "closed_by")
    )


def test_a_leads_reply_opens_one_timer_and_a_persons_text_closes_it(
    account, call, manager, receive
):
    first = receive("Is the blue one still there?")
    receive("Hello?")  # a second reply while the first waits: the same timer

    assert timers() == [(HandoffKind.REPLY, f"text {first.pk}", "")]
    (handoff,) = Handoff.objects.all()
    assert (handoff.account, handoff.phone, handoff.call) == (account, LEAD, call)
    assert handoff.opened_at == first.created_at

    reply = text_reply_send(call=call, user=manager, body="It is! Come by today?")

    handoff.refresh_from_db()
    assert (handoff.closed_by, handoff.closed_by_user) == (ClosedBy.TEXT, manager)
    assert handoff.closed_at == reply.created_at
    # The next reply opens a new timer: the last one is closed for good.
    receive("Great, 5pm?")
    assert [row[2] for row in timers()] == [ClosedBy.TEXT, ""]


def test_an_automatic_text_closes_nothing(account, call, receive):
    from texting.models import Purpose
    from texting.services import text_store

    receive("Is the blue one still there?")
    text_store(
        account=account,
        config=account.texting_settings,
        lead_phone=LEAD,
        call=call,
        purpose=Purpose.NOT_REACHED,
        to_number=LEAD,
        body="Sorry we missed you",
    )
    assert timers() == [(HandoffKind.REPLY, timers()[0][1], "")]


def test_a_call_me_reply_opens_one_timer_on_the_lead_s_call(account, call, receive):
    text = receive("call me")

    assert text.queued_call is not None
    (handoff,) = Handoff.objects.all()
    assert (handoff.kind, handoff.opened_by) == (HandoffKind.REPLY, f"text {text.pk}")
    # One timer (the reply's, opened once however texting reads it), on the lead's call
    # the reply came on.
    assert handoff.call == call


@pytest.mark.parametrize(
    ("decide", "closed_by"),
    [
        (possible_opt_out_confirm, ClosedBy.DECISION),
        (possible_opt_out_dismiss, ClosedBy.DECISION),
    ],
    ids=["confirmed", "dismissed"],
)
def test_a_possible_opt_out_opens_a_timer_a_decision_closes(
    account, call, manager, receive, decide, closed_by
):
    text = receive("take me off your list")

    assert timers() == [(HandoffKind.OPT_OUT, f"text {text.pk}", "")]
    # A person's text cannot close it: texting is paused until someone decides.
    decide(call=call, user=manager)

    (handoff,) = Handoff.objects.all()
    assert (handoff.closed_by, handoff.closed_by_user) == (closed_by, manager)


def test_the_leads_own_stop_closes_a_possible_opt_out(account, call, receive):
    receive("take me off your list")
    receive("STOP")

    (handoff,) = Handoff.objects.all()
    assert (handoff.kind, handoff.closed_by) == (HandoffKind.OPT_OUT, ClosedBy.LEAD)


def test_the_leads_start_ends_a_possible_opt_out(account, call, receive):
    receive("take me off your list")
    receive("START")

    (handoff,) = Handoff.objects.all()
    assert (handoff.kind, handoff.closed_by) == (HandoffKind.OPT_OUT, ClosedBy.LEAD)


def test_a_proposed_appointment_opens_a_timer_a_person_setting_it_closes(
    account, manager
):
    call = CallFactory(account=account, phone=LEAD)
    proposal = appointment_make(
        call=call,
        starts_at=dt.datetime(2026, 11, 28, 10, 30, tzinfo=DENVER),
        by=Actor.SERVICE,
        status=Status.PROPOSED,
    )
    assert timers() == [(HandoffKind.APPOINTMENT, f"appointment {proposal.pk}", "")]

    appointment_change(
        appointment=proposal, to=Status.SET, by=Actor.MANAGER, by_user=manager
    )

    (handoff,) = Handoff.objects.all()
    assert (handoff.closed_by, handoff.closed_by_user) == (ClosedBy.DECISION, manager)


def test_a_dismissed_proposal_closes_its_timer_and_the_service_moving_it_does_not(
    account, manager
):
    call = CallFactory(account=account, phone=LEAD)
    proposal = appointment_make(
        call=call,
        starts_at=dt.datetime(2026, 11, 28, 10, 30, tzinfo=DENVER),
        by=Actor.SERVICE,
        status=Status.PROPOSED,
    )
    # The transcript's reading moves its own proposal: still waiting for a person.
    moved = appointment_make(
        call=call,
        starts_at=dt.datetime(2026, 11, 28, 11, 30, tzinfo=DENVER),
        by=Actor.SERVICE,
        status=Status.PROPOSED,
    )
    assert moved.status == Status.PROPOSED
    assert timers() == [(HandoffKind.APPOINTMENT, f"appointment {proposal.pk}", "")]

    appointment_change(
        appointment=moved, to=Status.CANCELLED, by=Actor.MANAGER, by_user=manager
    )
    assert timers() == [
        (HandoffKind.APPOINTMENT, f"appointment {proposal.pk}", ClosedBy.DECISION)
    ]


CALLBACK = [
    {
        "side": "agent",
        "start": 0,
        "end": 2,
        "text": "Hi Sam, it's Alex at Demo Motors.",
    },
    {
        "side": "lead",
        "start": 3,
        "end": 5,
        "text": "I'm at work, can you call me back tomorrow at 4?",
    },
    {"side": "agent", "start": 6, "end": 8, "text": "Sure, I'll call you back then."},
]


def test_a_callback_asked_for_on_a_call_opens_a_timer_from_its_time(
    account, monkeypatch
):
    call = CallFactory(account=account, phone=LEAD)
    call.transcript_turns = CALLBACK
    call.transcript_language = "en"
    call.save()
    today = timezone.localtime(timezone.now(), DENVER).date()
    monkeypatch.setattr(
        "handoffs.effects.reading_context",
        lambda c: {
            "lead_first_name": "Sam",
            "dealer": "Demo Motors",
            "call_started_at": dt.datetime.combine(today, dt.time(9), DENVER),
            "received_at": dt.datetime.combine(today, dt.time(8, 59), DENVER),
            "timezone": "America/Denver",
        },
    )

    handoff = callback(call_id=call.pk)

    assert handoff is not None
    assert (handoff.kind, handoff.opened_by) == (
        HandoffKind.CALLBACK,
        f"call {call.pk}",
    )
    # The limit counts from the time the lead asked for, in the account's timezone.
    tomorrow = today + dt.timedelta(days=1)
    assert handoff.wait_from == dt.datetime.combine(tomorrow, dt.time(16), DENVER)
    assert handoff.opened_at < handoff.wait_from
    assert callback(call_id=call.pk) is None  # read again: the same timer


def test_a_call_without_a_callback_opens_nothing(account):
    call = CallFactory(account=account, phone=LEAD)
    call.transcript_turns = CALLBACK[:1]
    call.save()
    assert callback(call_id=call.pk) is None
    assert timers() == []


@pytest.fixture
def world(monkeypatch, django_capture_on_commit_callbacks):
    return World(monkeypatch, django_capture_on_commit_callbacks)


def test_a_noagent_call_opens_a_timer_and_an_agent_connected_closes_it(
    world, account, receive
):
    account.dialing_settings.no_agent_policy = NoAgentPolicy.END
    account.dialing_settings.save()
    missed = world.queue_call(account=account, phone=LEAD, received_at=timezone.now())
    world.run()
    missed.refresh_from_db()
    assert missed.status == CallStatus.NOAGENT
    receive("Anyone there?")  # the lead's reply: a second timer of another kind
    assert timers() == [
        (HandoffKind.NO_AGENT, f"call {missed.pk}", ""),
        (HandoffKind.REPLY, timers()[1][1], ""),
    ]

    taker = agent(account, phone="+13035550140")
    answered = world.queue_call(account=account, phone=LEAD, received_at=timezone.now())
    world.run()
    answered.refresh_from_db()

    assert answered.status == CallStatus.ANSWER
    assert [row[2] for row in timers()] == [ClosedBy.CALL, ClosedBy.CALL]
    assert {h.closed_by_user for h in Handoff.objects.all()} == {taker}


def test_an_answered_call_to_another_lead_closes_nothing(world, account, receive):
    receive("Is the blue one still there?")
    agent(account, phone="+13035550140")
    world.queue_call(account=account, phone="+13035550999", received_at=timezone.now())
    world.run()
    assert [row[2] for row in timers()] == [""]


def test_two_tenants_never_see_or_close_each_others_timers(account, call, receive):
    other = AccountFactory(timezone="America/Chicago", name="Lakeside Honda")
    handoff_open(
        account_id=other.pk, phone=LEAD, kind=HandoffKind.REPLY, opened_by="text 0"
    )
    receive("Is the blue one still there?")
    mine = in_role("Manager", accounts=[account])

    text_reply_send(call=call, user=mine, body="It is!")

    assert [
        h.account
        for h in handoffs_open_of(accounts=Account.objects.filter(pk=other.pk))
    ] == [other]
    assert handoffs_open_of(accounts=Account.objects.filter(pk=account.pk)) == []
    assert Handoff.objects.get(account=other).closed_at is None


def test_a_c_that_confirms_an_appointment_needs_no_person_and_an_r_does(
    monkeypatch, receive
):
    from appointments.models import ReminderKind
    from tests.appointments.test_reminders import in_days, reminders, texting_call
    from texting import providers
    from texting.services import text_send

    monkeypatch.setattr(providers, "_later", lambda *args, **kwargs: None)
    call = texting_call()
    booked = appointment_make(call=call, starts_at=in_days(3, 15), by=Actor.AGENT)
    assert text_send(text_id=reminders(booked)[ReminderKind.BOOKED].pk) == "sent"

    receive("C", to="+13035550100")
    booked.refresh_from_db()
    assert booked.status == Status.CONFIRMED
    assert timers() == []

    text = receive("R", to="+13035550100")
    assert timers() == [(HandoffKind.REPLY, f"text {text.pk}", "")]


def test_a_reply_agreeing_a_time_a_person_texted_waits_as_a_proposal(
    account, call, manager, receive
):
    text_reply_send(call=call, user=manager, body="Would Saturday at 10:30 work?")

    receive("Yes, Saturday at 10:30 works, see you then")

    (handoff,) = Handoff.objects.all()
    assert handoff.kind == HandoffKind.APPOINTMENT
    assert handoff.closed_at is None
