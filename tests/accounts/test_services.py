from datetime import time, timedelta

import pytest
from django.db import connection
from django.test.utils import override_settings
from django.utils import timezone

from accounts.keys import hash_key, key_prefix
from accounts.models import AccountScheduleDay, ApiKey, ScoredDataKey
from accounts.selectors import (
    account_for_scored_data_key,
    api_credential_for_key,
    credential_account_ids,
)
from accounts.services import (
    account_update,
    api_credential_issue,
    api_credential_revoke,
    api_key_rotate,
    api_keys_prune,
    scored_data_key_issue,
    scored_data_key_revoke,
)
from accounts.signals import duty_changed
from tests.accounts.factories import AccountFactory, OrganizationFactory

pytestmark = pytest.mark.django_db


@pytest.fixture
def organization():
    return OrganizationFactory(name="Demo Motors Group")


def later(monkeypatch, delta: timedelta) -> None:
    """Move the clock every service and selector reads."""
    moment = timezone.now() + delta
    monkeypatch.setattr(timezone, "now", lambda: moment)


def stored_text() -> str:
    """Every key-related column of the database, as one string."""
    with connection.cursor() as cursor:
        cursor.execute(
            "SELECT prefix, key_hash FROM accounts_apikey UNION ALL SELECT prefix, key_hash FROM accounts_scoreddatakey"
        )
        rows = cursor.fetchall()
        cursor.execute("SELECT api_user, name FROM accounts_apicredential")
        rows += cursor.fetchall()
    return repr(rows)


def test_issue_stores_only_hash_and_prefix(organization):
    credential, key = api_credential_issue(organization=organization, name="CRM")

    record = ApiKey.objects.get(credential=credential)
    assert record.key_hash == hash_key(key)
    assert record.prefix == key_prefix(key)
    assert key.startswith("lc_")
    assert key not in stored_text()
    assert key.split("_")[2] not in stored_text()


def test_issue_generates_api_user_from_organization_name(organization):
    credential, _ = api_credential_issue(organization=organization)

    assert credential.api_user.startswith("demo-motors-group-")
    assert credential.accounts.count() == 0


def test_issue_keeps_given_api_user_and_narrows_accounts(organization):
    account = AccountFactory(organization=organization)
    AccountFactory(organization=organization)

    credential, _ = api_credential_issue(
        organization=organization, api_user="crm-one", accounts=[account]
    )

    assert credential.api_user == "crm-one"
    assert credential_account_ids(credential=credential) == {account.pk}


def test_credential_without_accounts_reaches_every_account_of_its_organization(
    organization,
):
    accounts = [
        AccountFactory(organization=organization),
        AccountFactory(organization=organization),
    ]
    AccountFactory()
    credential, _ = api_credential_issue(organization=organization)

    assert credential_account_ids(credential=credential) == {a.pk for a in accounts}


def test_key_finds_its_credential_with_or_without_api_user(organization):
    credential, key = api_credential_issue(
        organization=organization, api_user="crm-one"
    )

    assert api_credential_for_key(key=key) == credential
    assert api_credential_for_key(key=key, api_user="crm-one") == credential


def test_key_with_another_api_user_is_refused(organization):
    _, key = api_credential_issue(organization=organization, api_user="crm-one")
    api_credential_issue(organization=organization, api_user="crm-two")

    assert api_credential_for_key(key=key, api_user="crm-two") is None
    assert api_credential_for_key(key=key, api_user="CRM-ONE") is None


def test_wrong_secret_with_a_real_prefix_is_refused(organization):
    _, key = api_credential_issue(organization=organization)
    prefix = key_prefix(key)

    assert api_credential_for_key(key=f"{prefix}_{'0' * 40}") is None
    assert (
        api_credential_for_key(key=key[:-1] + ("a" if key[-1] != "a" else "b")) is None
    )


@pytest.mark.parametrize(
    "key", ["", "nonsense", "lc__abc", "lc_abc_def_ghi", "lc_" + "a" * 200 + "_b"]
)
def test_malformed_keys_are_refused(organization, key):
    api_credential_issue(organization=organization)

    assert api_credential_for_key(key=key) is None


