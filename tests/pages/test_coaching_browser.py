"""The leaderboard, the coaching queue, the agent's page with its badge, and the scoring
workspace's running total, in a real browser (Chromium through Playwright)."""

from __future__ import annotations

from datetime import timedelta

import pytest
from django.urls import reverse
from django.utils import timezone

from scoring.services import coaching_save, score_save
from tests.scoring.factories import CallFactory

pytestmark = [pytest.mark.slow, pytest.mark.django_db(transaction=True)]


def test_the_leaderboard_ranks_the_agents_with_their_figures(world, open_as):
    for minutes in (10, 20):
        call = CallFactory(
            account=world.north,
            agent=world.other_agent,
            received_at=timezone.now() - timedelta(minutes=minutes),
            response_time=30,
        )
        score_save(call=call, scorer=world.scorer, values={"cat1": True})
    page = open_as(world.manager)
    assert page.locator("h1").inner_text() == "Speed to lead"
    rows = page.locator("#agents tbody tr")
    assert rows.count() == 2
    first = rows.nth(0).locator("td")
    assert first.nth(0).inner_text() == "1"
    assert first.nth(1).inner_text() == "Jordan Kim"
    # Nobody's lead leg connected in this range: no first human, ranked by answered.
    assert first.nth(2).inner_text() == "— (0 of 3)"  # first human
    assert first.nth(4).inner_text() == "3"  # answered
    assert rows.nth(1).locator("td").nth(1).inner_text() == "Avery Lopez"
    # Each headline figure says how it changed, in words.
    assert "(" in page.locator("#change-received").inner_text()
    assert "higher is better" in page.locator("#change-answered").inner_text()


def test_a_manager_opens_a_call_from_the_coaching_queue(world, open_as):
    page = open_as(world.manager)
    page.click("text=Coaching")
    page.wait_for_url("**/coaching/")
    row = page.locator("#coaching-queue tbody tr")
    assert row.count() == 1
    assert "Low score" in row.inner_text()
    assert "2 of 10" in row.inner_text()
    row.locator("a").click()
    page.wait_for_url(f"**/calls/{world.agent_call.pk}/")
    page.fill("#id_notes", "Use the lead's name twice.")
    page.click("text=Save coaching")
    page.goto("/coaching/")
    assert "Nothing to coach" in page.locator("#coaching-queue").inner_text()
    assert "Not read yet" in page.locator("#coached").inner_text()


def test_the_agent_reads_coaching_from_their_page_and_the_badge_follows(world, open_as):
    coaching_save(call=world.agent_call, coach=world.manager, notes="Ask sooner.")
    page = open_as(world.agent)
    assert page.locator("h1").inner_text() == "My calls"
    assert page.locator("#unread-count").text_content().startswith("1")
    assert "Ask sooner." in page.locator("#unread-coaching").inner_text()
    page.goto("/calls/")  # the badge is on every page
    assert page.locator("#unread-count").text_content().startswith("1")
    page.goto("/me/")
    page.locator("#unread-coaching a").first.click()
    page.wait_for_url(f"**/calls/{world.agent_call.pk}/")
    page.click("text=Mark as read")
    assert page.locator("#unread-count").count() == 0
    page.goto("/me/")
    assert "Coaching to read: 0" in page.locator("#unread-coaching").inner_text()
    assert page.locator("svg.chart").count() == 2


def test_the_running_total_follows_the_categories_ticked(world, open_as):
    page = open_as(world.scorer)
    page.goto(reverse("pages:scoring-call", args=[world.agent_call.pk]))
    total = page.locator("#running-total output")
    assert total.inner_text() == "2"  # the saved score: categories 1 and 2
    assert "(saved)" in page.locator("#running-total").inner_text()
    page.keyboard.press("3")
    assert total.inner_text() == "3"
    assert "not saved yet" in page.locator("#running-total").inner_text()
    page.click("#id_cat1")
    assert total.inner_text() == "2"
    page.keyboard.press("1")
    page.keyboard.press("3")
    assert total.inner_text() == "2"
    assert "(saved)" in page.locator("#running-total").inner_text()
