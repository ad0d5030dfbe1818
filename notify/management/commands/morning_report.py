"""Show a manager's morning report now: its plain-text part, or store and send it."""

from __future__ import annotations

from datetime import date, timedelta
from typing import Any
from zoneinfo import ZoneInfo

from django.core.management.base import BaseCommand, CommandError, CommandParser
from django.utils import timezone

from notify.report import report_build, report_store
from scoring.selectors import accounts_coachable_by
from users.models import User


class Command(BaseCommand):
    help = (
        "Print the morning report of a manager or global manager (its plain-text part); "
        "with --send, store it and send it by e-mail as the 07:00 run would."
    )

    def add_arguments(self, parser: CommandParser) -> None:
        parser.add_argument(
            "--user", required=True, metavar="EMAIL", help="The manager's e-mail."
        )
        parser.add_argument(
            "--day",
            type=date.fromisoformat,
            metavar="YYYY-MM-DD",
            help="The day reported (default: yesterday in the user's timezone).",
        )
        parser.add_argument(
            "--send",
            action="store_true",
            help="Store the report and send it by e-mail (once per user and morning).",
        )

    def handle(self, *args: Any, **options: Any) -> None:
        users = list(User.objects.filter(email__iexact=options["user"])[:2])
        if len(users) != 1:
            raise CommandError(
                f"{len(users) or 'No'} users with the e-mail {options['user']!r}."
            )
        user = users[0]
        if not accounts_coachable_by(user).exists():
            raise CommandError(f"{user.email} coaches no account: no report.")
        today = timezone.now().astimezone(ZoneInfo(user.timezone)).date()
        day = options["day"] or today - timedelta(days=1)
        if not options["send"]:
            report = report_build(user=user, day=day)
            self.stdout.write(f"Subject: {report.subject}\n")
            self.stdout.write(report.text)
            return
        message = report_store(user=user, day=day)
        if message is None:
            raise CommandError(
                f"The report of {day} for {user.email} was stored before; send it again "
                'from the admin (Notify > Messages, "Send again").'
            )
        self.stdout.write(
            f"Stored message {message.pk} ({message.subject}) for {user.email}; "
            "a worker sends it now."
        )
