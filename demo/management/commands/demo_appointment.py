"""The README's appointment walkthrough on `make run`'s demo data, against the running
processes (the simulator provider, the worker and its scheduler): an appointment set on a
demo lead's newest answered call an hour from now, the reminder the texting sweep sends,
the simulated lead's "C" through the simulator's reply task (as Twilio's inbound text
arrives), the appointment confirmed, and the manager marking it kept. Each step printed
with the page to look at. Run it again for another lead."""

from __future__ import annotations

import time
from collections.abc import Callable
from datetime import timedelta
from typing import TypeVar
from zoneinfo import ZoneInfo

from django.conf import settings
from django.core.management.base import BaseCommand, CommandError, CommandParser
from django.urls import reverse
from django.utils import timezone

from accounts.models import Account
from appointments.models import Actor, Appointment, Reminder, ReminderKind, Status
from appointments.services import appointment_change, appointment_set_for_call
from calls.models import Call, CallStatus
from scoring.selectors import roles_of
from texting.models import Text, TextStatus
from texting.providers import REPLIES, UNDELIVERABLE
from texting.selectors import (
    automatic_texts_sent,
    opted_out,
    sender_of,
    texting_settings_of,
)
from texting.tasks import simulator_text_reply_task
from users.models import User

ACCOUNT = "Demo Motors North"
T = TypeVar("T")


class Command(BaseCommand):
    help = (
        "On make run's demo data: set an appointment on a demo lead, let the simulated "
        "lead confirm the reminder by text, mark it kept; prints each page to look at."
    )

    def add_arguments(self, parser: CommandParser) -> None:
        parser.add_argument("--account", default=ACCOUNT, help="a demo account's name")
        parser.add_argument(
            "--wait",
            type=float,
            default=120.0,
            help="seconds to wait for the worker at each step (default 120)",
        )
        parser.add_argument(
            "--base-url",
            default=settings.PUBLIC_BASE_URL,
            help="where the pages are served (default PUBLIC_BASE_URL)",
        )

    def handle(self, *args: object, **options: object) -> None:
        base = str(options["base_url"]).rstrip("/")
        wait = float(options["wait"])  # type: ignore[arg-type]
        account = Account.objects.filter(name=options["account"]).first()
        if account is None:
            raise CommandError(
                f"No account {options['account']!r}: run `make run` (or "
                "`manage.py seed_demo`) first."
            )
        manager = next(
            (
                user
                for user in User.objects.filter(accounts=account, is_active=True)
                .exclude(is_staff=True)
                .order_by("pk")
                if roles_of(user).manager
            ),
            None,
        )
        call = _lead_to_remind(account)
        starts_at = (timezone.now() + timedelta(hours=1)).replace(
            second=0, microsecond=0
        )
        appointment = appointment_set_for_call(
            call=call, starts_at=starts_at, by=Actor.AGENT, by_user=call.agent
        )
        local = timezone.localtime(starts_at, ZoneInfo(account.timezone))
        page = f"{base}{reverse('pages:call-detail', args=[call.pk])}#appointments"
        self._step(
            1,
            f"{_name(call.agent, 'An agent')} set a {appointment.get_kind_display().lower()} "
            f"for {call.first_name} {call.last_name} ({call.phone}) at "
            f"{local:%H:%M %Z}",
            page,
        )
        reminder = Reminder.objects.filter(
            appointment=appointment, kind=ReminderKind.BOOKED
        ).first()
        if reminder is None or reminder.text_id is None:
            raise CommandError("No reminder was stored: is texting on for the account?")
        text = reminder.text
        assert text is not None

        def sent() -> Text | None:
            text.refresh_from_db(fields=["status", "from_number"])
            return (
                text if text.status in (TextStatus.SENT, TextStatus.DELIVERED) else None
            )

        _until(wait, sent, "the reminder to be sent: is the worker (make run) running?")
        self._step(2, f"The reminder went to the lead: {text.body!r}", page)
        simulator_text_reply_task.delay(
            answering=text.pk,
            to_number=text.from_number
            or sender_of(account, texting_settings_of(account)),
            from_number=text.to_number,
            body="C",
        )
        _until(
            wait,
            lambda: Appointment.objects.filter(
                pk=appointment.pk, status=Status.CONFIRMED
            ).first(),
            "the lead's reply to confirm it: is the worker (make run) running?",
        )
        self._step(
            3, "The lead replied 'C' by text: the appointment is confirmed", page
        )
        appointment = appointment_change(
            appointment=appointment, to=Status.KEPT, by=Actor.MANAGER, by_user=manager
        )
        self._step(
            4,
            f"{_name(manager, 'The manager')} marked it kept; today's appointments and the "
            "dashboard's show rate count it",
            f"{base}{reverse('pages:appointments')}?day={local:%Y-%m-%d}",
        )
        self.stdout.write(f"Dashboard: {base}{reverse('pages:dashboard')}")

    def _step(self, number: int, what: str, url: str) -> None:
        self.stdout.write(f"{number}. {what}\n   {url}")
        self.stdout.flush()


def _name(user: User | None, nobody: str) -> str:
    return (user.get_full_name() or user.username) if user else nobody


def _until(wait: float, found: Callable[[], T | None], what: str) -> T:
    """What ``found`` finds, asked every half second for ``wait`` seconds."""
    deadline = time.monotonic() + wait
    while time.monotonic() < deadline:
        value = found()
        if value is not None:
            return value
        time.sleep(0.5)
    raise CommandError(f"Waited {wait:.0f} s for {what}")


def _lead_to_remind(account: Account) -> Call:
    """The account's newest answered demo call whose lead may be texted (texting on, not
    opted out, room under the limit of automatic texts, not a simulator number that
    replies on its own) and has no appointment to come."""
    config = texting_settings_of(account)
    if config is None or not config.enabled:
        raise CommandError(f"Texting is off for {account.name}.")
    calls = (
        Call.objects.filter(account=account, status=CallStatus.ANSWER, is_demo=True)
        .exclude(
            appointments__status__in=[Status.PROPOSED, Status.SET, Status.CONFIRMED]
        )
        .select_related("account", "agent")
        .order_by("-received_at", "-pk")
    )
    for call in calls[:200]:
        if call.phone[-4:] in {*REPLIES, UNDELIVERABLE}:
            continue
        if opted_out(account_id=account.pk, phone=call.phone):
            continue
        if automatic_texts_sent(account_id=account.pk, phone=call.phone) >= (
            config.automatic_limit
        ):
            continue
        return call
    raise CommandError(f"No demo lead of {account.name} is left to remind.")
