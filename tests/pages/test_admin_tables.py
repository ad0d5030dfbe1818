"""Support staff's widest admin tables fit a 1,280 px screen: the call's attempts and the
webhook deliveries, with realistic values (Twilio ids, long endpoint URLs and errors); the
overview's key table keeps each header on one line."""

from __future__ import annotations

from datetime import timedelta

import pytest
from django.utils import timezone

from accounts.models import ScoredDataKey
from calls.models import AttemptOutcome, CallAttempt, Leg
from tests.accounts.factories import issue_scored_data_key
from tests.admin_pages import SUPPORT_PASSWORD, support_user
from webhooks.models import (
    DeliveryStatus,
    WebhookDelivery,
    WebhookEndpoint,
    WebhookEvent,
)

pytestmark = [pytest.mark.slow, pytest.mark.django_db(transaction=True)]


def _fits(page, container: str) -> None:
    """Nothing of ``container`` is off screen: it does not scroll sideways, the page does not
    either, and its last column ends inside the 1,280 px window."""
    box = page.evaluate(
        """(selector) => {
            const element = document.querySelector(selector);
            const cells = element.querySelectorAll("thead th");
            const last = cells[cells.length - 1].getBoundingClientRect();
            return {
                overflow: element.scrollWidth - element.clientWidth,
                page: document.documentElement.scrollWidth,
                lastRight: last.right,
                lastName: cells[cells.length - 1].innerText.trim(),
            };
        }""",
        container,
    )
    assert box["overflow"] <= 0, box
    assert box["page"] <= 1280, box
    assert box["lastRight"] <= 1280, box


def test_the_attempts_and_deliveries_fit_a_1280_pixel_screen(world, open_as):
    call = world.agent_call
    start = call.received_at
    for n in range(3):
        CallAttempt.objects.create(
            call=call,
            leg=Leg.AGENT,
            round=n + 1,
            agent=world.agent,
            number="+13035550100",
            provider="twilio",
            provider_id="CA" + "0123456789abcdef" * 2,
            dial_requested_at=start + timedelta(seconds=1),
            ringing_at=start + timedelta(seconds=2),
            answered_at=start + timedelta(seconds=5),
            ended_at=start + timedelta(seconds=100),
            outcome=AttemptOutcome.ACCEPTED,
            key_pressed="1",
            duration=95,
        )
    endpoint = WebhookEndpoint.objects.create(
        organization=world.north.organization,
        url="https://crm.integrations.example-dealer-group.com/hooks/lead-to-call/v2/events",
        secret_encrypted="x",
        secret_prefix="whsec_ab",
    )
    event = WebhookEvent.objects.create(
        public_id="evt_" + "0123456789abcdef0123456789ab",
        type="call.completed",
        organization=world.north.organization,
        account=world.north,
        body="{}",
    )
    now = timezone.now()
    WebhookDelivery.objects.create(
        event=event,
        endpoint=endpoint,
        status=DeliveryStatus.FAILED,
        attempts=7,
        retry_until=now + timedelta(days=3),
        last_attempt_at=now,
        next_attempt_at=now + timedelta(minutes=30),
        response_status=503,
        response_ms=10234,
        error="HTTPSConnectionPool(host='crm.integrations.example-dealer-group.com', port=443): Read timed out. (read timeout=10)",
    )
    WebhookDelivery.objects.create(
        event=WebhookEvent.objects.create(
            public_id="evt_second",
            type="call.scored",
            organization=world.north.organization,
            account=world.north,
            body="{}",
        ),
        endpoint=endpoint,
        status=DeliveryStatus.PENDING,
        attempts=2,
        retry_until=now + timedelta(days=3),
        last_attempt_at=now,
        next_attempt_at=now + timedelta(minutes=30),
        response_status=500,
        response_ms=88,
    )
    page = open_as(support_user(), SUPPORT_PASSWORD)
    page.set_viewport_size({"width": 1280, "height": 900})

    page.goto(f"/admin/calls/call/{call.pk}/change/")
    attempts = page.locator(".inline-group").filter(has_text="every leg dialed")
    assert attempts.locator("tbody tr.has_original").count() == 5
    _fits(page, ".inline-group .tabular")
    text = attempts.inner_text()
    assert "CA0123456789abcdef" in text  # the provider's id is shown whole, broken
    assert "(+100 s)" in text

    page.goto("/admin/webhooks/webhookdelivery/")
    _fits(page, "#changelist .results")
    rows = page.locator("#result_list tbody tr")
    assert rows.count() == 2
    listed = page.locator("#result_list").inner_text()
    assert "Failed (gave up)" in listed
    assert "Pending" in listed
    assert "503 in 10,234 ms" in listed
    assert "2, next at " in listed
    # The error is cut short on the list; hovering shows it whole.
    title = page.locator(
        "#result_list span[title*='HTTPSConnectionPool']"
    ).get_attribute("title")
    assert title is not None
    assert title.endswith("(read timeout=10)")


def test_the_overviews_key_headers_each_read_on_one_line(world, open_as):
    # The keys table on the admin index: Django's dashboard styles give every header of
    # a module's table the whole width and let words break, so "Usable", over a column
    # of "yes", came out as three lines of two letters.
    issue_scored_data_key(world.north)
    ScoredDataKey.objects.update(last_used_at=timezone.now())
    page = open_as(support_user(), SUPPORT_PASSWORD)
    page.set_viewport_size({"width": 1280, "height": 900})

    page.goto("/admin/")

    lines = page.evaluate(
        """() => [...document.querySelectorAll("#overview-keys thead th")].map((th) => {
            const range = document.createRange();
            range.selectNodeContents(th);
            return [th.innerText.trim(), range.getClientRects().length];
        })"""
    )
    assert lines == [
        ["KEY", 1],
        ["OF", 1],
        ["ORGANIZATION", 1],
        ["PREFIX", 1],
        ["LAST USED", 1],
        ["USABLE", 1],
    ]
