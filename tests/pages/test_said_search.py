"""The call browser's "Said on the call" reads like a search box: every word must be said,
in any order; "a phrase" in quotes only with its words together and in order; ``or``
between alternatives; ``-`` leaves out. PostgreSQL's full-text search (websearch) and the
embedded default's (SQLite: no full-text search) agree on these; ``make test`` runs this
module on both databases, and each run also asks the page as it searches without
full-text search."""

from __future__ import annotations

import pytest
from django.db import connection
from django.test import TestCase
from django.urls import reverse

from calls.services import call_transcription_save
from tests.scoring.factories import CallFactory

pytestmark = pytest.mark.django_db

SAID = {
    "Drive": "Can I book a test drive on Saturday?",
    "Apart": "I drive to work, and the test went fine.",
    "Price": "Just send me the best price.",
}


@pytest.fixture(params=["database", "without full-text search"])
def said_calls(request, world, monkeypatch):
    """Three transcribed calls at North; searched by the database in use, or as on a
    database without full-text search (SQLite's way, on whichever database runs)."""
    for last_name, text in SAID.items():
        call = CallFactory(account=world.north, last_name=last_name)
        with TestCase.captureOnCommitCallbacks(execute=True):
            call_transcription_save(
                call=call,
                turns=[{"side": "lead", "start": 1, "end": 4, "text": text}],
            )
    if request.param == "without full-text search":
        monkeypatch.setattr(connection, "vendor", "sqlite")


@pytest.fixture
def found(world, signed_in, said_calls):
    """``found(text)``: the last names of the calls the call browser lists for ``text``."""
    client = signed_in(world.manager)

    def search(text: str) -> list[str]:
        response = client.get(reverse("pages:call-list"), {"said": text})
        assert response.status_code == 200
        return sorted(call.last_name for call in response.context["calls"])

    return search


def test_a_quoted_phrase_finds_its_words_together_and_in_order(found):
    assert found('"test drive"') == ["Drive"]
    assert found('"TEST Drive"') == ["Drive"]
    assert found('"drive test"') == []
    assert found('"test drive" saturday') == ["Drive"]
    assert found('"test drive') == ["Drive"]  # a quote left open runs to the end


def test_words_without_quotes_must_all_be_said_in_any_order(found):
    assert found("test drive") == ["Apart", "Drive"]
    assert found("drive test") == ["Apart", "Drive"]
    assert found("test drive price") == []


def test_or_joins_alternatives_and_minus_leaves_out(found):
    assert found('"test drive" or price') == ["Drive", "Price"]
    assert found('drive -"test drive"') == ["Apart"]
    assert found("test -saturday") == ["Apart"]


def test_the_search_box_says_how_it_reads(world, signed_in):
    body = signed_in(world.manager).get(reverse("pages:call-list")).content.decode()
    assert 'placeholder="e.g. &quot;test drive&quot;"' in body
    assert (
        'title="Every word must be said; &quot;words in quotes&quot; as a phrase, in '
        'that order; or between alternatives; -word leaves out the calls that say it."'
    ) in body
