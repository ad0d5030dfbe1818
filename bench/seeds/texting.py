"""Part 11's seed (``bench/texting.py``): a dealer in an organization of its own that texts
its leads at any hour (up to LIMIT automatic texts a lead) and has no agents, ending a call
NOAGENT when nobody can take it.

Run as ``python bench/seeds/texting.py LIMIT`` in the service's checkout; prints the API
credential and vendor id to post its leads with, as JSON.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
from datetime import time
from typing import Any

import django


def seed(*, limit: int) -> dict[str, Any]:
    """The texting dealer; what part 11 posts its leads with."""
    from accounts.models import Account, AccountScheduleDay, Organization
    from accounts.services import account_create, api_credential_issue
    from calls.models import DialingSettings
    from leads.models import ParsingRule, VendorRegistration
    from texting.models import TextingSettings

    organization = Organization.objects.create(name="Bench Texting Group")
    account = account_create(
        account=Account(
            organization=organization, name="Bench Texting", timezone="America/Denver"
        )
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
        vendor_id="BENCH-TEXT",
        vendor_name="Bench Texting",
    )
    ParsingRule.objects.create(account=account, name="Everything", priority=1000)
    DialingSettings.objects.create(account=account, no_agent_policy="end")
    TextingSettings.objects.create(
        account=account,
        enabled=True,
        quiet_start=time(0),
        quiet_end=time(23, 59),
        automatic_limit=limit,
    )
    credential, key = api_credential_issue(organization=organization)
    return {"api_user": credential.api_user, "key": key, "vendor_id": "BENCH-TEXT"}


def main(argv: list[str]) -> None:
    parser = argparse.ArgumentParser(prog="bench/seeds/texting.py", description=__doc__)
    parser.add_argument("limit", type=int, help="automatic texts a lead may get")
    arguments = parser.parse_args(argv)
    print(json.dumps(seed(limit=arguments.limit)))


if __name__ == "__main__":
    # The service's code is the checkout this runs in (the working directory), not this
    # file's folder, which Python put first and whose modules would shadow the service's
    # apps (``pages``, ``texting``).
    sys.path[0] = os.getcwd()
    django.setup()
    main(sys.argv[1:])
