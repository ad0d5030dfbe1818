"""Demo history for calls (CONTRACT.md, "Demo data"): at least 25 past calls per account,
spread over the 30 days before today, with the attempts that led to each outcome.

This seeds history; it does not run the pipeline. Calls and their attempts are written
with the ORM directly, as the pipeline would have left them once finished (every status
final, every leg ended), so no task, sweep or provider ever picks them up. Lead calls
carry a whisper and call notes composed the way lead intake composes them.

Deterministic (one ``random.Random`` per account, seeded with its name) and safe to run
again: an account that already has 25 demo calls in the window gets none; one with fewer
is topped up to 25. The calls made here are marked ``is_demo``; the calls of the people
trying the demo (a lead posted to /api/nl) are not, and no seed step writes to them.

"Most of them scored" (CONTRACT.md) is the scoring app's step, which comes later: these
calls are left unscored here, on purpose.
"""

from __future__ import annotations

import random
from dataclasses import dataclass, field
from datetime import date, datetime, time, timedelta
from typing import TYPE_CHECKING
from zoneinfo import ZoneInfo

from django.utils import timezone

from calls.models import (
    AttemptOutcome,
    Call,
    CallAttempt,
    CallOrigin,
    CallStatus,
    DialingSettings,
    Leg,
)
from calls.recordings import recording_link
from calls.services import dialing_settings
from leads.adf import Customer, ParsedLead, Phone, Provider, Vehicle, Vendor
from leads.compose import compose_call_notes, compose_whisper
from users.models import User

if TYPE_CHECKING:
    from demo.management.commands.seed_demo import DemoAccount, DemoData

CALLS_PER_ACCOUNT = 25
PAST_DAYS = 30
PROVIDER = "simulator"
# Outcomes and how often: mostly answered.
STATUSES = (CallStatus.ANSWER, CallStatus.NOANSWER, CallStatus.BUSY, CallStatus.NOAGENT)
STATUS_WEIGHTS = (72, 12, 7, 9)
CLICK_TO_CALL_SHARE = 0.1
SERVICE_SHARE = 0.2
# Simulated timing, in seconds (the simulator's, CONTRACT.md "Simulator provider").
AGENT_ANSWERS_AFTER = 2.0
LEAD_RING_SECONDS = 30.0
SECONDS_PER_WHISPER_CHARACTER = 1 / 15

FIRST_NAMES = (
    "Olivia", "Liam", "Emma", "Noah", "Ava", "Elijah", "Sophia", "James", "Isabella", "Lucas",
    "Mia", "Mateo", "Harper", "Ethan", "Amelia", "Daniel", "Chloe", "Samuel", "Grace", "Owen",
)  # fmt: skip
LAST_NAMES = (
    "Smith", "Johnson", "Williams", "Brown", "Jones", "Miller", "Davis", "Martinez", "Wilson",
    "Anderson", "Thomas", "Moore", "Martin", "Jackson", "Thompson", "White", "Harris", "Clark",
)  # fmt: skip
VEHICLES = (
    ("Toyota", "Camry"), ("Toyota", "RAV4"), ("Honda", "Civic"), ("Honda", "CR-V"),
    ("Ford", "F-150"), ("Ford", "Escape"), ("Chevrolet", "Silverado"), ("Chevrolet", "Equinox"),
    ("Nissan", "Rogue"), ("Jeep", "Grand Cherokee"), ("Hyundai", "Tucson"), ("Subaru", "Outback"),
)  # fmt: skip
SOURCES = (
    "Cars.com",
    "AutoTrader",
    "CarGurus",
    "Dealer Website",
    "Edmunds",
    "Facebook Marketplace",
)
CUSTOMER_COMMENTS = (
    "Is this still available?",
    "Can I test drive this weekend?",
    "What is the best out-the-door price?",
    "Interested in financing options.",
    "Do you take trade-ins?",
    "",
)
SERVICE_COMMENTS = (
    "Oil change and tire rotation.",
    "Check engine light is on.",
    "Brakes are squeaking.",
    "Recall appointment, please.",
)


