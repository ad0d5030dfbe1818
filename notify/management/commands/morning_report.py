"""Show a manager's morning report now: its plain-text part, or store and send it."""

from __future__ import annotations

from datetime import date, timedelta
from typing import Any
from zoneinfo import ZoneInfo

from django.core.management.base import BaseCommand, CommandError, CommandParser
from django.utils import timezone

from notify.models import Message
from notify.report import report_build, report_key, report_store
from notify.services import message_send_again
from scoring.selectors import accounts_coachable_by
from users.models import User


class Command(BaseCommand):
    help = (
        "Print the morning report of a manager or global manager (its plain-text part); "
        "with --send, store it and send it by e-mail as the 07:00 run would (once: "
        "--again sends the stored one again)."
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
        parser.add_argument(
            "--again",
            action="store_true",
            help="With --send: when the report was stored before (by the 07:00 run or an "
            "earlier --send), send that stored report again, as the admin's "
            '"Send again" does.',
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
        if message is not None:
            self.stdout.write(
                f"Stored message {message.pk} ({message.subject}) for {user.email}; "
                "a worker sends it now."
            )
            return
        stored = Message.objects.get(key=report_key(user, day + timedelta(days=1)))
        if options["again"]:
            stored = message_send_again(message=stored)
            self.stdout.write(
                f"Sending message {stored.pk} ({stored.subject}) to {user.email} again; "
                "a worker sends it now."
            )
            return
        # Not an error: the report exists (the scheduler's 07:00 run stores it too).
        self.stdout.write(
            f"The report of {day} for {user.email} was already stored, by the 07:00 run "
            f"or an earlier --send: message {stored.pk}, {stored.get_status_display()} "
            f"since {stored.status_at:%Y-%m-%d %H:%M} UTC. Nothing new was sent. To send "
            'it again, add --again, or use the admin (Notify > Messages, "Send again").'
        )
