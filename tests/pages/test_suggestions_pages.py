"""Suggestions through the pages: the workspace pre-ticks what the transcript suggests on an
unscored call (marked, with its line), saving keeps which suggestions the scorer accepted;
the call page lists the transcript line by line; the call browser searches what was said
and lists the calls whose suggestions wait for a scorer, each tenant its own."""

from __future__ import annotations

import re

import pytest
from django.test import TestCase
from django.urls import reverse

from calls.services import call_transcription_save
from insights.models import Transcription, TranscriptionStatus
from scoring.models import CallSuggestions, Score
from tests.scoring.factories import CallFactory

pytestmark = pytest.mark.django_db

TURNS = [
    {
        "side": "agent",
        "start": 0.5,
        "end": 4,
        "text": "Hi Lee, this is Avery from North Motors.",
    },
    {
        "side": "lead",
        "start": 4.5,
        "end": 9,
        "text": "Hello. Please call me back after lunch.",
    },
    {
        "side": "agent",
        "start": 12,
        "end": 16,
        "text": "Sure. Are you trading in your current car?",
    },
    {"side": "lead", "start": 17, "end": 20, "text": "Maybe, a 2016 Honda Civic."},
]


def transcription_saved(**kwargs) -> None:
    """Save a transcription as the pipeline does, and run what its commit hands over
    (the suggestions, made by their own task: core.outbox)."""
    with TestCase.captureOnCommitCallbacks(execute=True):
        call_transcription_save(**kwargs)


@pytest.fixture
def transcribed(world):
    call = world.other_agent_call
    transcription_saved(call=call, turns=TURNS, summary="Lee wants a callback.")
    call.refresh_from_db()
    return call


def _data(form) -> dict:
    """What the browser posts for the form as shown."""
    data = {}
    for name in form.fields:
        value = form[name].value()
        if isinstance(value, bool) or name.startswith("cat") or name == "wow":
            if value:
                data[name] = "on"
        elif value:
            data[name] = value
    return data


def test_the_workspace_pre_ticks_suggestions_marked_with_their_line(
    world, signed_in, transcribed
):
    response = signed_in(world.scorer).get(
        reverse("pages:scoring-call", args=[transcribed.pk])
    )
    assert response.status_code == 200
    body = response.content.decode()
    form = response.context["form"]
    assert (form["cat1"].value(), form["cat2"].value(), form["cat4"].value()) == (
        True,
        True,
        True,
    )
    assert form["cat3"].value() is None
    assert form["call_end"].value() == "Callback requested"
    assert (form["current_make"].value(), form["current_year"].value()) == (
        "Honda",
        "2016",
    )
    found = re.search(r'name="cat1"[^>]*>.*?</li>', body, re.S)
    assert found is not None, body
    greeted = found.group(0)
    assert "checked" in greeted
    assert '<span class="badge suggested"' in greeted
    assert (
        "Jordan Kim (00:00-00:04): Hi Lee, this is Avery from North Motors." in greeted
    )
    found = re.search(r'name="cat3"[^>]*>.*?</li>', body, re.S)
    assert found is not None, body
    assert 'class="badge suggested"' not in found.group(0)
    assert "Lee Other (00:04-00:09): Hello. Please call me back after lunch." in body


def test_saving_records_the_suggestions_kept_and_not_those_changed(
    world, signed_in, transcribed
):
    client = signed_in(world.scorer)
    url = reverse("pages:scoring-call", args=[transcribed.pk])
    data = _data(client.get(url).context["form"])
    del data["cat2"]  # the scorer disagrees with one suggestion
    data["current_year"] = "2017"  # and corrects another
    data["save"] = "1"
    response = client.post(url, data)
    assert response.status_code == 302, response.context["form"].errors
    score = Score.objects.get(call=transcribed)
    assert (score.cat1, score.cat2, score.call_end) == (
        True,
        False,
        "Callback requested",
    )
    assert score.accepted_suggestions == [
        "call_end",
        "current_make",
        "current_model",
        "cat1",
        "cat4",
    ]


def test_a_scored_call_starts_from_its_score_not_from_suggestions(world, signed_in):
    call = world.agent_call  # scored with cat1, cat2 and "Appointment set"
    transcription_saved(call=call, turns=TURNS)
    assert CallSuggestions.objects.get(call=call).members["call_end"]["value"] == (
        "Callback requested"
    )
    response = signed_in(world.scorer).get(
        reverse("pages:scoring-call", args=[call.pk])
    )
    assert response.context["form"]["call_end"].value() == "Appointment set"
    assert 'class="badge suggested"' not in response.content.decode()


