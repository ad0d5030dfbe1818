"""Support turns an account's cadence on and sets its steps in the admin, and reads every
planned step (read only) with its status and reason."""

from __future__ import annotations

import pytest
from django.urls import reverse

from cadence.models import Cadence, CadenceStep, PlannedStep
from tests.admin_pages import text_of
from tests.cadence.conftest import lead_not_reached

pytestmark = pytest.mark.django_db


def test_support_turns_the_cadence_on_with_steps_of_its_own(admin_client, world):
    from tests.accounts.factories import AccountFactory

    account = AccountFactory(name="Demo Motors North")
    response = admin_client.post(
        reverse("admin:cadence_cadence_add"),
        {
            "account": account.pk,
            "enabled": "on",
            "steps-TOTAL_FORMS": "1",
            "steps-INITIAL_FORMS": "0",
            "steps-MIN_NUM_FORMS": "0",
            "steps-MAX_NUM_FORMS": "1000",
            "steps-0-after_hours": "48",
            "steps-0-channel": "call",
            "steps-0-template": "own",
            "steps-0-body": "",
        },
    )

    assert response.status_code == 302
    cadence = Cadence.objects.get(account=account)
    assert cadence.enabled
    assert list(cadence.steps.values_list("after_hours", "channel")) == [(48, "call")]
    assert CadenceStep.objects.count() == 1


def test_planned_steps_are_listed_and_read_only(admin_client, world, account):
    lead_not_reached(world, account)

    page = admin_client.get(reverse("admin:cadence_plannedstep_changelist"))

    assert page.status_code == 200
    assert "Demo Motors North" in text_of(page)
    step = PlannedStep.objects.first()
    assert step is not None
    form = admin_client.get(reverse("admin:cadence_plannedstep_change", args=[step.pk]))
    assert 'name="phone"' not in form.content.decode()
