"""Calls ready to score, and users in the scoring roles."""

from __future__ import annotations

from collections.abc import Sequence
from datetime import datetime, timedelta
from typing import Any

import factory
from django.contrib.auth.models import Group
from django.utils import timezone

from accounts.models import Account, Organization
from calls.models import AttemptOutcome, Call, CallAttempt, CallStatus, Leg
from tests.accounts.factories import AccountFactory
from tests.factories import ModelFactory
from tests.users.factories import UserFactory
from users.models import Membership, User

# A call's free-text members, as the scored-data export writes them (hostile-value tests).
CALL_TEXTS = (
    "altid",
    "source",
    "first_name",
    "last_name",
    "email",
    "call_notes",
    "update_notes",
    "summary",
    "transcription",
    "inbound_tracking_number",
    "recording_url",
)


class CallFactory(ModelFactory[Call]):
    """An answered call with a recording: what the scoring queue offers."""

    class Meta:
        model = Call

    account = factory.SubFactory(AccountFactory)
    status = CallStatus.ANSWER
    received_at = factory.LazyFunction(lambda: timezone.now() - timedelta(hours=1))
    phone = "+13035550123"
    first_name = "Sam"
    last_name = "Rivera"
    email = "sam@example.com"
    source = "Website"
    attempts = 1
    duration = 95
    response_time = 7
    recording_url = factory.Sequence(lambda n: f"https://leads.example.test/r/{n}.wav")
    ended_at = factory.LazyAttribute(
        lambda call: call.received_at + timedelta(minutes=2)
    )


def in_role(
    template: str,
    *,
    accounts: Sequence[Account] = (),
    organizations: Sequence[Organization] = (),
    **kwargs: Any,
) -> User:
    """A user with a permission template, assigned to ``accounts`` and a member of
    ``organizations`` (and of each account's organization)."""
    if accounts:
        user = UserFactory(account=accounts[0], **kwargs)
    else:
        number = User.objects.count() + 1
        user = User.objects.create_user(
            username=f"{template.lower().replace(' ', '')}{number}@example.com",
            first_name=kwargs.pop("first_name", "Robin"),
            last_name=kwargs.pop("last_name", f"Scorer{number}"),
            **kwargs,
        )
    for account in accounts[1:]:
        user.accounts.add(account)
        Membership.objects.get_or_create(user=user, organization=account.organization)
    for organization in organizations:
        Membership.objects.get_or_create(user=user, organization=organization)
    user.groups.add(Group.objects.get(name=template))
    return user


def received(at: datetime, **kwargs: Any) -> Call:
    return CallFactory(received_at=at, **kwargs)


def answered_call(agent: User, **kwargs: Any) -> Call:
    """A call ``agent`` took, with both legs as the pipeline leaves them (the agent's
    accepted, the lead's answered)."""
    call = CallFactory(agent=agent, **kwargs)
    for leg, outcome in (
        (Leg.AGENT, AttemptOutcome.ACCEPTED),
        (Leg.LEAD, AttemptOutcome.ANSWERED),
    ):
        CallAttempt.objects.create(
            call=call,
            leg=leg,
            agent=agent if leg == Leg.AGENT else None,
            number=agent.phone_number if leg == Leg.AGENT else call.phone,
            provider="simulator",
            outcome=outcome,
        )
    return call
