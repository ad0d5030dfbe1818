"""The bench service's seed (``bench/harness.py``'s ``seed_service``): an organization
with a dealer that takes every lead (two teams, an API credential, one agent), a dealer
whose agents take part 4a's burst and one whose few agents take part 4b's queue, every
agent on duty around the clock.

Run as ``python bench/seeds/service.py AGENTS QUEUE_AGENTS`` in the checkout of the
service to seed (``bench/before.py`` seeds an older one); prints the keys, ids and vendor
ids the parts post with, as JSON.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
from datetime import time
from typing import TYPE_CHECKING, Any

import django

if TYPE_CHECKING:
    from accounts.models import Account, Organization


def dealer(organization: Organization, name: str, vendor_id: str) -> Account:
    """A dealer open around the clock that takes every lead its vendor id sends."""
    from accounts.models import Account, AccountScheduleDay
    from accounts.services import account_create
    from leads.models import ParsingRule, VendorRegistration

    account = account_create(
        account=Account(organization=organization, name=name, timezone="America/Denver")
    )
    AccountScheduleDay.objects.bulk_create(
        AccountScheduleDay(
            account=account, weekday=day, start_time=time(0), end_time=time(23, 59)
        )
        for day in range(7)
    )
    VendorRegistration.objects.create(
        account=account,
        organization=account.organization,
        vendor_id=vendor_id,
        vendor_name=name,
    )
    ParsingRule.objects.create(account=account, name="Everything", priority=1000)
    return account


def seed(*, agents: int, queue_agents: int) -> dict[str, Any]:
    """The bench's organization, its three dealers and their agents; what the parts post
    with."""
    from accounts.models import Organization, Team
    from accounts.services import api_credential_issue
    from users.services import user_create

    always = {
        "active": True,
        "days": [{"active": True, "start_time": time(0), "end_time": time(23, 59)}] * 7,
    }
    organization = Organization.objects.create(name="Bench Group")
    account = dealer(organization, "Bench Dealer", "BENCH-1")
    Team.objects.create(account=account, name="Sales")
    Team.objects.create(account=account, name="Service")
    credential, key = api_credential_issue(organization=organization)
    user = user_create(
        organization=organization,
        data={
            "first_name": "Bench",
            "last_name": "Agent",
            "email": "bench@example.com",
            "account_ids": [account.pk],
            "phone_number": "+13035550123",
        },
    )
    dialing = dealer(organization, "Bench Dialing", "BENCH-DIAL")
    queueing = dealer(organization, "Bench Queue", "BENCH-QUEUE")
    for number in range(agents + queue_agents):
        user_create(
            organization=organization,
            data={
                "first_name": "Agent",
                "last_name": str(number),
                "email": f"agent{number}@example.com",
                "account_ids": [dialing.pk if number < agents else queueing.pk],
                "phone_number": f"+130355{51100 + number}",
                "schedule": always,
            },
        )
    return {
        "org": organization.pk,
        "account": account.pk,
        "api_user": credential.api_user,
        "key": key,
        "user": user.pk,
        "vendor_id": "BENCH-1",
        "dialing": dialing.pk,
        "dialing_vendor_id": "BENCH-DIAL",
        "queue_vendor_id": "BENCH-QUEUE",
    }


def main(argv: list[str]) -> None:
    parser = argparse.ArgumentParser(prog="bench/seeds/service.py", description=__doc__)
    parser.add_argument("agents", type=int, help="agents of part 4a's dealer")
    parser.add_argument("queue_agents", type=int, help="agents of part 4b's dealer")
    arguments = parser.parse_args(argv)
    print(
        json.dumps(seed(agents=arguments.agents, queue_agents=arguments.queue_agents))
    )


if __name__ == "__main__":
    # The service's code is the checkout this runs in (the working directory), not this
    # file's folder, which Python put first and whose modules would shadow the service's
    # apps (``pages``, ``texting``).
    sys.path[0] = os.getcwd()
    django.setup()
    main(sys.argv[1:])