def test_scored_data_key_is_not_an_api_key_and_vice_versa(organization):
    account = AccountFactory(organization=organization)
    _, api_key = api_credential_issue(organization=organization)
    scored_key = scored_data_key_issue(account=account)

    assert api_credential_for_key(key=scored_key) is None
    assert account_for_scored_data_key(key=api_key) is None
    assert account_for_scored_data_key(key=scored_key) == account


@override_settings(API_KEY_ROTATION_GRACE=timedelta(hours=24))
def test_rotated_key_works_through_grace_period_then_stops(organization, monkeypatch):
    credential, old = api_credential_issue(organization=organization)

    new = api_key_rotate(credential=credential)

    assert new != old
    assert api_credential_for_key(key=old) == credential
    assert api_credential_for_key(key=new) == credential
    later(monkeypatch, timedelta(hours=23, minutes=59))
    assert api_credential_for_key(key=old) == credential
    later(monkeypatch, timedelta(hours=24, minutes=1))
    assert api_credential_for_key(key=old) is None
    assert api_credential_for_key(key=new) == credential


def test_rotation_with_zero_grace_stops_old_key_now(organization):
    credential, old = api_credential_issue(organization=organization)

    new = api_key_rotate(credential=credential, grace=timedelta(0))

    assert api_credential_for_key(key=old) is None
    assert api_credential_for_key(key=new) == credential


def test_second_rotation_never_extends_an_earlier_grace_period(
    organization, monkeypatch
):
    credential, first = api_credential_issue(organization=organization)
    api_key_rotate(credential=credential, grace=timedelta(hours=1))
    first_expiry = ApiKey.objects.get(prefix=key_prefix(first)).expires_at

    api_key_rotate(credential=credential, grace=timedelta(hours=24))

    assert ApiKey.objects.get(prefix=key_prefix(first)).expires_at == first_expiry
    later(monkeypatch, timedelta(hours=2))
    assert api_credential_for_key(key=first) is None


def test_revoke_stops_every_key_now_including_grace_period_keys(organization):
    credential, old = api_credential_issue(organization=organization)
    new = api_key_rotate(credential=credential)

    assert api_credential_revoke(credential=credential) == 2

    assert api_credential_for_key(key=old) is None
    assert api_credential_for_key(key=new) is None
    assert api_credential_revoke(credential=credential) == 0


def test_rotation_after_revocation_issues_a_working_key(organization):
    credential, _ = api_credential_issue(organization=organization)
    api_credential_revoke(credential=credential)

    key = api_key_rotate(credential=credential)

    assert api_credential_for_key(key=key) == credential


def test_revoking_one_credential_leaves_others_alone(organization):
    first, _ = api_credential_issue(organization=organization)
    second, key = api_credential_issue(organization=organization)

    api_credential_revoke(credential=first)

    assert api_credential_for_key(key=key) == second


def test_scored_data_reissue_keeps_old_key_for_grace_and_revoke_stops_all(
    organization, monkeypatch
):
    account = AccountFactory(organization=organization)
    old = scored_data_key_issue(account=account)
    new = scored_data_key_issue(account=account, grace=timedelta(hours=1))

    assert account_for_scored_data_key(key=old) == account
    assert account_for_scored_data_key(key=new) == account
    assert ScoredDataKey.objects.get(prefix=key_prefix(new)).key_hash == hash_key(new)
    assert scored_data_key_revoke(account=account) == 2
    assert account_for_scored_data_key(key=old) is None
    assert account_for_scored_data_key(key=new) is None


def test_scored_data_key_expires_after_grace(organization, monkeypatch):
    account = AccountFactory(organization=organization)
    old = scored_data_key_issue(account=account)
    new = scored_data_key_issue(account=account, grace=timedelta(hours=1))

    later(monkeypatch, timedelta(hours=2))

    assert account_for_scored_data_key(key=old) is None
    assert account_for_scored_data_key(key=new) == account


def test_usable_queryset_agrees_with_is_usable(organization):
    credential, _ = api_credential_issue(organization=organization)
    api_key_rotate(credential=credential, grace=timedelta(0))
    api_key_rotate(credential=credential, grace=timedelta(hours=1))
    api_key_rotate(credential=credential, grace=timedelta(hours=1))
    other, _ = api_credential_issue(organization=organization)
    api_credential_revoke(credential=other)

    usable = set(ApiKey.objects.usable().values_list("pk", flat=True))

    assert usable == {key.pk for key in ApiKey.objects.all() if key.is_usable()}
    assert len(usable) == 3  # the newest and two in their grace period


