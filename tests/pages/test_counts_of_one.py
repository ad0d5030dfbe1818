"""One of a thing reads in the singular on the pages: "1 call", "1 pt", "1 point"; two
and none in the plural."""

from __future__ import annotations

import pytest
from django.urls import reverse

from scoring.services import score_save
from tests.scoring.factories import CallFactory

pytestmark = pytest.mark.django_db


@pytest.fixture
def one_point(world):
    """A call of North scored with one category applied: one point."""
    call = CallFactory(account=world.north, first_name="Uma", last_name="Single")
    score_save(call=call, scorer=world.scorer, values={"cat1": True})
    return call


def test_the_call_browser_lists_1_call_of_1_pt(world, signed_in, one_point):
    client = signed_in(world.manager)
    body = client.get(reverse("pages:call-list"), {"q": "Single"}).content.decode()
    assert '<strong id="count">1 call</strong>' in body
    assert "<td>1 pt</td>" in body
    assert "1 pts" not in body
    # Two calls, and two points: plural.
    body = client.get(reverse("pages:call-list"), {"q": "Buyer"}).content.decode()
    assert '<strong id="count">1 call</strong>' in body
    assert "<td>2 pts " in body  # then its "wow" badge
    body = client.get(reverse("pages:call-list"), {"q": "nobody"}).content.decode()
    assert '<strong id="count">0 calls</strong>' in body


def test_the_call_page_of_a_one_point_call_says_1_point(world, signed_in, one_point):
    body = (
        signed_in(world.manager)
        .get(reverse("pages:call-detail", args=[one_point.pk]))
        .content.decode()
    )
    assert "<p><strong>1 point</strong> · scored by" in body
    assert "1 points" not in body