def test_the_call_page_lists_the_transcript_lines_with_their_start(
    world, signed_in, transcribed
):
    response = signed_in(world.manager).get(
        reverse("pages:call-detail", args=[transcribed.pk])
    )
    body = response.content.decode()
    starts = re.findall(
        r'<button type="button" class="transcript-line[^"]*" data-start="([^"]+)"', body
    )
    assert starts == ["0.5", "4.5", "12", "17"]
    assert "<strong>Summary:</strong> Lee wants a callback." in body
    assert '<span class="said">Maybe, a 2016 Honda Civic.</span>' in body
    assert "js/transcript.js" in body


def test_each_summary_sentence_shows_the_lines_it_came_from_on_hover(
    world, signed_in, transcribed
):
    Transcription.objects.create(
        call=transcribed,
        status=TranscriptionStatus.DONE,
        summary_evidence=[{"sentence": "Lee wants a callback.", "lines": [1]}],
    )
    name = transcribed.first_name + " " + transcribed.last_name
    response = signed_in(world.manager).get(
        reverse("pages:call-detail", args=[transcribed.pk])
    )
    body = response.content.decode()
    assert (
        '<span class="summary-sentence" title="Line 2 (00:04-00:09) '
        f'{name}: Hello. Please call me back after lunch.">Lee wants a callback.</span>'
    ) in body

    # A summary a person changed no longer claims the lines of the one written.
    transcribed.summary = "Lee wants a call after lunch."
    transcribed.save(update_fields=["summary"])
    body = (
        signed_in(world.manager)
        .get(reverse("pages:call-detail", args=[transcribed.pk]))
        .content.decode()
    )
    assert "<strong>Summary:</strong> Lee wants a call after lunch." in body
    assert "summary-sentence" not in body


@pytest.fixture
def foreign_transcribed(world):
    transcription_saved(call=world.foreign_call, turns=TURNS)


def _listed(client, **params) -> list[str]:
    response = client.get(reverse("pages:call-list"), params)
    assert response.status_code == 200
    return [call.last_name for call in response.context["calls"]]


def test_the_call_browser_finds_a_call_by_what_was_said_in_its_own_accounts_only(
    world, signed_in, transcribed, foreign_transcribed
):
    manager = signed_in(world.global_manager)
    assert _listed(manager, said="honda") == ["Other"]
    assert _listed(manager, said="trade") == ["Other"]  # stemmed: "trading"
    assert _listed(manager, said="civic lunch") == ["Other"]
    assert _listed(manager, said="civic camry") == []
    foreign = signed_in(world.foreign_manager)
    assert _listed(foreign, said="honda") == ["Foreign"]


def test_without_postgresql_the_said_search_matches_every_word(
    world, signed_in, transcribed, foreign_transcribed, monkeypatch
):
    """The embedded default (SQLite) has no full-text search: each word must appear in the
    transcript (no stemming), still in the caller's own accounts only."""
    from django.db import connection

    monkeypatch.setattr(connection, "vendor", "sqlite")
    manager = signed_in(world.global_manager)
    assert _listed(manager, said="honda") == ["Other"]
    assert _listed(manager, said="civic lunch") == ["Other"]
    assert _listed(manager, said="civic camry") == []
    assert _listed(signed_in(world.foreign_manager), said="honda") == ["Foreign"]


def test_suggested_but_not_confirmed_lists_unscored_calls_with_suggestions(
    world, signed_in, transcribed, foreign_transcribed
):
    transcription_saved(call=world.agent_call, turns=TURNS)  # scored already
    CallFactory(account=world.north, last_name="Silent")
    manager = signed_in(world.global_manager)
    assert _listed(manager, suggested="unconfirmed") == ["Other"]
    assert _listed(signed_in(world.foreign_manager), suggested="unconfirmed") == [
        "Foreign"
    ]


def test_the_said_search_reads_the_full_text_index(world):
    from django.db import connection

    from calls.models import Call
    from pages.filters import CallFilter

    said = CallFilter(
        {"said": "honda civic"}, queryset=Call.objects.all(), user=world.staff
    ).qs
    with connection.cursor() as cursor:
        cursor.execute("SET LOCAL enable_seqscan = off")  # a handful of rows otherwise
        plan = said.explain()
    assert "calls_call_transcription_fts" in plan
