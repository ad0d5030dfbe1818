"""Alerts to managers: each trigger, told once per event, to the right people of the right
tenant, by e-mail or text, within the user's hours unless they asked otherwise."""

from __future__ import annotations

from datetime import UTC, datetime, time, timedelta

import pytest
from django.urls import reverse
from django.utils import timezone

from calls.models import (
    AttemptOutcome,
    CallAttempt,
    CallStatus,
    DialingSettings,
    Leg,
    NoAgentPolicy,
)
from notify.alerts import alerts_for_offer, alerts_sweep
from notify.models import (
    AlertKind,
    AlertSubscription,
    Message,
    MessageStatus,
    NotifySettings,
)
from notify.services import message_send
from scoring.services import score_save
from tests.accounts.factories import AccountFactory
from tests.calls.harness import World
from tests.handover import hold_hand_overs
from tests.notify.conftest import parts
from tests.scoring.factories import CallFactory, in_role
from tests.users.factories import agent
from texting.models import Purpose, Text, TextingSettings
from users.models import UserScheduleDay

pytestmark = pytest.mark.django_db

# A Wednesday, 10:00 in Denver: the factory accounts (weekdays 08:00-18:00) are open.
OPEN = datetime(2026, 11, 25, 17, 0, tzinfo=UTC)


@pytest.fixture
def dispatched(monkeypatch):
    ids: list[int] = []
    hold_hand_overs(
        monkeypatch,
        "notify.tasks.message_send_task",
        then=lambda message_id, countdown: ids.append(message_id),
    )
    return ids


@pytest.fixture
def world(monkeypatch, django_capture_on_commit_callbacks, dispatched):
    hold_hand_overs(monkeypatch, "texting.tasks.text_send_task")
    return World(monkeypatch, django_capture_on_commit_callbacks)


@pytest.fixture
def account(db):
    account = AccountFactory(name="Front Range Toyota")
    DialingSettings.objects.create(account=account, lead_attempt_limit=1)
    return account


def manager_of(account, email, **kwargs):
    return in_role("Manager", accounts=[account], email=email, **kwargs)


def queue(world, account, phone):
    return world.queue_call(
        account=account,
        phone=phone,
        received_at=timezone.now(),
        first_name="Sam",
        last_name="Rivera",
    )


def alerts(**filters):
    return list(Message.objects.filter(kind="alert", **filters).order_by("id"))


def test_a_lead_not_reached_tells_the_accounts_managers_once_by_email(
    world, account, smtp_server
):
    agent(account, phone="+13035550140")
    boss = manager_of(account, "boss@frontrange.example")
    other_account = AccountFactory(organization=account.organization)
    manager_of(other_account, "elsewhere@frontrange.example")
    in_role(
        "Global Manager",
        organizations=[account.organization],
        email="group@frontrange.example",
    )

    call = queue(world, account, "+13035550000")  # the simulator: no answer
    world.run()
    call.refresh_from_db()
    assert call.status == CallStatus.NOANSWER

    (message,) = alerts()
    assert (message.user, message.alert, message.call) == (
        boss,
        AlertKind.NOT_REACHED,
        call,
    )
    assert message_send(message_id=message.pk) == "sent"
    (mail,) = smtp_server.mailbox.to("boss@frontrange.example")
    assert mail["Subject"] == "Lead not reached (NOANSWER): Sam Rivera"
    text = parts(mail)["text/plain"]
    assert "Sam Rivera (+13035550000), a lead of Front Range Toyota" in text
    assert (
        "https://leads.example.test" + reverse("pages:call-detail", args=[call.pk])
        in text
    )
    assert len(smtp_server.mailbox.received) == 1

    # The same event told again: nothing more.
    from notify.alerts import alerts_for_call

    assert alerts_for_call(call=call) == 0
    assert len(alerts()) == 1


def test_a_call_ending_noagent_alerts(world, account):
    account.dialing_settings.no_agent_policy = NoAgentPolicy.END
    account.dialing_settings.save()
    # No phone: a user of the account with one is offered calls in the account's hours.
    manager_of(account, "boss@frontrange.example", phone_number="")
    call = queue(world, account, "+13035550123")
    world.run()
    call.refresh_from_db()
    assert call.status == CallStatus.NOAGENT
    (message,) = alerts()
    assert message.alert == AlertKind.NO_AGENT
    assert message.subject == "Lead no agent took the call (NOAGENT): Sam Rivera"


def test_an_answered_call_alerts_nobody(world, account):
    agent(account, phone="+13035550140")
    manager_of(account, "boss@frontrange.example")
    queue(world, account, "+13035550123")
    world.run()
    assert alerts() == []


def test_a_global_manager_who_subscribes_is_told_and_one_who_unsubscribes_is_not(
    world, account
):
    agent(account, phone="+13035550140")
    boss = manager_of(account, "boss@frontrange.example")
    group = in_role(
        "Global Manager",
        organizations=[account.organization],
        email="group@frontrange.example",
    )
    AlertSubscription.objects.create(
        user=group, account=account, kind=AlertKind.NOT_REACHED
    )
    AlertSubscription.objects.create(
        user=boss, account=account, kind=AlertKind.NOT_REACHED, by_email=False
    )
    queue(world, account, "+13035550000")
    world.run()
    assert [m.user for m in alerts()] == [group]


