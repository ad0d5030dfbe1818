"""Automatic texts: each trigger of the call pipeline, its template, quiet hours, the
limit per lead and opt-outs; and each text sent once."""

from datetime import UTC, datetime, time, timedelta
from zoneinfo import ZoneInfo

import pytest
from django.utils import timezone

from calls.models import CallStatus, NoAgentPolicy
from tests.texting.conftest import texting_on
from tests.users.factories import agent
from texting import compose
from texting.models import OptOut, Purpose, Text, TextStatus
from texting.services import text_send, texts_sweep

pytestmark = pytest.mark.django_db

AGENT = "+13035550140"


def queue(world, account, phone, **lead):
    return world.queue_call(
        account=account,
        phone=phone,
        received_at=timezone.now(),
        first_name="Sam",
        called_on_year="2025",
        called_on_make="Toyota",
        called_on_model="Camry",
        **lead,
    )


def closed_window() -> tuple[time, time]:
    """An hour of the day in Denver that is not now: later today in the morning, earlier
    (so tomorrow's) in the afternoon."""
    hour = timezone.now().astimezone(ZoneInfo("America/Denver")).hour
    start = hour + 2 if hour < 12 else hour - 4
    return time(start), time(start + 1)


def texts_of(call, purpose=None):
    texts = Text.objects.filter(call=call)
    return list(texts.filter(purpose=purpose) if purpose else texts)


@pytest.mark.parametrize(
    ("phone", "status"),
    [
        ("+13035550000", CallStatus.NOANSWER),
        ("+13035550001", CallStatus.BUSY),
        ("+13035550002", CallStatus.FAILED),
    ],
)
def test_a_lead_not_reached_after_the_last_attempt_gets_the_not_reached_text(
    world, account, dispatched, phone, status
):
    texting_on(account)
    agent(account, phone=AGENT)

    call = queue(world, account, phone)
    world.run()

    call.refresh_from_db()
    assert call.status == status
    (text,) = texts_of(call)
    assert text.purpose == Purpose.NOT_REACHED
    assert text.to_number == phone
    assert text.from_number == "+13035550999"
    assert text.body == (
        "Hi Sam, this is Demo Motors North. We just tried to call you about the 2025 "
        "Toyota Camry. Reply CALL ME and we will call you right back. Reply STOP to "
        "opt out."
    )
    assert text.status == TextStatus.SCHEDULED
    assert dispatched == [text.pk]


def test_an_answered_call_sends_no_text(world, account):
    texting_on(account)
    agent(account, phone=AGENT)

    call = queue(world, account, "+13035550123")
    world.run()

    call.refresh_from_db()
    assert call.status == CallStatus.ANSWER
    assert texts_of(call) == []


def test_no_agent_sends_the_no_agent_text(world, account):
    texting_on(account, no_agent_template="Sorry {first_name}, {dealer} is busy.")
    account.dialing_settings.no_agent_policy = NoAgentPolicy.END
    account.dialing_settings.save()

    call = queue(world, account, "+13035550123")
    world.run()

    call.refresh_from_db()
    assert call.status == CallStatus.NOAGENT
    assert [t.body for t in texts_of(call)] == ["Sorry Sam, Demo Motors North is busy."]


def test_a_call_waiting_for_the_schedule_says_when_we_will_call(world, account):
    texting_on(account, waiting_template="We will call you at {opening}.")
    # An agent whose hours are not now: the call waits for their next opening.
    start, end = closed_window()
    agent(account, phone=AGENT, schedule=(f"{start:%H:%M}", f"{end:%H:%M}"))

    call = queue(world, account, "+13035550123")
    for _ in range(20):  # up to the first setup's requeue; the opening is far off
        if not world.queue:
            break
        world.step()

    call.refresh_from_db()
    assert call.status == CallStatus.QUEUED
    assert call.waiting_since is not None
    (text,) = texts_of(call, Purpose.WAITING)
    opening = compose.opening_words(
        call.next_attempt_at, ZoneInfo("America/Denver"), timezone.now()
    )
    assert text.body == f"We will call you at {opening}."


def test_the_instant_text_goes_when_the_lead_arrives_if_the_account_sends_one(
    world, account
):
    texting_on(account, instant_enabled=True, instant_template="Hi {first_name}!")
    agent(account, phone=AGENT)

    call = queue(world, account, "+13035550123")

    assert [(t.purpose, t.body) for t in texts_of(call)] == [
        (Purpose.INSTANT, "Hi Sam!")
    ]


def test_texting_off_or_an_empty_template_sends_nothing(world, account):
    config = texting_on(account, not_reached_template="")
    agent(account, phone=AGENT)
    first = queue(world, account, "+13035550001")
    world.run()
    config.enabled = False
    config.not_reached_template = "Sorry we missed you."
    config.save()
    second = queue(world, account, "+13035550001")
    world.run()

    assert texts_of(first) == []
    assert texts_of(second) == []


def test_a_lead_gets_at_most_the_accounts_limit_of_automatic_texts(world, account):
    texting_on(account, automatic_limit=2)
    agent(account, phone=AGENT)

    calls = [queue(world, account, "+13035550001") for _ in range(3)]
    world.run()

    assert [len(texts_of(call)) for call in calls] == [1, 1, 0]


def test_a_number_that_opted_out_gets_no_automatic_text(world, account):
    texting_on(account)
    agent(account, phone=AGENT)
    OptOut.objects.create(
        account=account,
        phone="+13035550001",
        opted_out_at=timezone.now(),
        message="STOP",
    )

    call = queue(world, account, "+13035550001")
    world.run()

    assert texts_of(call) == []


# --- quiet hours


