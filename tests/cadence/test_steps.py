"""The follow-up cadence through the pipeline and the simulator: a lead not reached gets the
account's plan, each step runs once when due (a call through the same pipeline, a text
through texting), a step in quiet hours waits, and one account's cadence never touches
another's leads."""

from __future__ import annotations

from datetime import time, timedelta

import pytest
from django.utils import timezone

from cadence.models import Cadence, CadenceStep, Channel, PlannedStep, StepStatus
from cadence.services import step_run, steps_hand_over_due
from calls.models import Call, CallOrigin, CallStatus, NoAgentPolicy
from calls.pipeline import broker
from calls.services import SetupPriority
from tests.cadence.conftest import (
    ANSWERS,
    LEAD,
    dealer,
    lead_not_reached,
    make_due,
    statuses,
)
from texting import compose
from texting.models import Purpose, Text, TextStatus
from texting.services import text_send

pytestmark = pytest.mark.django_db

DAY = 24


def test_a_lead_not_reached_gets_the_default_plan_due_from_its_arrival(world, account):
    call = lead_not_reached(world, account)

    assert call.status == CallStatus.NOANSWER
    steps = list(PlannedStep.objects.filter(account=account).order_by("position"))
    # The first "at once", a moment after the call's own text.
    assert timedelta(seconds=10) <= steps[0].due_at - call.received_at
    assert steps[0].due_at - call.received_at < timedelta(minutes=1)
    assert [(s.channel, s.due_at - call.received_at, s.status) for s in steps[1:]] == [
        (Channel.CALL, timedelta(hours=DAY), StepStatus.PLANNED),
        (Channel.TEXT, timedelta(hours=3 * DAY), StepStatus.PLANNED),
        (Channel.CALL, timedelta(hours=7 * DAY), StepStatus.PLANNED),
        (Channel.TEXT, timedelta(hours=14 * DAY), StepStatus.PLANNED),
        (Channel.TEXT, timedelta(hours=30 * DAY), StepStatus.PLANNED),
    ]
    assert {(s.phone, s.call_id) for s in steps} == {(LEAD, call.pk)}


def test_the_first_text_is_the_calls_own_not_reached_text_sent_once(
    world, account, handed
):
    lead_not_reached(world, account)
    first = PlannedStep.objects.get(account=account, position=0)
    assert steps_hand_over_due() == 0  # due in a moment
    make_due(first)

    steps_hand_over_due()
    assert [step_id for step_id, _ in handed] == [first.pk]
    with world.capture(execute=True):
        assert step_run(step_id=first.pk) == "skipped"

    first.refresh_from_db()
    assert first.reason == "The call's own text was sent already."
    assert Text.objects.filter(purpose=Purpose.NOT_REACHED).count() == 1


def test_a_lead_no_agent_took_gets_the_no_agent_text_and_no_not_reached_one(
    world, handed
):
    account = dealer(agents=False)
    account.dialing_settings.no_agent_policy = NoAgentPolicy.END
    account.dialing_settings.save()
    call = lead_not_reached(world, account)
    first = PlannedStep.objects.get(account=account, position=0)
    make_due(first)
    steps_hand_over_due()

    with world.capture(execute=True):
        assert step_run(step_id=first.pk) == "skipped"

    assert call.status == CallStatus.NOAGENT
    assert list(Text.objects.values_list("purpose", flat=True)) == [Purpose.NO_AGENT]


def test_a_lead_reached_or_an_account_without_a_cadence_gets_no_plan(world, account):
    lead_not_reached(world, account, phone=ANSWERS)
    off = dealer("Lakeside Honda")
    Cadence.objects.filter(account=off).update(enabled=False)
    lead_not_reached(world, off)

    assert PlannedStep.objects.count() == 0


def test_a_text_step_is_sent_through_the_simulator(world, account, handed, dispatched):
    lead_not_reached(world, account)
    day3 = PlannedStep.objects.get(account=account, position=2)
    make_due(day3)

    steps_hand_over_due()
    assert [step_id for step_id, _ in handed] == list(
        PlannedStep.objects.filter(
            account=account, status=StepStatus.HANDED_OVER
        ).values_list("pk", flat=True)
    )
    with world.capture(execute=True):
        assert step_run(step_id=day3.pk) == "done"

    day3.refresh_from_db()
    text = Text.objects.get(pk=day3.made_text_id or 0)
    assert text.body == (
        "Hi Sam, Demo Motors North here again about the 2025 Toyota Camry. Reply "
        "CALL ME and we will call you, or STOP to opt out."
    )
    assert (text.to_number, text.purpose) == (LEAD, Purpose.NOT_REACHED)
    assert text.pk in dispatched
    assert text_send(text_id=text.pk) == "sent"
    text.refresh_from_db()
    assert (text.status, text.provider) == (TextStatus.QUEUED, "simulator")


