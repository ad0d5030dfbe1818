from datetime import timedelta

import pytest
from django.utils import timezone

from cadence.models import Cadence, PlannedStep
from calls.models import DialingSettings
from tests.accounts.factories import AccountFactory
from tests.texting.conftest import dispatched, simulated, texting_on, world
from tests.users.factories import agent

__all__ = ["dispatched", "simulated", "world"]

LEAD = "+13035550000"  # the simulator never answers it
ANSWERS = "+13035550147"  # the simulator answers it
AGENT = "+13035550140"
SENDER = "+13035550999"


def dealer(name: str = "Demo Motors North", *, agents: bool = True, **texting):
    account = AccountFactory(timezone="America/Denver", name=name)
    DialingSettings.objects.create(account=account, lead_attempt_limit=1)
    texting_on(account, **texting)
    Cadence.objects.create(account=account, enabled=True)
    if agents:
        agent(account, phone=AGENT)
    return account


@pytest.fixture
def account(db):
    return dealer()


@pytest.fixture
def handed(monkeypatch):
    """The steps the scheduler handed to the broker: (step id, eta), never run eagerly."""
    from core import handover

    got: list[tuple[int, object]] = []
    passed_on = handover.hand_over

    def hand_over(task, *, kwargs, **options):
        if task.name != "cadence.tasks.step_run_task":
            return passed_on(task, kwargs=kwargs, **options)
        got.append((kwargs["step_id"], options.get("eta")))
        return True

    monkeypatch.setattr(handover, "hand_over", hand_over)
    return got


def lead_not_reached(world, account, phone=LEAD, **lead):
    """A lead's call through the pipeline (simulator) that ends without reaching them."""
    call = world.queue_call(
        account=account,
        phone=phone,
        received_at=timezone.now(),
        first_name="Sam",
        called_on_year="2025",
        called_on_make="Toyota",
        called_on_model="Camry",
        **lead,
    )
    world.run()
    call.refresh_from_db()
    return call


def make_due(step: PlannedStep) -> None:
    """The step's time has come (as if its hours had passed)."""
    PlannedStep.objects.filter(pk=step.pk).update(
        due_at=timezone.now() - timedelta(milliseconds=1)
    )


def statuses(account) -> list[tuple[int, str, str]]:
    return list(
        PlannedStep.objects.filter(account=account)
        .order_by("position")
        .values_list("position", "status", "reason")
    )
