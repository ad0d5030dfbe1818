"""Calls whose legs the provider went silent on: their callbacks never came."""

from datetime import UTC, datetime, timedelta

from django.utils import timezone

from calls.models import (
    AttemptOutcome,
    Call,
    CallAttempt,
    CallStatus,
    Leg,
    SimulatedLeg,
)
from tests.accounts.factories import AccountFactory
from tests.users.factories import agent

LEAD = "+13035550123"


def connected_call():
    """A call whose agent pressed 1 a while ago and whose lead leg was dialed: DIALING."""
    account = AccountFactory()
    taker = agent(account, phone="+13035550140")
    long_ago = timezone.now() - timedelta(hours=1)
    call = Call.objects.create(
        account=account,
        phone=LEAD,
        received_at=long_ago,
        status=CallStatus.DIALING,
        agent=taker,
        attempts=1,
        rounds=1,
    )
    agent_leg = CallAttempt.objects.create(
        call=call,
        leg=Leg.AGENT,
        agent=taker,
        number=taker.phone_number,
        provider="simulator",
        dial_requested_at=long_ago,
        answered_at=long_ago,
        outcome=AttemptOutcome.ACCEPTED,
    )
    lead_leg = CallAttempt.objects.create(
        call=call,
        leg=Leg.LEAD,
        number=LEAD,
        provider="simulator",
        dial_requested_at=long_ago,
    )
    CallAttempt.objects.filter(pk__in=[agent_leg.pk, lead_leg.pk]).update(
        created_at=long_ago
    )
    return call, agent_leg, lead_leg


def switch_says(leg, **record):
    """The simulated switch's record of ``leg``: moments in epoch seconds, as ``time.time()``."""
    moments: dict[str, datetime] = {
        name: datetime.fromtimestamp(record.pop(name), tz=UTC)
        for name in ("answered_at", "ends_at")
        if name in record
    }
    SimulatedLeg.objects.update_or_create(
        attempt_id=leg.pk, defaults={**record, **moments}
    )