@dataclass
class Planned:
    """A call and its attempts, with the moments their ``created_at`` should show."""

    call: Call
    attempts: list[CallAttempt] = field(default_factory=list)
    created: dict[int, datetime] = field(default_factory=dict)  # id(object) -> moment
    recorded: CallAttempt | None = None


def seed_demo(demo: DemoData) -> None:
    """Give every demo account at least 25 past calls in the 30 days before today."""
    for demo_org in demo.organizations:
        for demo_account in demo_org.accounts:
            added = _seed_account(demo_account)
            if added:
                demo.log(f"{demo_account.account.name}: {added} past calls")


def _seed_account(demo_account: DemoAccount) -> int:
    account = demo_account.account
    zone = ZoneInfo(account.timezone)
    today = timezone.now().astimezone(zone).date()
    start = _local(today - timedelta(days=PAST_DAYS), time(0), zone)
    have = Call.objects.filter(
        account=account,
        is_demo=True,
        received_at__gte=start,
        received_at__lt=_local(today, time(0), zone),
    ).count()
    missing = CALLS_PER_ACCOUNT - have
    agents = [user for user in demo_account.agents if user.phone_number]
    if missing <= 0 or not agents:
        return 0
    rng = random.Random(f"calls.seed:{account.organization.name}:{account.name}")
    config = dialing_settings(account)
    area = account.caller_id[2:5] if account.caller_id.startswith("+1") else "303"
    plans = []
    for n in range(missing):
        # Spread evenly over the window, from 30 days ago to yesterday, at a random time of
        # the dealer's business day.
        day = today - timedelta(
            days=PAST_DAYS - (n * (PAST_DAYS - 1)) // max(missing - 1, 1)
        )
        moment = _local(
            day, time(rng.randint(8, 19), rng.randint(0, 59), rng.randint(0, 59)), zone
        )
        plans.append(_plan(rng, demo_account, agents, config, moment, area))
    _save(plans)
    return missing


def _local(day: date, at: time, zone: ZoneInfo) -> datetime:
    return datetime.combine(day, at, tzinfo=zone)


