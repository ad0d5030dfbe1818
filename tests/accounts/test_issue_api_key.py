import re
from io import StringIO

import pytest
from django.core.management import CommandError, call_command

from accounts.models import ApiCredential, ApiKey
from accounts.selectors import account_for_scored_data_key, api_credential_for_key
from tests.accounts.factories import (
    AccountFactory,
    OrganizationFactory,
    issue_credential,
    issue_scored_data_key,
)

pytestmark = pytest.mark.django_db


def run(*args: str) -> tuple[str, str]:
    out, err = StringIO(), StringIO()
    call_command("issue_api_key", *args, stdout=out, stderr=err)
    return out.getvalue(), err.getvalue()


def printed(output: str, label: str) -> str:
    match = re.search(rf"^{label}: (\S+)$", output, re.MULTILINE)
    assert match, output
    return match.group(1)


def test_issue_by_organization_id_prints_apiuser_and_working_key_once():
    organization = OrganizationFactory(name="Demo Motors Group")

    out, err = run("--organization", str(organization.pk), "--name", "Dealer CRM")

    api_user, key = printed(out, "apiuser"), printed(out, "apikey")
    credential = ApiCredential.objects.get(api_user=api_user)
    assert (credential.organization, credential.name) == (organization, "Dealer CRM")
    assert api_credential_for_key(key=key, api_user=api_user) == credential
    assert out.count(key) == 1
    assert key not in err
    assert "shown only once" in err
    assert key not in repr(list(ApiKey.objects.values_list()))


def test_issue_by_exact_organization_name_with_api_user_and_accounts():
    organization = OrganizationFactory(name="Lakeside Auto Group")
    first, second = (
        AccountFactory(organization=organization),
        AccountFactory(organization=organization),
    )
    AccountFactory(organization=organization)

    out, _ = run(
        "--organization",
        "Lakeside Auto Group",
        "--api-user",
        "lakeside-crm",
        "--account",
        str(first.pk),
        "--account",
        str(second.pk),
    )

    assert printed(out, "apiuser") == "lakeside-crm"
    credential = ApiCredential.objects.get(api_user="lakeside-crm")
    assert set(credential.accounts.all()) == {first, second}
    assert (
        api_credential_for_key(key=printed(out, "apikey"), api_user="lakeside-crm")
        == credential
    )


@pytest.mark.parametrize("ref", ["999999", "Unknown Group", "lakeside auto group"])
def test_issue_for_unknown_organization_fails_clearly(ref):
    OrganizationFactory(name="Lakeside Auto Group")

    with pytest.raises(CommandError, match="No organization with id or name"):
        run("--organization", ref)

    assert not ApiCredential.objects.exists()


def test_issue_refuses_account_of_another_organization():
    organization = OrganizationFactory()
    foreign = AccountFactory()

    with pytest.raises(
        CommandError, match=f"Account {foreign.pk} .* is not in organization"
    ):
        run("--organization", str(organization.pk), "--account", str(foreign.pk))

    assert not ApiCredential.objects.exists()


def test_issue_refuses_unknown_account():
    organization = OrganizationFactory()

    with pytest.raises(CommandError, match="No account with id 999999"):
        run("--organization", str(organization.pk), "--account", "999999")


def test_issue_refuses_taken_api_user():
    organization = OrganizationFactory()
    issue_credential(organization, api_user="crm")

    with pytest.raises(CommandError, match="already taken"):
        run("--organization", str(organization.pk), "--api-user", "crm")

    assert ApiKey.objects.count() == 1


def test_rotate_prints_new_key_and_old_one_stays_valid_for_grace():
    credential, old = issue_credential(OrganizationFactory(), api_user="crm")

    out, err = run("--rotate", "crm")

    new = printed(out, "apikey")
    assert new != old
    assert api_credential_for_key(key=new, api_user="crm") == credential
    assert api_credential_for_key(key=old, api_user="crm") == credential
    assert "keeps working for 24 hours" in err


def test_revoke_stops_every_key():
    credential, old = issue_credential(OrganizationFactory(), api_user="crm")
    run("--rotate", "crm")

    out, _ = run("--revoke", "crm")

    assert "Revoked 2 key(s) of apiuser crm" in out
    assert not ApiKey.objects.filter(credential=credential).usable().exists()
    assert api_credential_for_key(key=old) is None


@pytest.mark.parametrize("mode", ["--rotate", "--revoke"])
def test_unknown_credential_fails_clearly(mode):
    with pytest.raises(CommandError, match="No API credential with apiuser 'nobody'"):
        run(mode, "nobody")


def test_scored_data_account_issues_a_working_key():
    account = AccountFactory(name="Demo Motors North")
    old = issue_scored_data_key(account)

    out, err = run("--scored-data-account", str(account.pk))

    key = printed(out, "scored-data key")
    assert "Demo Motors North" in out
    assert account_for_scored_data_key(key=key) == account
    assert account_for_scored_data_key(key=old) == account
    assert key not in err


def test_scored_data_for_unknown_account_fails_clearly():
    with pytest.raises(CommandError, match="No account with id 999999"):
        run("--scored-data-account", "999999")


def test_nothing_to_do_fails_clearly():
    with pytest.raises(CommandError, match="Say what to do"):
        run()


def test_modes_are_exclusive():
    with pytest.raises(CommandError):
        run("--rotate", "a", "--revoke", "b")
