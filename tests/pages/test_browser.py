"""The pages in a real browser (Chromium through Playwright) against a live server: sign in
as each role, score a call with the keyboard and read it back from /api/scoreddata, filter,
bookmark and export the call browser, coach a call and read it as its agent, and the 404s."""

from __future__ import annotations

import csv
import io
from itertools import pairwise

import pytest
from django.urls import reverse

from accounts.services import scored_data_key_issue
from scoring.models import Score

pytestmark = [pytest.mark.slow, pytest.mark.django_db(transaction=True)]


@pytest.mark.parametrize(
    ("role", "heading"),
    [
        ("agent", "My calls"),
        ("manager", "Speed to lead"),
        ("global_manager", "Speed to lead"),
        ("scorer", "Scoring"),
        ("staff", "Speed to lead"),
    ],
)
def test_each_role_signs_in_to_its_first_page(world, open_as, role, heading):
    page = open_as(world.users()[role])
    assert page.locator("h1").inner_text() == heading
    assert world.users()[role].get_full_name() in page.locator("header").inner_text()


def test_a_wrong_password_stays_on_the_sign_in_page(world, open_as):
    page = open_as(world.manager, password="wrong")
    assert page.locator("h1").inner_text() == "Sign in"
    assert "correct username and password" in page.content()


def test_a_scorer_scores_a_call_with_the_keyboard_and_the_api_returns_it(
    world, open_as
):
    page = open_as(world.scorer)
    page.get_by_role("button", name="Score next call").press("Enter")
    page.wait_for_url(f"**/scoring/calls/{world.other_agent_call.pk}/")
    assert "Space</kbd> play/pause" in page.content()
    for key in ("1", "3", "0", "w"):
        page.keyboard.press(key)
    assert page.is_checked("#id_cat1")
    assert page.is_checked("#id_cat10")
    assert page.is_checked("#id_wow")
    page.keyboard.press("3")  # toggles back off
    assert not page.is_checked("#id_cat3")
    page.select_option("#id_call_end", "Callback requested")
    page.keyboard.press("Escape")
    page.keyboard.press("s")  # speed 1x -> 1.5x
    assert page.eval_on_selector("#recording", "a => a.playbackRate") == 1.5
    page.keyboard.press("Control+Enter")  # save and next
    page.wait_for_url("**/scoring/")
    assert "The queue is empty" in page.content()

    key = scored_data_key_issue(account=world.north)
    answer = page.request.get(
        f"/api/scoreddata?apikey={key}&callId={world.other_agent_call.pk}"
    ).json()
    assert (answer["cat1"], answer["cat3"], answer["cat10"], answer["wow"]) == (
        "1",
        "0",
        "1",
        "1",
    )
    assert answer["callEnd"] == "Callback requested"
    assert answer["transcibedBy"] == "Sasha Scorer"


def test_an_error_keeps_what_the_scorer_typed(world, open_as):
    page = open_as(world.scorer)
    page.goto(reverse("pages:scoring-call", args=[world.other_agent_call.pk]))
    page.keyboard.press("2")
    page.fill("#id_notes", "Keep these notes.")
    page.fill("#id_first_name", "")
    page.eval_on_selector("#id_first_name", "e => e.removeAttribute('maxlength')")
    page.fill("#id_first_name", "x" * 46)
    page.keyboard.press("Control+Enter")
    page.wait_for_load_state()
    assert "at most 45 characters" in page.locator("#id_first_name-error").inner_text()
    assert page.is_checked("#id_cat2")
    assert page.input_value("#id_notes") == "Keep these notes."
    assert not Score.objects.filter(call=world.other_agent_call).exists()


def test_a_manager_filters_bookmarks_and_exports_the_calls(world, open_as, tmp_path):
    page = open_as(world.global_manager)
    page.goto("/calls/")
    assert page.locator("tbody tr").count() == 3
    page.select_option("#id_scored", "no")  # htmx reloads the table and the address
    page.wait_for_url("**/calls/?*scored=no*")
    page.wait_for_function("document.querySelectorAll('tbody tr').length === 2")
    page.fill("#id_q", "lee")
    page.keyboard.press("Enter")
    page.wait_for_url("**q=lee*")
    page.wait_for_function("document.querySelectorAll('tbody tr').length === 1")
    bookmark = page.url

    again = page.context.new_page()
    again.goto(bookmark)
    rows = again.locator("tbody tr")
    assert rows.count() == 1
    assert "Lee Other" in rows.inner_text()
    assert again.input_value("#id_q") == "lee"
    with again.expect_download() as download:
        again.click("text=Export CSV")
    text = tmp_path / "calls.csv"
    download.value.save_as(text)
    records = list(csv.DictReader(io.StringIO(text.read_text())))
    assert [r["id"] for r in records] == [str(world.other_agent_call.pk)]
    assert records[0]["firstName"] == "Lee"


def test_a_manager_coaches_and_the_agent_reads_it(world, open_as):
    manager = open_as(world.manager)
    manager.goto(reverse("pages:call-detail", args=[world.agent_call.pk]))
    manager.fill("#id_notes", "Great rapport; ask for the appointment sooner.")
    manager.click("text=Save coaching")
    assert "Coaching notes saved" in manager.content()

    agent = open_as(world.agent)
    agent.click(f"a[href='/calls/{world.agent_call.pk}/']")
    coaching = agent.locator("#coaching")
    assert "ask for the appointment sooner" in coaching.inner_text()
    assert "Morgan Reyes" in coaching.inner_text()
    agent.click("text=Mark as read")
    assert "read by the agent" in agent.locator("#coaching").inner_text()


