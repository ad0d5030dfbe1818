"""The carrier's pace (core/pace.py): the bucket itself, on the test settings' Redis, and
its figures on support's overview. The pace through real workers: tests/calls/test_fairness.py."""

import uuid

import lxml.html
import pytest
from django.test import override_settings
from django.urls import reverse

from core import pace
from tests.admin_pages import sign_in_support


@pytest.fixture
def provider():
    """A provider account of this test's own: no other test's dials count against it."""
    return f"test-{uuid.uuid4().hex[:8]}"


@override_settings(TELEPHONY_CALLS_PER_SECOND=0)
def test_no_pace_configured_never_waits(provider):
    assert [
        pace.take(provider=provider, account_id=1, first=True) for _ in range(50)
    ] == [0.0] * 50


@override_settings(TELEPHONY_CALLS_PER_SECOND=3)
def test_a_burst_of_one_seconds_rate_then_a_wait_for_the_next_token(provider):
    taken = [pace.take(provider=provider, account_id=1, first=True) for _ in range(3)]
    assert taken == [0.0, 0.0, 0.0]
    wait = pace.take(provider=provider, account_id=1, first=True)
    assert 0 < wait <= pace.WINDOW_SECONDS
    # Another account waits too: the bucket is the provider account's, not the dealer's.
    assert pace.take(provider=provider, account_id=2, first=True) > 0


def _window_passes(provider):
    """Wait (on Redis's clock, as the bucket does) until the last window's dials are gone."""
    import time

    time.sleep(pace.WINDOW_SECONDS)
    assert pace.status(provider=provider).dialed == 0


@override_settings(TELEPHONY_CALLS_PER_SECOND=2)
def test_a_token_freed_goes_to_the_dealer_served_least_recently(provider):
    busy, quiet = 1, 2
    assert pace.take(provider=provider, account_id=busy, first=True) == 0.0
    assert pace.take(provider=provider, account_id=busy, first=True) == 0.0
    # Both wait now: the busy dealer with many dials, the quiet one with its first.
    for _ in range(5):
        assert pace.take(provider=provider, account_id=busy, first=True) > 0
    assert pace.take(provider=provider, account_id=quiet, first=True) > 0
    assert pace.status(provider=provider).waiting == 2
    _window_passes(provider)

    # The busy dealer asks first and again: one token is left for the quiet one.
    assert pace.take(provider=provider, account_id=busy, first=True) == 0.0
    assert pace.take(provider=provider, account_id=busy, first=True) > 0
    assert pace.take(provider=provider, account_id=quiet, first=True) == 0.0


@override_settings(TELEPHONY_CALLS_PER_SECOND=1)
def test_first_dials_go_before_retries(provider):
    assert pace.take(provider=provider, account_id=1, first=True) == 0.0
    assert pace.take(provider=provider, account_id=2, first=True) > 0  # waits
    _window_passes(provider)

    # Account 3's retry asks first, and is never served before: the first dial still wins.
    assert pace.take(provider=provider, account_id=3, first=False) > 0
    assert pace.take(provider=provider, account_id=2, first=True) == 0.0


def test_the_local_bucket_of_the_embedded_default_keeps_the_rate():
    bucket = pace.LocalBucket()
    assert [bucket.take(2) for _ in range(2)] == [0.0, 0.0]
    assert 0 < bucket.take(2) <= pace.WINDOW_SECONDS
    assert bucket.status(2)[0] == 2


@pytest.mark.django_db
@override_settings(TELEPHONY_CALLS_PER_SECOND=4, TELEPHONY_PROVIDER="simulator")
def test_overview_shows_the_pace_and_the_wait(client):
    sign_in_support(client)
    for _ in range(4):
        pace.take(provider="simulator", account_id=7, first=True)
    pace.take(provider="simulator", account_id=8, first=True)  # waits

    page = lxml.html.fromstring(client.get(reverse("admin:index")).content.decode())
    table = page.get_element_by_id("overview-pace")
    rows = {
        row.find("th").text_content().strip(): row.find("td").text_content().strip()
        for row in table.iter("tr")
    }
    assert rows["Calls a second allowed"] == "4"
    assert rows["Calls placed in the last second"] == "4"
    assert rows["Dealers waiting for the carrier"] == "1"
    assert 0 < float(rows["Wait for the next call (seconds)"]) <= pace.WINDOW_SECONDS


@pytest.mark.django_db
@override_settings(TELEPHONY_CALLS_PER_SECOND=0)
def test_overview_says_when_no_pace_is_set(client):
    sign_in_support(client)
    page = lxml.html.fromstring(client.get(reverse("admin:index")).content.decode())
    assert "No pace set" in page.get_element_by_id("overview-pace").text_content()
