from datetime import time

import pytest

from calls.models import DialingSettings
from tests.accounts.factories import AccountFactory
from tests.calls.harness import World
from tests.handover import hold_hand_overs
from texting import providers
from texting.models import TextingSettings

ALL_DAY = {"quiet_start": time(0, 0), "quiet_end": time(23, 59, 59)}


@pytest.fixture
def dispatched(monkeypatch):
    """The texts handed to the broker (never run eagerly): their ids, in order."""
    ids: list[int] = []
    hold_hand_overs(
        monkeypatch,
        "texting.tasks.text_send_task",
        then=lambda text_id, countdown: ids.append(text_id),
    )
    return ids


@pytest.fixture
def simulated(monkeypatch):
    """What the simulated provider would deliver later: (task name, kwargs)."""
    later: list[tuple[str, dict]] = []
    monkeypatch.setattr(
        providers,
        "_later",
        lambda seconds, task, **kwargs: later.append((task.name, kwargs)),
    )
    return later


@pytest.fixture
def world(monkeypatch, django_capture_on_commit_callbacks, dispatched, simulated):
    return World(monkeypatch, django_capture_on_commit_callbacks)


@pytest.fixture
def account(db):
    account = AccountFactory(timezone="America/Denver", name="Demo Motors North")
    DialingSettings.objects.create(account=account, lead_attempt_limit=1)
    return account


def texting_on(account, **values) -> TextingSettings:
    """Texting on for ``account``, at any hour unless the test sets quiet hours."""
    return TextingSettings.objects.create(
        account=account,
        **{"enabled": True, "sender": "+13035550999", **ALL_DAY, **values},
    )