def test_outside_the_users_hours_the_alert_is_kept_not_sent_unless_they_asked(
    world, account, dispatched
):
    agent(account, phone="+13035550140")
    now = timezone.now().astimezone(account_zone(account))
    # Hours that are not now: an hour, four hours away.
    start = time((now.hour + 4) % 20)
    night = manager_of(account, "night@frontrange.example", timezone=account.timezone)
    night.schedule_active = True
    night.save(update_fields=["schedule_active"])
    UserScheduleDay.objects.bulk_create(
        UserScheduleDay(
            user=night,
            weekday=d,
            start_time=start,
            end_time=time(start.hour + 1),
        )
        for d in range(7)
    )
    keen = manager_of(account, "keen@frontrange.example")
    keen.schedule_active = True
    keen.save(update_fields=["schedule_active"])
    UserScheduleDay.objects.bulk_create(
        UserScheduleDay(
            user=keen, weekday=d, start_time=start, end_time=time(start.hour + 1)
        )
        for d in range(7)
    )
    AlertSubscription.objects.create(
        user=keen, account=account, kind=AlertKind.NOT_REACHED, outside_hours=True
    )
    dispatched.clear()
    queue(world, account, "+13035550000")
    world.run()

    held, sent = alerts(user=night), alerts(user=keen)
    assert [(m.status, m.error) for m in held] == [
        (MessageStatus.HELD, "Outside the user's hours.")
    ]
    assert [m.status for m in sent] == [MessageStatus.PENDING]
    assert dispatched == [sent[0].pk]
    assert message_send(message_id=held[0].pk) == "done"


def account_zone(account):
    from zoneinfo import ZoneInfo

    return ZoneInfo(account.timezone)


def test_by_text_when_the_account_texts(world, account):
    TextingSettings.objects.create(
        account=account,
        enabled=True,
        sender="+13035550999",
        quiet_start=time(0),
        quiet_end=time(23, 59, 59),
    )
    agent(account, phone="+13035550140")
    boss = manager_of(account, "boss@frontrange.example", phone_number="+13035550177")
    AlertSubscription.objects.create(
        user=boss, account=account, kind=AlertKind.NOT_REACHED, by_text=True
    )
    call = queue(world, account, "+13035550000")
    world.run()

    channels = sorted(m.channel for m in alerts(user=boss))
    assert channels == ["email", "text"]
    (text,) = Text.objects.filter(purpose=Purpose.ALERT)
    assert (text.to_number, text.recipient, text.call) == ("+13035550177", boss, call)
    assert text.body.startswith("Lead not reached (NOANSWER): Sam Rivera.")


def test_a_lead_waiting_longer_than_the_accounts_wait_while_open_alerts_once(account):
    manager_of(account, "boss@frontrange.example")
    waiting = CallFactory(
        account=account,
        status=CallStatus.QUEUED,
        received_at=OPEN - timedelta(minutes=6),
        ended_at=None,
    )
    later = CallFactory(
        account=account,
        status=CallStatus.QUEUED,
        received_at=OPEN - timedelta(minutes=4),
        ended_at=None,
    )
    assert alerts_sweep(now=OPEN) == {"waiting": 1}
    (message,) = alerts()
    assert (message.call, message.alert) == (waiting, AlertKind.WAITING)
    assert message.subject == "Lead waiting 6 min for an agent: Sam Rivera"
    # Two minutes on: the second call is past five minutes; the first is not told again.
    assert alerts_sweep(now=OPEN + timedelta(minutes=2)) == {"waiting": 1}
    assert [m.call for m in alerts()] == [waiting, later]


def test_a_lead_waiting_one_minute_is_said_to_have_waited_1_minute(account):
    manager_of(account, "boss@frontrange.example")
    NotifySettings.objects.create(account=account, waiting_minutes=1)
    CallFactory(
        account=account,
        status=CallStatus.QUEUED,
        received_at=OPEN - timedelta(seconds=90),
        ended_at=None,
    )
    assert alerts_sweep(now=OPEN) == {"waiting": 1}
    (message,) = alerts()
    assert message.subject == "Lead waiting 1 min for an agent: Sam Rivera"
    assert message.text.startswith(
        "Sam Rivera (+13035550123) has waited 1 minute for an agent of Front Range "
        "Toyota, which is open."
    )


