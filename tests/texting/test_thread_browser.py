"""The call page's thread in a real browser (Debian's Chromium through Playwright) against a
live server: a reply appears in the thread without a page load (htmx), and the same form
works with JavaScript off (posted, redirected back, listed). Nothing is sent: the hand-over
to the broker is recorded instead."""

from __future__ import annotations

import pytest
from django.urls import reverse

from tests.handover import hold_hand_overs
from tests.pages.conftest import PASSWORD, make_world
from tests.texting.factories import text_in_thread, texting_on
from texting.models import Purpose, Text

pytestmark = [pytest.mark.slow, pytest.mark.django_db(transaction=True)]


@pytest.fixture
def world(db):
    world = make_world()
    texting_on(world.north)
    text_in_thread(
        world.north,
        world.agent_call.phone,
        at=world.agent_call.received_at,
        body="Hi Pat, we just tried to call you.",
    )
    return world


@pytest.fixture
def dispatched(monkeypatch) -> list[int]:
    ids: list[int] = []
    hold_hand_overs(
        monkeypatch,
        "texting.tasks.text_send_task",
        then=lambda text_id, countdown: ids.append(text_id),
    )
    return ids


def test_a_reply_appears_in_the_thread_without_a_page_load(
    world,
    open_as,
    dispatched,
):
    page = open_as(world.agent)
    page.goto(reverse("pages:call-detail", args=[world.agent_call.pk]))
    thread = page.locator("#thread")
    assert "Hi Pat, we just tried to call you." in thread.inner_text()
    page.evaluate("window.notReloaded = true")
    page.fill("#id_body", "Does 4 pm work for a test drive?")
    page.get_by_role("button", name="Send text").click()
    page.locator("#thread", has_text="Text sent.").wait_for()
    assert "Sent by Avery Lopez" in thread.inner_text()
    assert "Does 4 pm work for a test drive?" in thread.inner_text()
    assert page.evaluate("window.notReloaded") is True  # the card alone was swapped
    assert page.input_value("#id_body") == ""
    text = Text.objects.get(purpose=Purpose.REPLY)
    assert (text.sent_by, text.body) == (
        world.agent,
        "Does 4 pm work for a test drive?",
    )
    assert dispatched == [text.pk]


def test_a_reply_works_with_javascript_off(
    world,
    browser,
    live_server,
    dispatched,
):
    context = browser.new_context(base_url=live_server.url, java_script_enabled=False)
    try:
        page = context.new_page()
        page.goto("/login/")
        page.fill("#id_username", world.manager.username)
        page.fill("#id_password", PASSWORD)
        page.click("button[type=submit]")
        call_page = reverse("pages:call-detail", args=[world.agent_call.pk])
        page.goto(call_page)
        page.fill("#id_body", "We have it in blue too.")
        with page.expect_navigation():  # a full page load: posted, then redirected
            page.get_by_role("button", name="Send text").click()
        assert page.url == f"{live_server.url}{call_page}"
        assert "Text sent." in page.locator(".messages").inner_text()
        thread = page.locator("#thread").inner_text()
        assert "Sent by Morgan Reyes" in thread
        assert "We have it in blue too." in thread
    finally:
        context.close()
    assert dispatched == [Text.objects.get(purpose=Purpose.REPLY).pk]
