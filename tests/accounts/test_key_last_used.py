"""API keys and scored-data keys remember when they were last used, written at most once a minute."""

import re
from datetime import timedelta
from zoneinfo import ZoneInfo

import pytest
from django.contrib.admin.utils import display_for_value
from django.db import connection
from django.test.utils import CaptureQueriesContext
from django.urls import reverse
from django.utils import timezone
from rest_framework.test import APIClient

from accounts import selectors
from accounts.models import ApiKey, ScoredDataKey
from accounts.selectors import account_for_scored_data_key, credentials_changed
from tests.accounts.factories import issue_scored_data_key
from tests.leads.factories import VendorRegistrationFactory, adf, catch_all_rule

pytestmark = pytest.mark.django_db

CODE_URL = "/api/users/find/available-user-code?organizationId={}"


def call_user_api(tenant):
    response = tenant.client().get(CODE_URL.format(tenant.organization.pk))
    assert response.status_code == 200
    return response


def last_used(tenant):
    return ApiKey.objects.get(credential=tenant.credential).last_used_at


def key_writes(queries) -> list[str]:
    return [
        q["sql"]
        for q in queries.captured_queries
        if q["sql"].startswith("UPDATE") and "last_used_at" in q["sql"]
    ]


def cells(html: str, field: str) -> list[str]:
    """The texts of a changelist column."""
    return re.findall(rf'<td class="field-{field}(?: nowrap)?">(.*?)</td>', html)


def later(monkeypatch, seconds: float) -> None:
    moment = timezone.now() + timedelta(seconds=seconds)
    monkeypatch.setattr(selectors.timezone, "now", lambda: moment)


def test_a_user_api_call_sets_last_used(tenant):
    assert last_used(tenant) is None
    before = timezone.now()

    call_user_api(tenant)

    assert before <= last_used(tenant) <= timezone.now()


def test_a_second_call_within_a_minute_writes_nothing(tenant):
    with CaptureQueriesContext(connection) as first:
        call_user_api(tenant)
    stamped = last_used(tenant)

    with CaptureQueriesContext(connection) as second:
        call_user_api(tenant)

    assert len(key_writes(first)) == 1
    assert key_writes(second) == []
    # No write, and the key itself comes from the credential cache.
    assert len(second.captured_queries) == len(first.captured_queries) - 2
    assert last_used(tenant) == stamped


def test_a_call_a_minute_later_refreshes_last_used(tenant, monkeypatch):
    call_user_api(tenant)
    stamped = last_used(tenant)

    later(monkeypatch, 61)
    call_user_api(tenant)

    assert last_used(tenant) > stamped + timedelta(seconds=60)


def test_a_refused_key_is_not_marked_used(tenant):
    client = APIClient()
    client.credentials(HTTP_APIUSER="someone-else", HTTP_APIKEY=tenant.key)

    assert (
        client.get(CODE_URL.format(tenant.organization.pk)).status_code == 401
    )  # right key, wrong apiuser
    assert last_used(tenant) is None


def test_lead_intake_and_click_to_call_mark_the_key_used(tenant):
    VendorRegistrationFactory(
        account=tenant.account, vendor_id="V-1", vendor_name="Dealer"
    )
    catch_all_rule(tenant.account)
    xml = adf(vendor_id="V-1", vendor_name="Dealer")

    response = APIClient().post("/api/nl", {"xml": xml, **tenant.headers})
    assert response.status_code == 200
    assert last_used(tenant) is not None

    ApiKey.objects.update(last_used_at=None)
    credentials_changed()  # a raw write: the cache is told, as the services tell it
    response = APIClient().post(
        "/api/clicktocallv2",
        {"account_id": "x"},
        format="json",
        HTTP_API_KEY=tenant.key,
    )
    assert response.status_code == 422  # authenticated, then refused as invalid input
    assert last_used(tenant) is not None


def test_a_scored_data_key_remembers_its_last_use_once_a_minute(tenant, monkeypatch):
    key = issue_scored_data_key(tenant.account)
    record = ScoredDataKey.objects.get(account=tenant.account)
    assert record.last_used_at is None

    assert account_for_scored_data_key(key=key) == tenant.account
    record.refresh_from_db()
    stamped = record.last_used_at
    assert stamped is not None

    with CaptureQueriesContext(connection) as again:
        assert account_for_scored_data_key(key=key) == tenant.account
    assert key_writes(again) == []

    later(monkeypatch, 61)
    assert account_for_scored_data_key(key=key) == tenant.account
    record.refresh_from_db()
    assert record.last_used_at > stamped


def test_a_stale_copy_does_not_overwrite_a_newer_use(tenant, monkeypatch):
    """Two requests of one key loaded the same stale row: only the first one writes."""
    call_user_api(tenant)
    key = ApiKey.objects.get(credential=tenant.credential)
    fresh = timezone.now() + timedelta(seconds=90)
    ApiKey.objects.filter(pk=key.pk).update(last_used_at=fresh)

    key.last_used_at = None  # what a concurrent request loaded before the write above
    selectors._mark_used(key, timezone.now() + timedelta(seconds=100))

    assert last_used(tenant) == fresh


# --- admin ----------------------------------------------------------------------------------


def test_admin_lists_show_when_keys_were_last_used(
    admin_client, admin_user, tenant, other_tenant
):
    scored = issue_scored_data_key(tenant.account)
    issue_scored_data_key(other_tenant.account)
    call_user_api(tenant)
    account_for_scored_data_key(key=scored)
    # As the pages show them: in the signed-in user's timezone.
    with timezone.override(ZoneInfo(admin_user.timezone)):
        used = display_for_value(last_used(tenant), "never")
        scored_used = display_for_value(
            ScoredDataKey.objects.get(account=tenant.account).last_used_at, "never"
        )

    credentials = admin_client.get(
        reverse("admin:accounts_apicredential_changelist")
    ).content.decode()
    accounts = admin_client.get(
        reverse("admin:accounts_account_changelist")
    ).content.decode()
    keys = admin_client.get(
        reverse("admin:accounts_apikey_changelist")
    ).content.decode()
    inline = admin_client.get(
        reverse("admin:accounts_apicredential_change", args=[tenant.credential.pk])
    ).content.decode()

    assert sorted(cells(credentials, "key_last_used")) == sorted([used, "never"])
    assert sorted(cells(accounts, "key_last_used")) == sorted(
        [scored_used, "never", "never", "never"]
    )
    assert sorted(cells(keys, "last_used_at")) == sorted([used, "-"])
    assert '<th class="column-last_used_at">Last used' in inline
    assert re.findall(r'<td class="field-last_used_at">\s*<p>(.*?)</p>', inline) == [
        used
    ]
