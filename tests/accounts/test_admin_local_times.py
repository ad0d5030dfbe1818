"""Support reads a dealer's times as the dealer's: schedule hours are plain local times
(no clock widget telling support how far they are from the server), and a list mixing
dealers' timezones says so in its column."""

import lxml.html
import pytest
from django.urls import reverse

from tests.accounts.factories import AccountFactory
from tests.admin_pages import sign_in_support
from tests.scoring.factories import CallFactory

pytestmark = pytest.mark.django_db


def test_schedule_hours_are_plain_local_times(client):
    sign_in_support(client, tz="America/New_York")
    account = AccountFactory(timezone="America/Denver")
    page = client.get(reverse("admin:accounts_account_change", args=[account.pk]))
    assert page.status_code == 200
    document = lxml.html.fromstring(page.content.decode())
    times = document.xpath("//input[contains(@name, 'start_time')]")
    assert times, "the schedule rows are on the page"
    # The admin's clock widget (class vTimeField) is what adds "You are N hours ahead of
    # server time"; the schedule's boxes are plain HH:MM inputs.
    assert not [t for t in times if "vTimeField" in (t.get("class") or "")]
    assert all(t.get("placeholder") == "HH:MM" for t in times)


def test_the_call_list_says_its_times_are_each_dealers(client):
    sign_in_support(client)
    CallFactory(account=AccountFactory(timezone="America/Denver"))
    CallFactory(account=AccountFactory(timezone="America/New_York"))
    page = client.get(reverse("admin:calls_call_changelist"))
    assert page.status_code == 200
    document = lxml.html.fromstring(page.content.decode())
    headers = [
        " ".join(h.text_content().split()).lower()
        for h in document.xpath("//table[@id='result_list']//thead//th")
    ]
    assert any(h.endswith("received (dealer's time)") for h in headers), headers
