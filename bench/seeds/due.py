"""Part 15's seed and reading (``bench/due.py``): a dealer in an organization of its own
that texts at any hour and runs a follow-up cadence, with COUNT leads not reached, each
with an appointment reminder (a text stored an hour ago for later) and a follow-up text
step, all falling due over WINDOW seconds from START seconds from now.

Run as ``python bench/seeds/due.py seed COUNT START WINDOW SENDER`` in the service's
checkout (prints the account's id as JSON), then ``python bench/seeds/due.py collect
ACCOUNT_ID`` (prints, in ms, each row's handed-to-the-provider time less its due time).
"""

from __future__ import annotations

import argparse
import json
import os
import sys
from datetime import time, timedelta
from typing import Any

import django


def seed(*, count: int, start: float, window: float, sender: str) -> dict[str, Any]:
    from django.utils import timezone

    from accounts.models import Account, Organization
    from accounts.services import account_create
    from cadence.models import Cadence, Channel, PlannedStep, Template
    from calls.models import Call, CallStatus
    from texting.models import Direction, Purpose, Text, TextingSettings, TextStatus

    organization = Organization.objects.create(name=f"Bench Due Rows {sender}")
    account = account_create(
        account=Account(
            organization=organization,
            name="Bench Due Rows",
            timezone="America/Denver",
            caller_id=sender,
        )
    )
    TextingSettings.objects.create(
        account=account,
        enabled=True,
        sender=sender,
        quiet_start=time(0),
        quiet_end=time(23, 59, 59),
        automatic_limit=1000,
    )
    Cadence.objects.create(account=account, enabled=True)
    now = timezone.now()
    first = now + timedelta(seconds=start)
    step = timedelta(seconds=window) / max(1, count)
    calls = Call.objects.bulk_create(
        Call(
            account=account,
            phone=f"+1720555{1000 + n:04d}",
            received_at=now - timedelta(hours=1),
            status=CallStatus.NOANSWER,
            first_name="Sam",
        )
        for n in range(count)
    )
    Text.objects.bulk_create(
        Text(
            account=account,
            lead_phone=call.phone,
            call=call,
            direction=Direction.OUT,
            purpose=Purpose.REMINDER,
            to_number=call.phone,
            from_number=sender,
            body="A reminder of your visit tomorrow. Reply C to confirm.",
            due_at=first + n * step,
            status=TextStatus.SCHEDULED,
            provider="simulator",
        )
        for n, call in enumerate(calls)
    )
    # Stored an hour ago (as a reminder set yesterday is): nothing hands them over on commit.
    Text.objects.filter(account=account).update(created_at=now - timedelta(hours=1))
    PlannedStep.objects.bulk_create(
        PlannedStep(
            account=account,
            phone=call.phone,
            call=call,
            position=1,
            channel=Channel.TEXT,
            template=Template.OWN,
            body="Hi {first_name}, {dealer} here again. Reply STOP to opt out.",
            # Halfway between two reminders: the two kinds interleave.
            due_at=first + n * step + step / 2,
        )
        for n, call in enumerate(calls)
    )
    return {"account_id": account.pk}


def collect(*, account_id: int) -> dict[str, Any]:
    from cadence.models import PlannedStep
    from texting.models import Purpose, Text

    def ms(late: timedelta) -> float:
        return late.total_seconds() * 1000

    reminders = Text.objects.filter(account_id=account_id, purpose=Purpose.REMINDER)
    steps = PlannedStep.objects.filter(account_id=account_id).select_related(
        "made_text"
    )
    return {
        "reminders": [
            ms(t.handed_at - t.due_at) for t in reminders if t.handed_at is not None
        ],
        "reminders_count": reminders.count(),
        "steps": [
            ms(s.made_text.handed_at - s.due_at)
            for s in steps
            if s.made_text is not None and s.made_text.handed_at is not None
        ],
        "steps_count": steps.count(),
    }


def main(argv: list[str]) -> None:
    parser = argparse.ArgumentParser(prog="bench/seeds/due.py", description=__doc__)
    commands = parser.add_subparsers(dest="command", required=True)
    seeding = commands.add_parser("seed")
    seeding.add_argument("count", type=int)
    seeding.add_argument("start", type=float)
    seeding.add_argument("window", type=float)
    seeding.add_argument("sender")
    reading = commands.add_parser("collect")
    reading.add_argument("account_id", type=int)
    arguments = parser.parse_args(argv)
    if arguments.command == "seed":
        out = seed(
            count=arguments.count,
            start=arguments.start,
            window=arguments.window,
            sender=arguments.sender,
        )
    else:
        out = collect(account_id=arguments.account_id)
    print(json.dumps(out))


if __name__ == "__main__":
    # The service's code is the checkout this runs in (the working directory), not this
    # file's folder, which Python put first and whose modules would shadow the service's
    # apps (``pages``, ``texting``).
    sys.path[0] = os.getcwd()
    django.setup()
    main(sys.argv[1:])