def test_an_agent_cannot_open_another_agents_call(world, open_as):
    page = open_as(world.agent)
    response = page.goto(reverse("pages:call-detail", args=[world.other_agent_call.pk]))
    assert response.status == 404
    assert "Lee" not in page.content()


def test_a_user_of_one_organization_cannot_open_anothers_call(world, open_as):
    page = open_as(world.foreign_manager)
    response = page.goto(reverse("pages:call-detail", args=[world.agent_call.pk]))
    assert response.status == 404
    assert "Pat" not in page.content()
    listing = page.goto("/calls/")
    assert listing.status == 200
    assert "Buyer" not in page.content()


def test_clicking_a_transcript_line_plays_the_recording_from_that_line(world, open_as):
    from calls.models import AttemptOutcome, Leg
    from calls.recordings import recording_link
    from calls.services import call_transcription_save

    call = world.agent_call
    answered = call.attempts_log.get(leg=Leg.LEAD, outcome=AttemptOutcome.ANSWERED)
    call.recording_url = recording_link(answered.pk)  # the simulator's tone, 95 s
    call.save(update_fields=["recording_url"])
    call_transcription_save(
        call=call,
        turns=[
            {"side": "agent", "start": 0.5, "end": 4, "text": "Hi Pat."},
            {"side": "lead", "start": 4.5, "end": 9, "text": "Hello."},
            {"side": "agent", "start": 31.5, "end": 36, "text": "Thursday at two?"},
            {"side": "lead", "start": 40, "end": 44, "text": "Works for me."},
        ],
    )
    page = open_as(world.manager)
    page.goto(reverse("pages:call-detail", args=[call.pk]))
    third = page.locator(".transcript-line").nth(2)
    assert third.get_attribute("data-start") == "31.5"
    third.click()
    page.wait_for_function(
        "document.querySelectorAll('.transcript-line')[2].getAttribute('aria-current') === 'true'"
    )
    position = page.eval_on_selector("#recording", "a => a.currentTime")
    assert abs(position - 31.5) < 0.5
    assert "current" in (third.get_attribute("class") or "")
    assert page.locator(".transcript-line[aria-current]").count() == 1


@pytest.mark.parametrize("days", [1, 7, 30, 31, 365])
def test_the_leads_per_day_chart_fits_and_its_labels_do_not_overlap(
    world, open_as, days
):
    from datetime import timedelta

    from django.utils import timezone

    last = timezone.localdate()
    first = last - timedelta(days=days - 1)
    page = open_as(world.manager)
    page.set_viewport_size({"width": 1280, "height": 900})
    page.goto(f"/dashboard/?date_from={first}&date_to={last}")
    chart = page.locator('svg[aria-label="Leads received and answered per day"]')
    box = chart.bounding_box()
    section = chart.locator("xpath=..").bounding_box()
    assert box
    assert section
    assert box["width"] <= section["width"] + 0.5
    assert box["height"] < box["width"]  # the aspect is the chart's, not the page's
    assert chart.locator("rect.bar.alt").count() == days
    widths = chart.locator("rect.bar.alt").evaluate_all(
        "bars => bars.map(b => b.getBoundingClientRect().width)"
    )
    assert max(widths) <= 60, widths
    labels = chart.locator("text.label").evaluate_all(
        "texts => texts.map(t => { const r = t.getBoundingClientRect();"
        " return [r.left, r.right, r.top, r.bottom]; })"
    )
    assert 1 <= len(labels) <= 12
    for (_, right, _, _), (left, _, _, _) in pairwise(labels):
        assert right <= left, labels  # left to right, apart
    # The value axis' labels: bottom to top, apart, left of the bars.
    ticks = chart.locator("text.tick").evaluate_all(
        "texts => texts.map(t => { const r = t.getBoundingClientRect();"
        " return [r.left, r.right, r.top, r.bottom]; })"
    )
    assert len(ticks) >= 2
    for (_, _, top, _), (_, _, _, bottom) in pairwise(ticks):
        assert bottom <= top, ticks
    bars_left = chart.locator("rect.bar.alt").first.bounding_box()
    assert bars_left
    assert all(right <= bars_left["x"] for _, right, _, _ in ticks), ticks
    for left, right, top, bottom in labels + ticks:
        assert box["x"] <= left, (labels, ticks)
        assert right <= box["x"] + box["width"] + 0.5, (labels, ticks)
        assert box["y"] <= top, (labels, ticks)
        assert bottom <= box["y"] + box["height"] + 0.5, (labels, ticks)


def test_the_call_browsers_names_stay_on_one_line_at_1280_px(world, open_as):
    from tests.scoring.factories import CallFactory

    CallFactory(
        account=world.north,
        agent=world.agent,
        first_name="Maximiliana-Josephine",
        last_name="Vandenberghe-Oppenheimer",
    )
    page = open_as(world.global_manager)
    page.set_viewport_size({"width": 1280, "height": 900})
    page.goto("/calls/")
    lines = page.locator("tbody td.name").evaluate_all(
        "cells => cells.map(c => { const r = document.createRange();"
        " r.selectNodeContents(c); return new Set([...r.getClientRects()]"
        ".map(x => Math.round(x.top))).size; })"
    )
    # Each cell's text on one line: its line boxes share one top.
    assert lines
    assert all(n == 1 for n in lines), lines
