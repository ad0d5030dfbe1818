"""Learn the suggestions from the scorers now (scoring/learnt.py), as the nightly task
does: every account with scored calls, or one account's; a line per member with the
source now in force and the measures it was chosen on.

Safe to run at any time: each account's verdicts are replaced whole when it is done, and
suggestions made meanwhile read the verdicts in force before.
"""

from __future__ import annotations

from typing import Any

from django.core.management.base import BaseCommand, CommandError, CommandParser

from accounts.models import Account
from scoring.learnt import suggesters_learn


class Command(BaseCommand):
    help = (
        "Learn each category, call end and alert tag from the scorers' confirmed scores, "
        "and put a learnt model in force where it measures better than the phrase rule: "
        "every account with scored calls, or --account ID."
    )

    def add_arguments(self, parser: CommandParser) -> None:
        parser.add_argument("--account", type=int, help="Only this account (its id).")

    def handle(self, *args: Any, **options: Any) -> None:
        accounts = Account.objects.order_by("pk")
        if options["account"] is not None:
            accounts = accounts.filter(pk=options["account"])
            if not accounts.exists():
                raise CommandError(f"No account with id {options['account']}.")
        else:
            accounts = accounts.filter(calls__score__isnull=False).distinct()
        learnt = 0
        for account in accounts.iterator():
            self.stdout.write(f"{account.name} (#{account.pk}):")
            rows = suggesters_learn(
                account=account, progress=lambda line: self.stdout.write(f"  {line}")
            )
            in_force = sum(1 for row in rows if row.source == "learnt")
            self.stdout.write(
                f"  {in_force} of {len(rows)} members learnt, the rest by phrase rule"
            )
            learnt += 1
        self.stdout.write(self.style.SUCCESS(f"Done: {learnt:,} accounts learnt."))