def _local(zone: str, *when: int) -> datetime:
    year, month, day, hour, minute = when
    return datetime(year, month, day, hour, minute, tzinfo=ZoneInfo(zone))


def test_a_text_due_at_ten_at_night_goes_at_eight_the_next_morning_across_a_clock_change():
    zone = ZoneInfo("America/Denver")
    # Saturday 7 March 2026, 22:00 MST; the clocks go forward that night (8 March, 02:00).
    due = _local("America/Denver", 2026, 3, 7, 22, 0)

    at = compose.allowed_from(due, zone=zone, start=time(8), end=time(21))

    assert at.astimezone(zone).date().isoformat() == "2026-03-08"
    assert at.astimezone(zone).time() == time(8)
    assert at.astimezone(UTC) == datetime(2026, 3, 8, 14, 0, tzinfo=UTC)  # MDT: UTC-6
    # Nine hours later, not ten: an hour of that night never was.
    assert at.astimezone(UTC) - due.astimezone(UTC) == timedelta(hours=9)


def test_quiet_hours_hold_an_early_text_until_the_start_and_let_a_daytime_text_go():
    zone = ZoneInfo("America/New_York")
    early = _local("America/New_York", 2026, 11, 1, 6, 30)  # the day the clocks go back
    day = _local("America/New_York", 2026, 11, 1, 12, 0)

    assert compose.allowed_from(early, zone=zone, start=time(8), end=time(21)) == (
        _local("America/New_York", 2026, 11, 1, 8, 0)
    )
    assert compose.allowed_from(day, zone=zone, start=time(8), end=time(21)) == day


def test_the_leads_own_timezone_comes_from_the_number_else_the_accounts():
    assert compose.lead_zone("+12125550100", "America/Denver") == ZoneInfo(
        "America/New_York"
    )
    assert compose.lead_zone("+15555550100", "America/Denver") == ZoneInfo(
        "America/Denver"
    )


def test_an_automatic_text_in_quiet_hours_waits_for_the_morning_then_the_sweep_sends_it(
    world, account, dispatched, simulated
):
    start, end = closed_window()  # in the lead's time (a Denver number)
    texting_on(account, quiet_start=start, quiet_end=end)
    agent(account, phone=AGENT)

    call = queue(world, account, "+13035550001")
    world.run()

    (text,) = texts_of(call)
    assert text.due_at > timezone.now()
    assert text.due_at.astimezone(ZoneInfo("America/Denver")).time() == start
    assert dispatched == []  # left to the sweep: no worker holds it for hours
    assert text_send(text_id=text.pk) == "not due"
    assert texts_sweep() == 0

    assert texts_sweep(now=text.due_at + timedelta(seconds=1)) == 1
    assert dispatched == [text.pk]


# --- sending once


def test_a_text_whose_send_raises_an_unknown_error_fails_at_once_with_its_reason(
    world, account, simulated, monkeypatch
):
    """Not the provider out of reach: failed at once, never left "sending" for the sweep
    nor tried again (it may have left already)."""
    texting_on(account)
    agent(account, phone=AGENT)
    call = queue(world, account, "+13035550000")
    world.run()
    (text,) = texts_of(call)

    def broken(provider, outgoing):
        raise ValueError("a value the provider's client cannot take")

    monkeypatch.setattr("texting.providers.SimulatorTexts.send", broken)

    assert text_send(text_id=text.pk) == "failed"
    assert text_send(text_id=text.pk) == "done"
    text.refresh_from_db()
    assert text.status == TextStatus.FAILED
    assert text.error == "ValueError: a value the provider's client cannot take"


def test_a_text_is_handed_to_the_provider_once(world, account, simulated):
    texting_on(account)
    agent(account, phone=AGENT)
    call = queue(world, account, "+13035550000")
    world.run()
    (text,) = texts_of(call)

    assert text_send(text_id=text.pk) == "sent"
    assert text_send(text_id=text.pk) == "done"

    text.refresh_from_db()
    assert text.status == TextStatus.QUEUED
    assert text.provider == "simulator"
    assert text.provider_id == f"SIMSM{text.pk:012d}"
    assert text.handed_at is not None
    # The simulated network's statuses, once: sent, then delivered (0000 never replies).
    assert [name.rsplit(".", 1)[1] for name, _ in simulated] == [
        "simulator_text_status_task",
        "simulator_text_status_task",
    ]
    assert [kwargs["status"] for _, kwargs in simulated] == ["sent", "delivered"]


def test_a_text_to_a_number_that_opted_out_before_it_was_due_is_not_sent(
    world, account, simulated
):
    texting_on(account)
    agent(account, phone=AGENT)
    call = queue(world, account, "+13035550000")
    world.run()
    (text,) = texts_of(call)
    OptOut.objects.create(
        account=account, phone=call.phone, opted_out_at=timezone.now(), message="Stop"
    )

    assert text_send(text_id=text.pk) == "canceled"

    text.refresh_from_db()
    assert text.status == TextStatus.CANCELED
    assert "opted out" in text.error
    assert simulated == []


def test_a_text_lost_while_being_handed_over_is_marked_failed_never_sent_twice(
    world, account, dispatched, simulated
):
    texting_on(account)
    agent(account, phone=AGENT)
    call = queue(world, account, "+13035550000")
    world.run()
    (text,) = texts_of(call)
    lost_at = timezone.now() - timedelta(minutes=10)
    # Its worker died between "sending" and the provider's answer.
    Text.objects.filter(pk=text.pk).update(status=TextStatus.SENDING, status_at=lost_at)

    assert texts_sweep() == 0

    text.refresh_from_db()
    assert text.status == TextStatus.FAILED
    assert "not sent again" in text.error
    assert text_send(text_id=text.pk) == "done"
    assert simulated == []