def _plan(
    rng: random.Random,
    demo_account: DemoAccount,
    agents: list[User],
    config: DialingSettings,
    received_at: datetime,
    area: str,
) -> Planned:
    account = demo_account.account
    first, last = rng.choice(FIRST_NAMES), rng.choice(LAST_NAMES)
    # 555-0100 to 555-0199 are fictional numbers; none ends in the simulator's 0000-0003.
    phone = f"+1{area}555{rng.randint(110, 199):04d}"
    email = f"{first}.{last}{rng.randint(1, 99)}@example.com".lower()
    click_to_call = rng.random() < CLICK_TO_CALL_SHARE
    service = not click_to_call and rng.random() < SERVICE_SHARE
    make, model = rng.choice(VEHICLES)
    year = rng.randint(2015, 2025)
    new = not service and year >= 2024 and rng.random() < 0.7
    trade = rng.choice(VEHICLES) if not service and rng.random() < 0.3 else None
    trade_year = str(rng.randint(2008, 2019))
    source = "Click to Call" if click_to_call else rng.choice(SOURCES)
    prospect_id = f"{source[:2].upper()}-{rng.randint(100000, 999999)}"
    call = Call(
        account=account,
        origin=CallOrigin.CLICK_TO_CALL if click_to_call else CallOrigin.LEAD,
        is_test=account.is_test,
        is_demo=True,
        received_at=received_at,
        phone=phone,
        first_name=first,
        last_name=last,
        email=email,
        source=source,
        team=demo_account.teams.get("Service" if service else "Sales"),
    )
    if not click_to_call:
        parsed = ParsedLead(
            prospect_id=prospect_id,
            prospect_source=source,
            request_type="Service" if service else "Sales",
            vehicles=tuple(
                v
                for v in (
                    Vehicle(
                        interest="buy",
                        status="new" if new else "used",
                        year=str(year),
                        make=make,
                        model=model,
                    ),
                    Vehicle(
                        interest="trade-in",
                        year=trade_year,
                        make=trade[0],
                        model=trade[1],
                    )
                    if trade
                    else None,
                )
                if v is not None
            ),
            customer=Customer(
                full_name=f"{first} {last}",
                first_name=first,
                last_name=last,
                email=email,
                phones=(Phone(phone, "voice"),),
                comments=rng.choice(SERVICE_COMMENTS if service else CUSTOMER_COMMENTS),
            ),
            vendor=Vendor(id=demo_account.vendor_id, name=demo_account.vendor_name),
            provider=Provider(name=source),
        )
        call.altid = prospect_id
        call.whisper = compose_whisper(parsed)
        call.call_notes = compose_call_notes(parsed)
        call.lead_type = "New" if new else "Used"
        call.department = "Service" if service else "Sales"
        call.called_on_make, call.called_on_model, call.called_on_year = (
            make,
            model,
            str(year),
        )
        if trade:
            call.current_make, call.current_model, call.current_year = (
                trade[0],
                trade[1],
                trade_year,
            )
    else:
        call.requested_agent = rng.choice(agents)
    plan = Planned(call)
    status = rng.choices(STATUSES, weights=STATUS_WEIGHTS)[0]
    if click_to_call and status == CallStatus.NOAGENT:
        status = CallStatus.ANSWER  # click-to-call names its agent, who is on the line
    if status == CallStatus.NOAGENT:
        _no_agent(plan, rng, agents, config)
    else:
        _dialed(plan, rng, agents, config, status)
    return plan


def _leg(
    plan: Planned,
    *,
    leg: str,
    round: int,
    number: str,
    created: datetime,
    agent: User | None = None,
) -> CallAttempt:
    attempt = CallAttempt(
        call=plan.call,
        leg=leg,
        round=round,
        agent=agent,
        number=number,
        provider=PROVIDER,
        dial_requested_at=created + timedelta(seconds=0.3),
        ringing_at=created + timedelta(seconds=1),
    )
    plan.attempts.append(attempt)
    plan.created[id(attempt)] = created
    return attempt


def _agent_misses(
    plan: Planned, rng: random.Random, agent: User, round: int, at: datetime, ring: int
) -> datetime:
    """An agent who lets it ring out (or answers and hangs up without pressing 1); returns the end."""
    attempt = _leg(
        plan,
        leg=Leg.AGENT,
        round=round,
        number=agent.phone_number,
        created=at,
        agent=agent,
    )
    if rng.random() < 0.25:
        attempt.answered_at = at + timedelta(seconds=AGENT_ANSWERS_AFTER)
        attempt.ended_at = attempt.answered_at + timedelta(seconds=8)
        attempt.outcome, attempt.duration = AttemptOutcome.REFUSED, 8
    else:
        attempt.ended_at = at + timedelta(seconds=ring)
        attempt.outcome = AttemptOutcome.NOANSWER
    return attempt.ended_at


