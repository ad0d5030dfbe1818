"""Part 6's seed (``bench/export.py``): per size, a dealer in the "Export Group"
organization with one answered call, scored, and its scored-data key; one scorer scores
for every dealer. ``bench/export.py`` then copies that call and its score in SQL until the
dealer has SIZE calls.

Run as ``python bench/seeds/export.py SIZE...`` in the service's checkout; prints, per
size, the dealer's id, its template call's id and its scored-data key, as JSON.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
from datetime import UTC, datetime
from typing import TYPE_CHECKING

import django

if TYPE_CHECKING:
    from users.models import User


def seed(*, sizes: list[int]) -> dict[int, dict[str, int | str]]:
    """The dealers, their template calls and keys, by size."""
    from accounts.models import Account, Organization
    from accounts.services import account_create, scored_data_key_issue
    from calls.models import Call, CallStatus
    from scoring.services import score_save
    from users.services import user_create

    organization = Organization.objects.create(name="Export Group")
    seeded: dict[int, dict[str, int | str]] = {}
    scorer: User | None = None
    for size in sizes:
        account = account_create(
            account=Account(
                organization=organization,
                name=f"Export {size}",
                timezone="America/Denver",
                address="1 Main St",
                city="Denver",
                postal_code="80202",
            )
        )
        if scorer is None:
            scorer = user_create(
                organization=organization,
                data={
                    "first_name": "Bench",
                    "last_name": "Scorer",
                    "email": "scorer@export.example",
                    "account_ids": [account.pk],
                    "permission_template": "Scorer",
                },
            )
        scorer.accounts.add(account)
        agent = user_create(
            organization=organization,
            data={
                "first_name": "Agent",
                "last_name": str(size),
                "email": f"agent{size}@export.example",
                "account_ids": [account.pk],
                "phone_number": "+13035551234",
            },
        )
        call = Call.objects.create(
            account=account,
            status=CallStatus.ANSWER,
            received_at=datetime(2026, 1, 1, 12, tzinfo=UTC),
            altid="P-1",
            source="Cars.com",
            first_name="Ann <&> Lee",
            last_name="O'Brien",
            email="ann@example.com",
            phone="+13035550188",
            call_notes="Sales lead. New 2025 Toyota RAV4. " * 4,
            whisper="Sales lead.",
            agent=agent,
            attempts=1,
            duration=184,
            response_time=9,
            recording_url="https://leads.example.test/r/abc",
            summary="Asked about the RAV4; test drive Saturday.",
            transcription="Agent (00:00-00:05): Hello.\nCustomer (00:05-00:09): Hi.",
        )
        score_save(
            call=call,
            scorer=scorer,
            values={
                "cat1": True,
                "cat3": True,
                "wow": True,
                "first_name": "Ann",
                "last_name": "Lee",
                "notes": "Good call.",
                "call_end": "Appointment set",
                "appointment_date": "2026-01-03",
                "appointment_time": "10:30",
                "called_on_make": "Toyota",
                "called_on_model": "RAV4",
                "lead_type": "New",
            },
        )
        seeded[size] = {
            "account": account.pk,
            "call": call.pk,
            "key": scored_data_key_issue(account=account),
        }
    return seeded


def main(argv: list[str]) -> None:
    parser = argparse.ArgumentParser(prog="bench/seeds/export.py", description=__doc__)
    parser.add_argument("sizes", type=int, nargs="+", help="calls of each dealer")
    arguments = parser.parse_args(argv)
    print(json.dumps(seed(sizes=arguments.sizes)))


if __name__ == "__main__":
    # The service's code is the checkout this runs in (the working directory), not this
    # file's folder, which Python put first and whose modules would shadow the service's
    # apps (``pages``, ``texting``).
    sys.path[0] = os.getcwd()
    django.setup()
    main(sys.argv[1:])
