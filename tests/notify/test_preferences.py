"""A manager's own alert subscriptions, on the alerts page: what they are told of, per
account they manage, and how; never another organization's accounts."""

from __future__ import annotations

import pytest
from django.urls import reverse

from notify.alerts import subscribers
from notify.models import AlertKind, AlertSubscription
from tests.accounts.factories import AccountFactory
from tests.scoring.factories import in_role
from tests.users.factories import agent

pytestmark = pytest.mark.django_db

URL = "/alerts/"


def test_a_manager_sees_the_defaults_and_saves_their_own_choices(client):
    account = AccountFactory(name="Front Range Toyota")
    boss = in_role("Manager", accounts=[account], email="boss@frontrange.example")
    client.force_login(boss)

    page = client.get(URL).content.decode()
    assert "Front Range Toyota" in page
    email = f'name="{account.pk}-{AlertKind.NOT_REACHED}-by_email"'
    assert f"{email} aria-label" in page
    assert page.count(" checked>") == len(AlertKind.choices)  # every alert by e-mail

    response = client.post(
        URL,
        {
            f"{account.pk}-{AlertKind.NOT_REACHED}-by_text": "on",
            f"{account.pk}-{AlertKind.NO_AGENT}-by_email": "on",
            f"{account.pk}-{AlertKind.NO_AGENT}-outside_hours": "on",
        },
    )
    assert response.status_code == 302
    rows = {
        row.kind: (row.by_email, row.by_text, row.outside_hours)
        for row in AlertSubscription.objects.filter(user=boss)
    }
    assert rows[AlertKind.NOT_REACHED] == (False, True, False)
    assert rows[AlertKind.NO_AGENT] == (True, False, True)
    assert rows[AlertKind.WAITING] == (False, False, False)
    assert [t.user for t in subscribers(account, AlertKind.WAITING)] == []
    assert [
        (t.user, t.by_email, t.outside_hours)
        for t in subscribers(account, AlertKind.NO_AGENT)
    ] == [(boss, True, True)]


def test_a_second_save_changes_the_rows_the_first_wrote(client):
    account = AccountFactory()
    boss = in_role("Manager", accounts=[account])
    other = in_role("Manager", accounts=[account])
    client.force_login(other)
    client.post(URL, {f"{account.pk}-{AlertKind.WAITING}-by_text": "on"})
    client.force_login(boss)
    client.post(URL, {f"{account.pk}-{AlertKind.WAITING}-by_email": "on"})

    client.post(URL, {f"{account.pk}-{AlertKind.WAITING}-outside_hours": "on"})

    mine = AlertSubscription.objects.filter(user=boss)
    assert mine.count() == len(AlertKind.choices)  # changed in place, none added
    waiting = mine.get(kind=AlertKind.WAITING)
    assert (waiting.by_email, waiting.by_text, waiting.outside_hours) == (
        False,
        False,
        True,
    )
    theirs = AlertSubscription.objects.get(user=other, kind=AlertKind.WAITING)
    assert (theirs.by_email, theirs.by_text) == (False, True)  # left alone


def test_another_organizations_account_cannot_be_subscribed_to(client):
    ours = AccountFactory()
    theirs = AccountFactory(name="Elsewhere Motors")
    boss = in_role("Manager", accounts=[ours], email="boss@frontrange.example")
    client.force_login(boss)

    assert "Elsewhere Motors" not in client.get(URL).content.decode()
    client.post(URL, {f"{theirs.pk}-{AlertKind.NOT_REACHED}-by_email": "on"})
    assert not AlertSubscription.objects.filter(account=theirs).exists()


def test_a_global_manager_may_subscribe_to_each_account_of_their_organization(client):
    first = AccountFactory(name="North")
    second = AccountFactory(name="South", organization=first.organization)
    group = in_role("Global Manager", organizations=[first.organization])
    client.force_login(group)
    page = client.get(URL).content.decode()
    assert "North" in page
    assert "South" in page
    assert " checked>" not in page  # told of nothing until they choose

    client.post(URL, {f"{second.pk}-{AlertKind.WAITING}-by_email": "on"})
    assert [t.user for t in subscribers(second, AlertKind.WAITING)] == [group]
    assert [t.user for t in subscribers(first, AlertKind.WAITING)] == []


def test_an_agent_has_no_alerts_to_choose(client):
    account = AccountFactory()
    client.force_login(agent(account, phone="+13035550140"))
    assert "You manage no account" in client.get(URL).content.decode()


def test_signed_out_the_page_asks_to_sign_in(client):
    response = client.get(URL)
    assert response.status_code == 302
    assert response["Location"] == f"{reverse('auth:login')}?next={URL}"
