"""Build the dashboard's rollup again from the calls (scoring/rollup_build.py): every
account's days up to its yesterday, or one account's, from scratch or from a day on.

Safe to run at any time and as often as wanted: each chunk of days is computed under the
account's lock and replaces its rows, and the dashboard reads any day not rolled up yet
from the calls meanwhile.
"""

from __future__ import annotations

from datetime import date
from typing import Any

from django.core.management.base import BaseCommand, CommandError, CommandParser

from accounts.models import Account
from scoring.rollup_build import rollup_rebuild


class Command(BaseCommand):
    help = (
        "Build the dashboard's per-account per-day rollup again from the calls, up to "
        "each account's yesterday: every account, or --account ID; from scratch, or "
        "--since DATE (YYYY-MM-DD) on where the rollup already holds that day."
    )

    def add_arguments(self, parser: CommandParser) -> None:
        parser.add_argument("--account", type=int, help="Only this account (its id).")
        parser.add_argument(
            "--since",
            type=date.fromisoformat,
            help="Compute the days from this one on (YYYY-MM-DD); without it, every day.",
        )

    def handle(self, *args: Any, **options: Any) -> None:
        accounts = Account.objects.order_by("pk")
        if options["account"] is not None:
            accounts = accounts.filter(pk=options["account"])
            if not accounts.exists():
                raise CommandError(f"No account with id {options['account']}.")
        total = 0
        for account in accounts.iterator():
            total += self._rebuild(account, options["since"])
        self.stdout.write(self.style.SUCCESS(f"Done: {total:,} calls rolled up."))

    def _rebuild(self, account: Account, since: date | None) -> int:
        """One account's rollup, a line per chunk of days; returns its calls."""
        calls = 0
        label = f"{account.name} (#{account.pk})"

        def progress(first: date, last: date, held: int) -> None:
            nonlocal calls
            calls += held
            self.stdout.write(f"  {label}: {first}..{last}, {held:,} calls")

        days = rollup_rebuild(account=account, since=since, progress=progress)
        self.stdout.write(
            f"{label}: {days:,} days, {calls:,} calls, rolled up to its yesterday"
        )
        return calls
