"""Part 12's seed (``bench/writeback.py``): a dealer in an organization of its own that
writes every call's end back to its CRM by e-mail and has no agents, ending a call NOAGENT
when nobody can take it.

Run as ``python bench/seeds/writeback.py`` in the service's checkout; prints the API
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


def seed() -> dict[str, Any]:
    """The write-back dealer; what part 12 posts its leads with."""
    from accounts.models import Account, AccountScheduleDay, Organization
    from accounts.services import account_create, api_credential_issue
    from calls.models import DialingSettings
    from leads.models import ParsingRule, VendorRegistration
    from notify.models import NotifySettings

    organization = Organization.objects.create(name="Bench Write-back Group")
    account = account_create(
        account=Account(
            organization=organization,
            name="Bench Write-back",
            timezone="America/Denver",
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
        vendor_id="BENCH-CRM",
        vendor_name="Bench Write-back",
    )
    ParsingRule.objects.create(account=account, name="Everything", priority=1000)
    DialingSettings.objects.create(account=account, no_agent_policy="end")
    NotifySettings.objects.create(
        account=account, crm_addresses="leads@crm.bench.example"
    )
    credential, key = api_credential_issue(organization=organization)
    return {"api_user": credential.api_user, "key": key, "vendor_id": "BENCH-CRM"}


def main(argv: list[str]) -> None:
    parser = argparse.ArgumentParser(
        prog="bench/seeds/writeback.py", description=__doc__
    )
    parser.parse_args(argv)  # none; ``--help`` says what it does
    print(json.dumps(seed()))


if __name__ == "__main__":
    # The service's code is the checkout this runs in (the working directory), not this
    # file's folder, which Python put first and whose modules would shadow the service's
    # apps (``pages``, ``texting``).
    sys.path[0] = os.getcwd()
    django.setup()
    main(sys.argv[1:])