def _dialed(
    plan: Planned,
    rng: random.Random,
    agents: list[User],
    config: DialingSettings,
    status: str,
) -> None:
    """An agent takes the call and the lead is dialed: answered at once, or missed on every attempt."""
    call = plan.call
    at = call.received_at + timedelta(seconds=rng.uniform(0.5, 2))
    attempts = 1 if status == CallStatus.ANSWER else max(1, config.lead_attempt_limit)
    cadence = list(config.retry_cadence or [0])
    agent = call.requested_agent
    for number in range(1, attempts + 1):
        if call.requested_agent is None:
            agent = rng.choice(agents)
            if rng.random() < 0.25:  # the first agent offered misses it
                other = rng.choice([a for a in agents if a != agent] or agents)
                at = _agent_misses(
                    plan, rng, other, number, at, config.agent_ring_seconds
                )
        assert agent is not None
        agent_leg = _leg(
            plan,
            leg=Leg.AGENT,
            round=number,
            number=agent.phone_number,
            created=at,
            agent=agent,
        )
        agent_leg.answered_at = at + timedelta(
            seconds=AGENT_ANSWERS_AFTER + rng.uniform(0, 2)
        )
        accepted = agent_leg.answered_at + timedelta(
            seconds=len(call.whisper) * SECONDS_PER_WHISPER_CHARACTER + 1
        )
        agent_leg.outcome, agent_leg.key_pressed = AttemptOutcome.ACCEPTED, "1"
        lead_leg = _leg(
            plan, leg=Leg.LEAD, round=number, number=call.phone, created=accepted
        )
        if status == CallStatus.ANSWER:
            lead_leg.answered_at = accepted + timedelta(seconds=rng.uniform(3, 9))
            talk = rng.randint(30, 300)
            lead_leg.ended_at = lead_leg.answered_at + timedelta(seconds=talk)
            lead_leg.outcome, lead_leg.duration = AttemptOutcome.ANSWERED, talk
            call.response_time = int(
                (lead_leg.answered_at - call.received_at).total_seconds()
            )
            call.duration = talk
            plan.recorded = lead_leg
        elif status == CallStatus.BUSY:
            lead_leg.ended_at = accepted + timedelta(seconds=1.5)
            lead_leg.outcome = AttemptOutcome.BUSY
        else:
            lead_leg.ended_at = accepted + timedelta(seconds=LEAD_RING_SECONDS)
            lead_leg.outcome = AttemptOutcome.NOANSWER
        agent_leg.ended_at = lead_leg.ended_at
        agent_leg.duration = int(
            (agent_leg.ended_at - agent_leg.answered_at).total_seconds()
        )
        at = lead_leg.ended_at + timedelta(
            seconds=cadence[min(number, len(cadence) - 1)]
        )
    call.status, call.agent, call.attempts, call.rounds = (
        status,
        agent,
        attempts,
        attempts,
    )
    call.ended_at = plan.attempts[-1].ended_at


def _no_agent(
    plan: Planned, rng: random.Random, agents: list[User], config: DialingSettings
) -> None:
    """Every agent offered the call, round after round, and none took it."""
    call = plan.call
    at = call.received_at + timedelta(seconds=rng.uniform(0.5, 2))
    rounds = max(1, config.agent_rounds)
    for number in range(1, rounds + 1):
        for agent in rng.sample(agents, len(agents)):
            at = _agent_misses(plan, rng, agent, number, at, config.agent_ring_seconds)
        if number < rounds:
            at += timedelta(seconds=config.agent_round_pause_seconds)
    call.status, call.rounds, call.unanswered_rounds = (
        CallStatus.NOAGENT,
        rounds,
        rounds,
    )
    call.ended_at = at


def _save(plans: list[Planned]) -> None:
    """Write the calls and attempts, then give them the past ``created_at`` the pipeline would have
    (``auto_now_add`` sets it on insert; the update after it does not)."""
    calls = Call.objects.bulk_create([plan.call for plan in plans])
    attempts = CallAttempt.objects.bulk_create(
        [a for plan in plans for a in plan.attempts]
    )
    for plan in plans:
        plan.call.created_at = plan.call.received_at
        for attempt in plan.attempts:
            attempt.created_at = plan.created[id(attempt)]
            attempt.provider_id = f"SIM-{attempt.pk}"
        if plan.recorded is not None:
            plan.call.recording_url = recording_link(plan.recorded.pk)
    Call.objects.bulk_update(calls, ["created_at", "recording_url"], batch_size=500)
    CallAttempt.objects.bulk_update(
        attempts, ["created_at", "provider_id"], batch_size=500
    )
