"""Two organizations, their accounts, calls and a user in every role, for the pages' tests."""

from __future__ import annotations

from dataclasses import dataclass
from datetime import timedelta

import pytest
from django.utils import timezone

from accounts.models import Account
from calls.models import AttemptOutcome, Call, CallAttempt, Leg
from scoring.services import score_save
from tests.accounts.factories import AccountFactory, OrganizationFactory
from tests.conftest import PAGES_PASSWORD
from tests.scoring.factories import CallFactory, in_role
from users.models import User

PASSWORD = PAGES_PASSWORD


@dataclass
class World:
    north: Account  # account of the first organization (America/Denver)
    south: object  # its second account (America/New_York)
    foreign: object  # an account of another organization
    agent: User
    other_agent: User
    manager: User  # manages north only
    global_manager: User  # every account of the first organization
    scorer: User  # scores north only
    staff: User
    foreign_manager: User
    agent_call: Call  # north, taken by agent, scored
    other_agent_call: Call  # north, taken by other_agent
    south_call: Call
    foreign_call: Call

    def users(self) -> dict[str, User]:
        return {
            "agent": self.agent,
            "manager": self.manager,
            "global_manager": self.global_manager,
            "scorer": self.scorer,
            "staff": self.staff,
            "foreign_manager": self.foreign_manager,
        }


def _with_password(user: User) -> User:
    user.set_password(PASSWORD)
    user.save(update_fields=["password"])
    return user


def make_world() -> World:
    organization = OrganizationFactory(name="Demo Group")
    north = AccountFactory(
        organization=organization, name="North", timezone="America/Denver"
    )
    south = AccountFactory(
        organization=organization, name="South", timezone="America/New_York"
    )
    foreign = AccountFactory(name="Elsewhere")
    agent = _with_password(
        in_role("Agent", accounts=[north], first_name="Avery", last_name="Lopez")
    )
    other_agent = _with_password(
        in_role("Agent", accounts=[north], first_name="Jordan", last_name="Kim")
    )
    manager = _with_password(
        in_role("Manager", accounts=[north], first_name="Morgan", last_name="Reyes")
    )
    global_manager = _with_password(
        in_role(
            "Global Manager",
            organizations=[organization],
            first_name="Gale",
            last_name="Global",
        )
    )
    scorer = _with_password(
        in_role("Scorer", accounts=[north], first_name="Sasha", last_name="Scorer")
    )
    staff = _with_password(
        User.objects.create_user(
            username="staff@example.com", is_staff=True, first_name="Stef"
        )
    )
    foreign_manager = _with_password(
        in_role("Manager", accounts=[foreign], first_name="Fran", last_name="Foreign")
    )
    now = timezone.now()
    agent_call = CallFactory(
        account=north,
        agent=agent,
        first_name="Pat",
        last_name="Buyer",
        email="pat@buyer.example",
        phone="+13035550177",
        source="Cars.com",
        received_at=now - timedelta(hours=3),
    )
    CallAttempt.objects.create(
        call=agent_call,
        leg=Leg.AGENT,
        agent=agent,
        number=agent.phone_number,
        provider="simulator",
        outcome=AttemptOutcome.ACCEPTED,
    )
    CallAttempt.objects.create(
        call=agent_call,
        leg=Leg.LEAD,
        number=agent_call.phone,
        provider="simulator",
        outcome=AttemptOutcome.ANSWERED,
        duration=95,
    )
    score_save(
        call=agent_call,
        scorer=scorer,
        values={
            "cat1": True,
            "cat2": True,
            "wow": True,
            "call_end": "Appointment set",
            "appointment_date": "2026-12-01",
        },
    )
    other_agent_call = CallFactory(
        account=north,
        agent=other_agent,
        first_name="Lee",
        last_name="Other",
        received_at=now - timedelta(hours=2),
    )
    south_call = CallFactory(
        account=south,
        first_name="Sam",
        last_name="South",
        received_at=now - timedelta(hours=1),
    )
    foreign_call = CallFactory(
        account=foreign,
        first_name="Fay",
        last_name="Foreign",
        received_at=now - timedelta(hours=1),
    )
    return World(
        north,
        south,
        foreign,
        agent,
        other_agent,
        manager,
        global_manager,
        scorer,
        staff,
        foreign_manager,
        agent_call,
        other_agent_call,
        south_call,
        foreign_call,
    )


@pytest.fixture
def world(db) -> World:
    return make_world()


@pytest.fixture
def signed_in(client):
    """``signed_in(user)``: the test client, signed in as ``user``."""

    def sign_in(user: User):
        client.force_login(user)
        return client

    return sign_in


# --- a real browser: Debian's Chromium driven by Playwright (never `playwright install`)
