"""The pipeline's waits that exist only because phones are slow run at the provider's time
scale: a simulator at SIMULATOR_TIME_SCALE=0.01 retries after a hundredth of the cadence,
Twilio (and anything real) after the full cadence. Schedule openings are never scaled."""

from datetime import timedelta

import pytest
from django.utils import timezone

from calls import services
from calls.models import (
    AttemptOutcome,
    Call,
    CallAttempt,
    CallStatus,
    DialingSettings,
    Leg,
)
from calls.pipeline import waiting
from providers import telephony_for, telephony_named
from providers.telephony import Event, EventKind
from tests.accounts.factories import AccountFactory
from tests.users.factories import agent

pytestmark = pytest.mark.django_db

LEAD = "+13035550001"  # busy, in the simulator's rules; never dialed here

# (TELEPHONY_PROVIDER, a test account's call?, the scale the call's waits run at)
PROVIDERS = [
    pytest.param("simulator", False, 0.01, id="simulator"),
    pytest.param("twilio", False, 1.0, id="twilio"),
    # A test account's calls always go to the simulator, and wait at its scale.
    pytest.param("twilio", True, 0.01, id="twilio-test-account"),
]


@pytest.fixture(autouse=True)
def _scale(settings):
    settings.SIMULATOR_TIME_SCALE = 0.01
    settings.TWILIO_ACCOUNT_SID = "AC" + "0" * 32
    settings.TWILIO_AUTH_TOKEN = "token"


def test_each_provider_states_its_time_scale(settings):
    assert telephony_named("simulator").time_scale == 0.01
    assert telephony_named("twilio").time_scale == 1.0
    settings.SIMULATOR_TIME_SCALE = 0.1
    assert telephony_named("simulator").time_scale == 0.1


def queued_call(settings, provider, is_test, **dialing):
    settings.TELEPHONY_PROVIDER = provider
    account = AccountFactory(timezone="America/Denver", is_test=is_test)
    DialingSettings.objects.create(account=account, **dialing)
    call = Call.objects.create(
        account=account, phone=LEAD, received_at=timezone.now(), is_test=is_test
    )
    assert telephony_for(is_test=call.is_test).name == (
        "simulator" if is_test else provider
    )
    return call


def due_in(call, act) -> tuple[timedelta, timedelta]:
    """Run ``act``; the bounds of how far after it the requeued call is due."""
    before = timezone.now()
    act()
    after = timezone.now()
    call.refresh_from_db()
    assert call.status == CallStatus.QUEUED, call.status
    return call.next_attempt_at - after, call.next_attempt_at - before


@pytest.mark.parametrize(("provider", "is_test", "scale"), PROVIDERS)
def test_a_lead_retry_waits_the_cadence_at_the_providers_time_scale(
    settings, django_capture_on_commit_callbacks, provider, is_test, scale
):
    call = queued_call(
        settings, provider, is_test, lead_attempt_limit=3, retry_cadence=[0, 120, 600]
    )
    taker = agent(call.account, phone="+13035550140")
    Call.objects.filter(pk=call.pk).update(
        status=CallStatus.DIALING, rounds=1, attempts=1, agent=taker
    )
    lead_leg = CallAttempt.objects.create(
        call=call,
        leg=Leg.LEAD,
        round=1,
        number=LEAD,
        provider=telephony_for(is_test=is_test).name,
        dial_requested_at=timezone.now(),
    )

    with django_capture_on_commit_callbacks(execute=False):
        low, high = due_in(
            call, lambda: services.call_event(Event(lead_leg.pk, EventKind.BUSY))
        )

    assert low <= timedelta(seconds=120 * scale) <= high
    assert call.attempts == 1
    assert call.agent is None
    lead_leg.refresh_from_db()
    assert lead_leg.outcome == AttemptOutcome.BUSY


@pytest.mark.parametrize(("provider", "is_test", "scale"), PROVIDERS)
def test_a_recheck_for_a_free_agent_waits_at_the_providers_time_scale(
    settings, django_capture_on_commit_callbacks, provider, is_test, scale
):
    call = queued_call(settings, provider, is_test)
    busy = agent(call.account, phone="+13035550140")
    other_call = Call.objects.create(
        account=call.account, phone="+13035550199", received_at=timezone.now()
    )
    CallAttempt.objects.create(  # the only agent is on another call right now
        call=other_call, leg=Leg.AGENT, round=1, agent=busy, number=busy.phone_number
    )

    with django_capture_on_commit_callbacks(execute=False):
        low, high = due_in(call, lambda: services.call_setup(call_id=call.pk))

    assert low <= waiting.BUSY_RECHECK * scale <= high
    assert not call.attempts_log.exists()


@pytest.mark.parametrize(("provider", "is_test", "scale"), PROVIDERS)
def test_the_pause_between_rounds_of_agents_runs_at_the_providers_time_scale(
    settings, django_capture_on_commit_callbacks, provider, is_test, scale
):
    call = queued_call(
        settings, provider, is_test, agent_rounds=2, agent_round_pause_seconds=60
    )
    only = agent(call.account, phone="+13035550140")
    Call.objects.filter(pk=call.pk).update(status=CallStatus.DIALING, rounds=1)
    leg = CallAttempt.objects.create(
        call=call,
        leg=Leg.AGENT,
        round=1,
        agent=only,
        number=only.phone_number,
        provider=telephony_for(is_test=is_test).name,
    )

    with django_capture_on_commit_callbacks(execute=False):
        low, high = due_in(
            call, lambda: services.call_event(Event(leg.pk, EventKind.NO_ANSWER))
        )

    assert low <= timedelta(seconds=60 * scale) <= high
    assert call.unanswered_rounds == 1


def test_a_wait_for_the_schedule_to_open_is_never_scaled(
    settings, django_capture_on_commit_callbacks
):
    call = queued_call(settings, "simulator", False)
    now = timezone.now().astimezone(timezone.get_fixed_timezone(-420))
    start = f"{(now.hour + 2) % 24:02d}:00"
    agent(
        call.account,
        phone="+13035550140",
        schedule=(start, f"{(now.hour + 2) % 24:02d}:30"),
        tz="America/Phoenix",
    )

    with django_capture_on_commit_callbacks(execute=False):
        low, high = due_in(call, lambda: services.call_setup(call_id=call.pk))

    assert timedelta(hours=1) <= high
    assert low <= timedelta(hours=2)
    opening = call.next_attempt_at.astimezone(timezone.get_fixed_timezone(-420))
    assert (opening.hour, opening.minute) == ((now.hour + 2) % 24, 0)