def test_a_call_step_goes_through_the_same_pipeline_and_plans_nothing_more(
    world, account, handed, monkeypatch
):
    setups: dict[int, SetupPriority] = {}
    real = broker.dispatch_setup

    def dispatch_setup(call_id, *args, priority=SetupPriority.FRESH, **kwargs):
        setups[call_id] = priority
        return real(call_id, *args, priority=priority, **kwargs)

    monkeypatch.setattr(broker, "dispatch_setup", dispatch_setup)
    first = lead_not_reached(world, account)
    day1 = PlannedStep.objects.get(account=account, position=1)
    make_due(day1)
    steps_hand_over_due()

    with world.capture(execute=True):
        assert step_run(step_id=day1.pk) == "done"
    world.run()

    day1.refresh_from_db()
    again = Call.objects.get(pk=day1.made_call_id or 0)
    assert again.origin == CallOrigin.CADENCE
    assert (again.phone, again.first_name, again.status) == (
        LEAD,
        "Sam",
        CallStatus.NOANSWER,
    )
    assert again.whisper.startswith("Follow-up call, step 2 of the cadence.")
    # Set up behind every new lead (issue 40's fair order), the lead's own call was not.
    assert (setups[first.pk], setups[again.pk]) == (
        SetupPriority.FRESH,
        SetupPriority.LATER,
    )
    # The cadence plans its own texts: texting sends none for the step's call.
    assert Text.objects.filter(call=again).count() == 0
    assert PlannedStep.objects.filter(call=again).count() == 0
    assert PlannedStep.objects.filter(call=first).count() == 6
    # Run once: handed over again, it does nothing.
    assert step_run(step_id=day1.pk) == "done"
    assert PlannedStep.objects.get(pk=day1.pk).made_call_id == again.pk


@pytest.mark.parametrize("position", [1, 2], ids=["call", "text"])
def test_a_step_in_quiet_hours_waits_for_their_end(world, handed, position):
    zone = compose.lead_zone(LEAD, "America/Denver")
    now = timezone.now().astimezone(zone)
    # Quiet from now: the window opens in two hours.
    start = time((now.hour + 2) % 24)
    end = time((now.hour + 3) % 24)
    account = dealer(quiet_start=start, quiet_end=end)
    lead_not_reached(world, account)
    step = PlannedStep.objects.get(account=account, position=position)
    make_due(step)
    steps_hand_over_due()

    with world.capture(execute=True):
        assert step_run(step_id=step.pk) == "waits"

    step.refresh_from_db()
    assert step.status == StepStatus.PLANNED
    assert step.handed_at is None
    assert step.due_at == compose.allowed_from(
        step.due_at, zone=zone, start=start, end=end
    )
    assert step.due_at > timezone.now() + timedelta(minutes=59)
    assert (step.made_call_id, step.made_text_id) == (None, None)


def test_an_accounts_own_steps_replace_the_default(world, account):
    cadence = account.cadence
    CadenceStep.objects.create(cadence=cadence, after_hours=48, channel=Channel.CALL)
    CadenceStep.objects.create(
        cadence=cadence,
        after_hours=5,
        channel=Channel.TEXT,
        template="own",
        body="Hi {first_name}!",
    )
    call = lead_not_reached(world, account)

    assert [
        (s.channel, s.due_at - call.received_at, s.body)
        for s in PlannedStep.objects.filter(account=account).order_by("position")
    ] == [
        (Channel.TEXT, timedelta(hours=5), "Hi {first_name}!"),
        (Channel.CALL, timedelta(hours=48), ""),
    ]


def test_one_accounts_cadence_never_touches_another_accounts_lead(world, handed):
    north = dealer()
    south = dealer("Lakeside Honda")
    Cadence.objects.filter(account=south).update(enabled=False)
    lead_not_reached(world, north)
    theirs = lead_not_reached(world, south)
    day3 = PlannedStep.objects.get(account=north, position=2)
    make_due(day3)
    steps_hand_over_due()
    with world.capture(execute=True):
        step_run(step_id=day3.pk)

    assert set(PlannedStep.objects.values_list("account", flat=True)) == {north.pk}
    assert Text.objects.filter(account=south).exclude(call=theirs).count() == 0
    made = PlannedStep.objects.get(pk=day3.pk).made_text_id
    assert Text.objects.get(pk=made or 0).account == north
    assert statuses(north)[2][1] == StepStatus.DONE