def test_one_poisoned_waiting_lead_never_holds_back_the_others_alerts(
    account, monkeypatch
):
    """Each item of the sweep alone (core.sweeps): the ten healthy leads are told of,
    the poisoned one is counted, then set aside with its reason after failing again."""
    from core.models import SetAside
    from core.sweeps import SET_ASIDE_AFTER
    from notify import alerts as alerts_module

    manager_of(account, "boss@frontrange.example")
    calls = [
        CallFactory(
            account=account,
            status=CallStatus.QUEUED,
            received_at=OPEN - timedelta(minutes=6 + n),
            ended_at=None,
        )
        for n in range(11)
    ]
    poisoned = calls[5]
    real_send = alerts_module.alert_send

    def alert_send(**kwargs):
        if kwargs["call"] == poisoned:
            raise ValueError("All strings must be XML compatible")
        return real_send(**kwargs)

    monkeypatch.setattr(alerts_module, "alert_send", alert_send)

    assert alerts_sweep(now=OPEN) == {"waiting": 10}
    assert sorted(m.call_id for m in alerts()) == sorted(
        c.pk for c in calls if c != poisoned
    )
    for _ in range(SET_ASIDE_AFTER - 1):
        alerts_sweep(now=OPEN)
    aside = SetAside.objects.get(sweep="alerts.waiting")
    assert (aside.item, aside.set_aside) == (str(poisoned.pk), True)
    assert aside.error == "ValueError: All strings must be XML compatible"


def test_a_lead_waiting_while_the_account_is_closed_alerts_nobody(account):
    manager_of(account, "boss@frontrange.example")
    saturday = datetime(2026, 11, 28, 17, 0, tzinfo=UTC)
    CallFactory(
        account=account,
        status=CallStatus.QUEUED,
        received_at=saturday - timedelta(minutes=30),
        ended_at=None,
    )
    assert alerts_sweep(now=saturday) == {"waiting": 0}


def test_a_call_scored_with_alert_tags_alerts_once_per_tag(
    account, django_capture_on_commit_callbacks
):
    manager_of(account, "boss@frontrange.example")
    scorer = in_role("Scorer", accounts=[account])
    call = CallFactory(account=account)
    with django_capture_on_commit_callbacks(execute=True):
        score_save(call=call, scorer=scorer, values={"alert": "Hot lead"})
    with django_capture_on_commit_callbacks(execute=True):
        score_save(call=call, scorer=scorer, values={"alert": "Hot lead", "notes": "x"})
    assert [m.subject for m in alerts()] == ["Hot lead: Sam Rivera"]
    with django_capture_on_commit_callbacks(execute=True):
        score_save(
            call=call, scorer=scorer, values={"alert": "Hot lead, Unhappy customer"}
        )
    assert [m.subject for m in alerts()] == [
        "Hot lead: Sam Rivera",
        "Unhappy customer: Sam Rivera",
    ]


def offer(call, taker, outcome):
    attempt = CallAttempt.objects.create(
        call=call,
        leg=Leg.AGENT,
        agent=taker,
        number=taker.phone_number,
        provider="simulator",
        ended_at=timezone.now(),
        outcome=outcome,
    )
    return alerts_for_offer(attempt=attempt)


def test_an_agent_missing_three_offers_in_a_row_alerts_once_per_run(account):
    manager_of(account, "boss@frontrange.example")
    taker = agent(account, phone="+13035550140", first_name="Ada", last_name="Agent")
    call = CallFactory(account=account)
    assert offer(call, taker, AttemptOutcome.NOANSWER) == 0
    assert offer(call, taker, AttemptOutcome.REFUSED) == 0
    assert offer(call, taker, AttemptOutcome.NOANSWER) == 1
    assert offer(call, taker, AttemptOutcome.BUSY) == 0  # the same run
    assert offer(call, taker, AttemptOutcome.ACCEPTED) == 0
    assert offer(call, taker, AttemptOutcome.NOANSWER) == 0
    assert offer(call, taker, AttemptOutcome.NOANSWER) == 0
    assert offer(call, taker, AttemptOutcome.NOANSWER) == 1  # a new run
    assert [m.subject for m in alerts()] == ["Ada Agent missed 3 calls in a row"] * 2


def test_missed_offers_are_told_through_the_pipeline(world, account):
    """Three calls the agent lets ring out (the simulator's agent number ending 0000 never
    answers): the third tells the managers."""
    manager_of(account, "boss@frontrange.example")
    agent(account, phone="+13035550000")
    for phone in ("+13035550123", "+13035550124", "+13035550125"):
        queue(world, account, phone)
    world.run()
    assert [m.alert for m in alerts()].count(AlertKind.MISSED_OFFERS) == 1


def test_alerts_never_cross_organizations(world, account):
    other = AccountFactory()
    DialingSettings.objects.create(account=other, lead_attempt_limit=1)
    agent(account, phone="+13035550140")
    agent(other, phone="+13035550141")
    ours = manager_of(account, "ours@frontrange.example")
    theirs = manager_of(other, "theirs@elsewhere.example")
    in_role(
        "Global Manager",
        organizations=[other.organization],
        email="g@elsewhere.example",
    )
    ours_call = queue(world, account, "+13035550000")
    theirs_call = queue(world, other, "+13035550001")
    world.run()
    assert {(m.user, m.call) for m in alerts()} == {
        (ours, ours_call),
        (theirs, theirs_call),
    }
