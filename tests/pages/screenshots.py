"""`make screenshots`: a PNG of each page, with demo data, in docs/screenshots/.

Not collected by `make test` (the file name does not start with test_); run by name:
``pytest tests/pages/screenshots.py``. It loads seed_demo into the test database, scores
and coaches some demo calls when none are scored yet (some low, some with an alert, for
the coaching queue), and photographs each page as the role that uses it.
"""

from __future__ import annotations

from datetime import timedelta
from io import StringIO
from pathlib import Path
from typing import Any

import pytest
from django.core.management import call_command
from django.db.models import F
from django.utils import timezone

from calls.models import Call, CallStatus
from demo.management.commands.seed_demo import ORGANIZATIONS
from demo.pages import GLOBAL_MANAGER, PASSWORD
from scoring.models import Score
from scoring.services import coaching_save, score_save
from users.models import User

pytestmark = [pytest.mark.slow, pytest.mark.django_db(transaction=True)]

OUT = Path(__file__).resolve().parents[2] / "docs" / "screenshots"
END_REASONS = [
    "Appointment set",
    "Callback requested",
    "Information given",
    "Not interested",
]


def _score_some(scorer: User, manager: User, agent: User) -> Call:
    """Score three in four answered demo calls (leaving the rest for the queue); coach the
    newest scored one of ``agent``'s, with a transcript when one has."""
    answered = list(
        Call.objects.filter(status=CallStatus.ANSWER, account__name="Demo Motors North")
        .exclude(recording_url="")
        .order_by("received_at")
    )
    for n, call in enumerate(answered):
        if n % 4 == 3 or Score.objects.filter(call=call).exists():
            continue
        values: dict[str, Any] = {
            # One call in seven scored low, for the coaching queue.
            f"cat{slot}": (n + slot) % 3 != 0 and (n % 7 != 2 or slot < 3)
            for slot in range(1, 11)
        }
        values.update(
            wow=n % 5 == 0,
            call_end=END_REASONS[n % 4],
            notes="Friendly call.",
            alert="Unhappy customer" if n % 6 == 1 else "",
        )
        if values["call_end"] == "Appointment set":
            values["appointment_date"] = (call.received_at + timedelta(days=2)).date()
        score_save(call=call, scorer=scorer, values=values)
    coached = (
        Score.objects.filter(call__in=answered, call__agent=agent)
        .order_by(F("call__summary").desc(), "-call__received_at")
        .first()
    )
    assert coached is not None
    coaching_save(
        call=coached.call,
        coach=manager,
        notes="Great rapport. Next time ask for the appointment before the price talk.",
    )
    # A second note, older, for the agent's page to list two.
    other = (
        Score.objects.filter(call__in=answered, call__agent=agent, coach_notes="")
        .order_by("call__received_at")
        .first()
    )
    if other is not None:
        coaching_save(
            call=other.call,
            coach=manager,
            notes="Say the dealership's name in the first sentence.",
        )
    return coached.call


def test_screenshots(open_as):
    call_command("seed_demo", stdout=StringIO(), stderr=StringIO())
    scorer = User.objects.get(username=ORGANIZATIONS[0].scorer.email)
    manager = User.objects.get(username="morgan.reyes@north.demo-motors.example")
    agent = User.objects.get(username="avery.lopez@north.demo-motors.example")
    coached = _score_some(scorer, manager, agent)
    OUT.mkdir(parents=True, exist_ok=True)
    since = (timezone.localdate() - timedelta(days=29)).isoformat()

    def shot(page, name: str) -> None:
        page.set_viewport_size({"width": 1360, "height": 900})
        page.screenshot(path=str(OUT / f"{name}.png"), full_page=True)

    page = open_as(scorer, PASSWORD)
    shot(page, "scoring-home")
    page.get_by_role("button", name="Score next call").click()
    page.wait_for_url("**/scoring/calls/*/")
    for key in ("1", "2", "4", "5"):
        page.keyboard.press(key)
    shot(page, "scoring-workspace")

    page = open_as(User.objects.get(username=GLOBAL_MANAGER), PASSWORD)
    page.goto("/dashboard/")  # the default view: the last seven days
    shot(page, "dashboard")
    page.goto("/coaching/")
    shot(page, "coaching-queue")
    page.goto(f"/calls/?date_from={since}&scored=yes")
    shot(page, "call-browser")
    page.goto(f"/calls/{coached.pk}/")
    shot(page, "call-page")

    page = open_as(agent, PASSWORD)  # lands on their own page
    shot(page, "agent-home")
    page.goto(f"/calls/{coached.pk}/")
    shot(page, "call-page-agent")
    page.context.clear_cookies()
    page.goto("/login/")
    shot(page, "sign-in")
