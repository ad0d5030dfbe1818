"""One number, one organization (issue 36 part 4): a caller ID or sending number that an
account of another organization calls or texts from is refused, in both directions, by
the admin's forms (naming the other accounts: support's eyes only) and by the services."""

from __future__ import annotations

import pytest
from django.urls import reverse

from accounts.models import Account
from accounts.services import NumberTakenError, account_create, account_update
from tests.accounts.factories import AccountFactory, OrganizationFactory
from tests.admin_pages import form_data, typed
from texting.models import TextingSettings

pytestmark = pytest.mark.django_db

NUMBER = "+13035550188"


@pytest.fixture
def plains():
    """Another organization's dealer, calling from +13085550100 and texting from NUMBER."""
    account = AccountFactory(
        organization=OrganizationFactory(name="Plains Auto Group"),
        name="Plains Ford",
        caller_id="+13085550100",
    )
    TextingSettings.objects.create(account=account, enabled=True, sender=NUMBER)
    return account


@pytest.fixture
def front_range():
    return AccountFactory(
        organization=OrganizationFactory(name="Front Range Motors"),
        caller_id="+13035550150",
    )


def change_page_post(client, account: Account, **fields: str):
    url = reverse("admin:accounts_account_change", args=[account.pk])
    page = client.get(url)
    assert page.status_code == 200
    return client.post(url, typed(form_data(page, "account_form"), fields))


def test_the_account_page_refuses_a_caller_id_another_organization_texts_from(
    admin_client, front_range, plains
):
    # Typed as a national number: read in the account's country, then compared.
    response = change_page_post(admin_client, front_range, caller_id="(303) 555-0188")

    assert response.status_code == 200
    assert response.context["adminform"].form.errors["caller_id"] == [
        f"{NUMBER} is already a number of another organization. A number an account "
        "calls or texts from belongs to one organization, so that a lead's reply or "
        "STOP reaches it and no other. Used by: Plains Auto Group / Plains Ford."
    ]
    front_range.refresh_from_db()
    assert front_range.caller_id == "+13035550150"


def test_the_add_page_refuses_a_caller_id_another_organization_calls_from(
    admin_client, front_range, plains
):
    page = admin_client.get(reverse("admin:accounts_account_add"))
    data = typed(
        form_data(page, "account_form"),
        {
            "organization": str(front_range.organization_id),
            "name": "Front Range Kia",
            "caller_id": "+13085550100",
        },
    )

    response = admin_client.post(reverse("admin:accounts_account_add"), data)

    assert response.status_code == 200
    (error,) = response.context["adminform"].form.errors["caller_id"]
    assert error.startswith("+13085550100 is already a number of another organization.")
    assert error.endswith("Used by: Plains Auto Group / Plains Ford.")
    assert not Account.objects.filter(name="Front Range Kia").exists()


def test_the_texting_settings_refuse_a_sending_number_another_organization_calls_from(
    admin_client, front_range, plains
):
    url = reverse("admin:texting_textingsettings_add")
    page = admin_client.get(url)
    data = typed(
        form_data(page, "textingsettings_form"),
        {"account": str(front_range.pk), "sender": "+13085550100"},
    )

    response = admin_client.post(url, data)

    assert response.status_code == 200
    (error,) = response.context["adminform"].form.errors["sender"]
    assert error.startswith("+13085550100 is already a number of another organization.")
    assert error.endswith("Used by: Plains Auto Group / Plains Ford.")
    assert not TextingSettings.objects.filter(account=front_range).exists()


def test_accounts_of_one_organization_may_share_a_number(admin_client, plains):
    sister = AccountFactory(organization=plains.organization, caller_id="+13085550101")

    response = change_page_post(admin_client, sister, caller_id=NUMBER)

    assert response.status_code == 302
    sister.refresh_from_db()
    assert sister.caller_id == NUMBER


def test_a_conflict_stored_before_the_rule_still_lets_support_edit_the_account(
    admin_client, plains
):
    stored = AccountFactory(caller_id=NUMBER)  # another organization, before the rule

    response = change_page_post(admin_client, stored, city="Boulder")

    assert response.status_code == 302
    stored.refresh_from_db()
    assert (stored.city, stored.caller_id) == ("Boulder", NUMBER)


def test_the_services_refuse_a_number_of_another_organization(front_range, plains):
    with pytest.raises(NumberTakenError) as taken:
        account_update(account=front_range, data={"caller_id": NUMBER})
    assert taken.value.holders == [plains]
    front_range.refresh_from_db()
    assert front_range.caller_id == "+13035550150"

    with pytest.raises(NumberTakenError):
        account_create(
            account=Account(
                organization=front_range.organization,
                name="Front Range Kia",
                caller_id="+13085550100",  # Plains' caller ID
            )
        )
    assert not Account.objects.filter(name="Front Range Kia").exists()

    # Within one organization a number is shared freely.
    sister = account_create(
        account=Account(
            organization=plains.organization, name="Plains Kia", caller_id=NUMBER
        )
    )
    assert sister.caller_id == NUMBER
    account_update(account=front_range, data={"caller_id": "+13035550151"})
    front_range.refresh_from_db()
    assert front_range.caller_id == "+13035550151"
