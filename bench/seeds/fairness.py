"""Part 14's seed (``bench/fairness.py``): three dealers, each in an organization of its
own, open around the clock, ending a call NOAGENT when nobody can take it: the busy one of
part (a) with no agents, the busy one of part (b) with BUSY_AGENTS agents, and the quiet
one with QUIET_AGENTS agents (more than its leads need).

Run as ``python bench/seeds/fairness.py BUSY_AGENTS QUIET_AGENTS`` in the service's
checkout; prints each dealer's API credential, vendor id and account id, as JSON.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
from datetime import time
from typing import Any

import django


def _dealer(
    name: str, vendor_id: str, agents: int, first_number: int
) -> dict[str, Any]:
    from accounts.models import Account, AccountScheduleDay, Organization
    from accounts.services import account_create, api_credential_issue
    from calls.models import DialingSettings
    from leads.models import ParsingRule, VendorRegistration
    from users.services import user_create

    organization = Organization.objects.create(name=f"{name} Group")
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
        organization=organization,
        vendor_id=vendor_id,
        vendor_name=name,
    )
    ParsingRule.objects.create(account=account, name="Everything", priority=1000)
    DialingSettings.objects.create(account=account, no_agent_policy="end")
    always = {
        "active": True,
        "days": [{"active": True, "start_time": time(0), "end_time": time(23, 59)}] * 7,
    }
    for number in range(agents):
        user_create(
            organization=organization,
            data={
                "first_name": "Agent",
                "last_name": f"{vendor_id} {number}",
                "email": f"{vendor_id.lower()}-{number}@example.com",
                "account_ids": [account.pk],
                "phone_number": f"+130355{first_number + number}",
                "schedule": always,
            },
        )
    credential, key = api_credential_issue(organization=organization)
    return {
        "api_user": credential.api_user,
        "key": key,
        "vendor_id": vendor_id,
        "account": account.pk,
    }


def seed(*, busy_agents: int, quiet_agents: int) -> dict[str, Any]:
    return {
        "busy": _dealer("Bench Busy", "BENCH-BUSY", 0, 52100),
        "busy_paced": _dealer("Bench Busy Paced", "BENCH-BUSY-P", busy_agents, 52100),
        "quiet": _dealer("Bench Quiet", "BENCH-QUIET", quiet_agents, 56100),
    }


def main(argv: list[str]) -> None:
    parser = argparse.ArgumentParser(
        prog="bench/seeds/fairness.py", description=__doc__
    )
    parser.add_argument("busy_agents", type=int)
    parser.add_argument("quiet_agents", type=int)
    arguments = parser.parse_args(argv)
    print(
        json.dumps(
            seed(busy_agents=arguments.busy_agents, quiet_agents=arguments.quiet_agents)
        )
    )


if __name__ == "__main__":
    sys.path[0] = os.getcwd()  # the service's checkout, as bench/seeds/service.py says
    django.setup()
    main(sys.argv[1:])
