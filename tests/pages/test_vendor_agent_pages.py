"""A call whose agent is not a user (an agent of the vendor's system, click-to-call) shows
that agent on the pages and in the CSV export as the scored record does."""

from __future__ import annotations

import csv
import io

import pytest
from django.urls import reverse

from calls.models import CallOrigin
from tests.scoring.factories import CallFactory

pytestmark = pytest.mark.django_db


def test_the_vendor_agent_is_shown_in_the_list_the_call_page_and_the_export(
    world, signed_in
):
    manager = signed_in(world.global_manager)
    call = CallFactory(
        account=world.north,
        origin=CallOrigin.CLICK_TO_CALL,
        last_name="Clicked",
        vendor_agent_id="crm-417",
        agent_number="+13035550142",
    )
    by_number = CallFactory(
        account=world.north,
        origin=CallOrigin.CLICK_TO_CALL,
        last_name="Rung",
        agent_number="+13035550143",
    )

    listed = manager.get(reverse("pages:call-list"), {"q": "Clicked"})
    page = manager.get(reverse("pages:call-detail", args=[call.pk]))
    exported = manager.get(reverse("pages:call-export"))

    assert listed.status_code == page.status_code == exported.status_code == 200
    assert "crm-417" in listed.content.decode()
    assert "<dt>Agent</dt><dd>crm-417</dd>" in page.content.decode()
    text = b"".join(exported.streaming_content).decode()
    agents = {row["id"]: row["agent"] for row in csv.DictReader(io.StringIO(text))}
    assert agents[str(call.pk)] == "crm-417"
    assert agents[str(by_number.pk)] == "+13035550143"
    assert agents[str(world.agent_call.pk)] == "Avery Lopez"
