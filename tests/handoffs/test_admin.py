"""Support sets an account's handoff limit on the account's page, and reads every
handoff (read only) in the admin."""

from __future__ import annotations

import pytest
from django.urls import reverse

from handoffs.models import Handoff, HandoffKind, HandoffSettings
from handoffs.services import handoff_open, limits_of
from tests.accounts.factories import AccountFactory
from tests.admin_pages import form_data, text_of, typed

pytestmark = pytest.mark.django_db


def account_url(account) -> str:
    return reverse("admin:accounts_account_change", args=[account.pk])


def test_the_limit_is_set_on_the_accounts_page(admin_client):
    client = admin_client
    account = AccountFactory()
    assert limits_of([account.pk]) == {account.pk: 15}  # the default, without a row
    data = typed(
        form_data(client.get(account_url(account)), "account_form"),
        {"handoff_settings-0-limit_minutes": "5"},
    )

    response = client.post(account_url(account), data)

    assert response.status_code == 302
    assert HandoffSettings.objects.get().limit_minutes == 5
    assert limits_of([account.pk]) == {account.pk: 5}


def test_handoffs_are_listed_and_read_only(admin_client):
    client = admin_client
    account = AccountFactory(name="Demo Motors North")
    handoff_open(
        account_id=account.pk,
        phone="+13035550147",
        kind=HandoffKind.OPT_OUT,
        opened_by="text 12",
    )

    page = client.get(reverse("admin:handoffs_handoff_changelist"))

    assert page.status_code == 200
    assert "Demo Motors North" in text_of(page)
    assert "text 12" in text_of(page)
    handoff = Handoff.objects.get()
    form = client.get(reverse("admin:handoffs_handoff_change", args=[handoff.pk]))
    assert 'name="phone"' not in form.content.decode()  # nothing to edit