def test_prune_deletes_only_keys_that_stopped_long_ago(organization, monkeypatch):
    account = AccountFactory(organization=organization)
    revoked, revoked_key = api_credential_issue(organization=organization)
    api_credential_revoke(credential=revoked)
    rotated, first = api_credential_issue(organization=organization)
    current = api_key_rotate(credential=rotated, grace=timedelta(0))
    old_scored = scored_data_key_issue(account=account)
    new_scored = scored_data_key_issue(account=account, grace=timedelta(0))

    assert api_keys_prune() == 0
    later(monkeypatch, timedelta(days=91))

    assert api_keys_prune() == 3
    assert set(ApiKey.objects.values_list("prefix", flat=True)) == {key_prefix(current)}
    assert set(ScoredDataKey.objects.values_list("prefix", flat=True)) == {
        key_prefix(new_scored)
    }
    assert api_credential_for_key(key=current) == rotated
    assert api_credential_for_key(key=revoked_key) is None
    assert api_credential_for_key(key=first) is None
    assert account_for_scored_data_key(key=old_scored) is None


def test_prune_keeps_keys_stopped_recently(organization, monkeypatch):
    credential, _ = api_credential_issue(organization=organization)
    api_key_rotate(credential=credential, grace=timedelta(0))
    later(monkeypatch, timedelta(days=30))

    assert api_keys_prune() == 0
    assert ApiKey.objects.filter(credential=credential).count() == 2


def test_a_credential_cannot_be_narrowed_to_another_organizations_account(db):
    from tests.accounts.factories import AccountFactory, OrganizationFactory

    organization = OrganizationFactory()
    foreign = AccountFactory()

    with pytest.raises(ValueError, match="own organization"):
        api_credential_issue(organization=organization, accounts=[foreign])


def test_a_schedule_day_without_hours_still_has_a_name():
    from accounts.models import AccountScheduleDay

    assert str(AccountScheduleDay(weekday=0)) == "Monday (no hours)"


@pytest.fixture
def duty_signals():
    """The account ids of every ``duty_changed`` sent while the test runs."""
    sent: list[list[int]] = []

    def receiver(sender, *, account_ids=None, **kwargs):
        sent.append(account_ids)

    duty_changed.connect(receiver, dispatch_uid="tests.duty_signals")
    yield sent
    duty_changed.disconnect(dispatch_uid="tests.duty_signals")


@pytest.mark.parametrize(
    "data",
    [
        {"timezone": "America/Denver"},
        {"schedule_active": False},
        {"name": "Renamed Motors", "timezone": "Europe/London"},
    ],
    ids=["timezone", "schedule switch", "name and timezone"],
)
def test_account_update_tells_the_pipeline_when_its_hours_change(duty_signals, data):
    account = AccountFactory(timezone="America/New_York", schedule_active=True)

    account_update(account=account, data=data)

    assert duty_signals == [[account.pk]]
    account.refresh_from_db()
    assert {name: getattr(account, name) for name in data} == data


@pytest.mark.parametrize(
    "data",
    [
        {},
        {"name": "Renamed Motors", "city": "Boulder", "is_test": True},
        {"timezone": "America/New_York", "schedule_active": True},  # as they were
    ],
    ids=["nothing", "other fields", "the same hours"],
)
def test_account_update_leaves_the_pipeline_alone_when_its_hours_stay(
    duty_signals, data
):
    account = AccountFactory(timezone="America/New_York", schedule_active=True)

    account_update(account=account, data=data)

    assert duty_signals == []
    account.refresh_from_db()
    assert {name: getattr(account, name) for name in data} == data


def test_account_update_tells_the_pipeline_when_its_schedule_days_change(
    duty_signals,
):
    account = AccountFactory(schedule=False)
    monday = AccountScheduleDay.objects.create(
        account=account, weekday=0, start_time=time(9), end_time=time(17)
    )
    tuesday = AccountScheduleDay(
        account=account, weekday=1, start_time=time(9), end_time=time(17)
    )

    account_update(account=account, data={}, schedule_save=[tuesday])
    account_update(account=account, data={}, schedule_delete=[monday])

    assert duty_signals == [[account.pk], [account.pk]]
    assert list(account.schedule_days.values_list("weekday", flat=True)) == [1]
