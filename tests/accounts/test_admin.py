from datetime import time, timedelta

import pytest
from django.contrib.admin.models import LogEntry
from django.contrib.messages import get_messages
from django.test.utils import override_settings
from django.urls import reverse
from django.utils import timezone

from accounts.forms import BLANK_TIMES, HALF_BLANK_TIMES
from accounts.keys import hash_key, key_prefix
from accounts.models import (
    Account,
    AccountScheduleDay,
    ApiCredential,
    ApiKey,
    Organization,
    ScoredDataKey,
    Team,
)
from accounts.selectors import account_for_scored_data_key, api_credential_for_key
from accounts.services import api_credential_revoke, api_key_rotate
from scoring.models import Scorecard
from tests.accounts.factories import (
    AccountFactory,
    OrganizationFactory,
    TeamFactory,
    issue_credential,
    issue_scored_data_key,
)
from tests.admin_pages import form_data, sign_in_support, text_of, typed
from tests.users.factories import UserFactory

pytestmark = pytest.mark.django_db

GRACE = timedelta(hours=24)


def url(model: str, view: str, *args) -> str:
    return reverse(f"admin:accounts_{model}_{view}", args=args)


def later(monkeypatch, delta: timedelta) -> None:
    moment = timezone.now() + delta
    monkeypatch.setattr(timezone, "now", lambda: moment)


def management(prefix: str, total: int = 0, initial: int = 0) -> dict[str, str]:
    return {
        f"{prefix}-TOTAL_FORMS": str(total),
        f"{prefix}-INITIAL_FORMS": str(initial),
        f"{prefix}-MIN_NUM_FORMS": "0",
        f"{prefix}-MAX_NUM_FORMS": "1000",
    }


def build_tenants(count: int) -> list[ApiCredential]:
    """Organizations with two accounts, teams, users, a credential with rotated keys, scored-data keys."""
    credentials = []
    for _ in range(count):
        organization = OrganizationFactory()
        accounts = [AccountFactory(organization=organization) for _ in range(2)]
        for account in accounts:
            TeamFactory(account=account, name="Sales")
            TeamFactory(account=account, name="Service")
            UserFactory(account=account)
            issue_scored_data_key(account)
        credential, _ = issue_credential(organization, accounts=accounts[:1])
        api_key_rotate(credential=credential)
        issue_credential(organization)
        credentials.append(credential)
    return credentials


@pytest.mark.parametrize(
    ("model", "max_queries"),
    [
        ("organization", 5),
        ("account", 9),
        ("team", 6),
        ("apicredential", 9),
        ("apikey", 8),
        ("scoreddatakey", 8),
    ],
)
def test_changelist_loads_in_a_fixed_number_of_queries(
    admin_client, django_assert_max_num_queries, model, max_queries
):
    build_tenants(6)

    with django_assert_max_num_queries(max_queries):
        response = admin_client.get(url(model, "changelist"))

    assert response.status_code == 200
    assert response.context["cl"].result_count > 5


def test_changelists_show_counts_and_current_prefixes(admin_client):
    organization = OrganizationFactory(name="Demo Motors Group")
    account = AccountFactory(organization=organization, name="Demo Motors North")
    TeamFactory(account=account, name="Sales")
    UserFactory(account=account)
    _, key = issue_credential(organization, api_user="crm-one", accounts=[account])
    scored = issue_scored_data_key(account)

    organizations = admin_client.get(url("organization", "changelist")).content.decode()
    accounts = admin_client.get(url("account", "changelist")).content.decode()
    credentials = admin_client.get(url("apicredential", "changelist")).content.decode()

    assert '<td class="field-accounts_count">1</td>' in organizations
    assert '<td class="field-users_count">1</td>' in organizations
    assert f"{key_prefix(scored)}…" in accounts
    assert f"{key_prefix(key)}…" in credentials
    assert "Demo Motors North" in credentials
    assert key not in credentials + accounts
    assert scored not in accounts


@pytest.mark.parametrize(
    "model",
    ["organization", "account", "team", "apicredential", "apikey", "scoreddatakey"],
)
def test_change_page_loads(admin_client, model):
    build_tenants(1)
    objects = {
        "organization": Organization,
        "account": Account,
        "team": Team,
        "apicredential": ApiCredential,
        "apikey": ApiKey,
        "scoreddatakey": ScoredDataKey,
    }
    obj = objects[model]._default_manager.first()
    assert obj is not None

    response = admin_client.get(url(model, "change", obj.pk))

    assert response.status_code == 200


@pytest.mark.parametrize("model", ["organization", "account", "team", "apicredential"])
def test_add_page_loads(admin_client, model):
    assert admin_client.get(url(model, "add")).status_code == 200


@pytest.mark.parametrize("model", ["apikey", "scoreddatakey"])
def test_keys_cannot_be_added_or_edited_in_the_admin(admin_client, model):
    build_tenants(1)
    obj = (ApiKey if model == "apikey" else ScoredDataKey).objects.first()
    assert obj is not None

    assert admin_client.get(url(model, "add")).status_code == 403
    response = admin_client.post(
        url(model, "change", obj.pk), {"prefix": "lc_hijacked", "key_hash": "0" * 64}
    )

    assert response.status_code == 403
    obj.refresh_from_db()
    assert obj.prefix != "lc_hijacked"


def test_key_pages_never_show_the_hash(admin_client):
    credential, _ = issue_credential(OrganizationFactory())
    record = ApiKey.objects.get(credential=credential)

    pages = [
        admin_client.get(url("apikey", "change", record.pk)),
        admin_client.get(url("apicredential", "change", credential.pk)),
        admin_client.get(url("apikey", "changelist")),
    ]

    for page in pages:
        assert page.status_code == 200
        assert record.key_hash not in page.content.decode()
        assert record.prefix in page.content.decode()


def test_credentials_are_found_by_key_prefix(admin_client):
    organization = OrganizationFactory()
    wanted, key = issue_credential(organization, api_user="the-one")
    issue_credential(organization, api_user="another")

    response = admin_client.get(
        url("apicredential", "changelist"), {"q": key_prefix(key)}
    )

    assert list(response.context["cl"].result_list) == [wanted]


# --- issuing a credential


def test_credential_add_shows_key_once_and_stores_only_its_hash(admin_client):
    organization = OrganizationFactory(name="Demo Motors Group")
    account = AccountFactory(organization=organization)

    response = admin_client.post(
        url("apicredential", "add"),
        {
            "organization": organization.pk,
            "name": "Dealer CRM",
            "api_user": "dealer-crm",
            "accounts": [account.pk],
        },
    )

    assert response.status_code == 200
    assert "will not be shown again" in response.content.decode()
    assert "no-store" in response["Cache-Control"]
    key = response.context["keys"][0].key
    assert key in response.content.decode()
    credential = ApiCredential.objects.get(api_user="dealer-crm")
    assert credential.name == "Dealer CRM"
    assert list(credential.accounts.all()) == [account]
    assert api_credential_for_key(key=key, api_user="dealer-crm") == credential
    record = ApiKey.objects.get(credential=credential)
    assert record.key_hash == hash_key(key)
    assert key not in repr(list(ApiKey.objects.values_list()))
    # Shown once: never again on the credential's page, in its history or in a message.
    assert (
        key
        not in admin_client.get(
            url("apicredential", "change", credential.pk)
        ).content.decode()
    )
    assert (
        key
        not in admin_client.get(
            url("apicredential", "history", credential.pk)
        ).content.decode()
    )
    assert all(key not in entry.change_message for entry in LogEntry.objects.all())
    assert all(key not in cookie.value for cookie in response.cookies.values())
    assert all(
        key not in str(message) for message in get_messages(response.wsgi_request)
    )


def test_credential_add_generates_api_user_when_blank(admin_client):
    organization = OrganizationFactory(name="Lakeside Auto Group")

    response = admin_client.post(
        url("apicredential", "add"),
        {"organization": organization.pk, "name": "", "api_user": ""},
    )

    assert response.status_code == 200
    credential = ApiCredential.objects.get(organization=organization)
    assert credential.api_user.startswith("lakeside-auto-group-")
    assert credential.accounts.count() == 0
    assert api_credential_for_key(key=response.context["keys"][0].key) == credential


def test_credential_add_refuses_accounts_of_another_organization(admin_client):
    organization = OrganizationFactory()
    foreign = AccountFactory(name="Somebody Else's Dealer")

    response = admin_client.post(
        url("apicredential", "add"),
        {"organization": organization.pk, "api_user": "crm", "accounts": [foreign.pk]},
    )

    assert response.status_code == 200
    assert "Somebody Else&#x27;s Dealer" in str(
        response.context["adminform"].form.errors["accounts"]
    )
    assert not ApiCredential.objects.exists()
    assert not ApiKey.objects.exists()


def test_credential_add_refuses_a_taken_api_user(admin_client):
    organization = OrganizationFactory()
    issue_credential(organization, api_user="crm")

    response = admin_client.post(
        url("apicredential", "add"),
        {"organization": organization.pk, "api_user": "crm"},
    )

    assert response.status_code == 200
    assert response.context["adminform"].form.errors["api_user"]
    assert ApiKey.objects.count() == 1


def test_credential_change_edits_name_and_accounts_but_not_api_user(admin_client):
    organization = OrganizationFactory()
    account = AccountFactory(organization=organization)
    credential, key = issue_credential(organization, api_user="crm")

    response = admin_client.post(
        url("apicredential", "change", credential.pk),
        {
            "name": "Renamed",
            "accounts": [account.pk],
            "api_user": "hijacked",
            **management("keys", 1, 1),
        },
    )

    assert response.status_code == 302
    credential.refresh_from_db()
    assert (credential.name, credential.api_user) == ("Renamed", "crm")
    assert list(credential.accounts.all()) == [account]
    assert api_credential_for_key(key=key, api_user="crm") == credential


# --- rotating and revoking credential keys


@override_settings(API_KEY_ROTATION_GRACE=GRACE)
def test_rotate_action_shows_new_key_and_old_key_works_until_grace_ends(
    admin_client, monkeypatch
):
    credential, old = issue_credential(OrganizationFactory(), api_user="crm")

    response = admin_client.post(
        url("apicredential", "changelist"),
        {"action": "issue_selected", "_selected_action": [credential.pk]},
    )

    assert response.status_code == 200
    page = response.content.decode()
    assert "will not be shown again" in page
    assert "keeps working for the grace period of 24 hours" in page
    assert "no-store" in response["Cache-Control"]
    new = response.context["keys"][0].key
    assert new in page
    assert old not in page
    assert api_credential_for_key(key=new, api_user="crm") == credential
    assert api_credential_for_key(key=old, api_user="crm") == credential
    later(monkeypatch, GRACE + timedelta(minutes=1))
    assert api_credential_for_key(key=old, api_user="crm") is None
    assert api_credential_for_key(key=new, api_user="crm") == credential


def test_rotate_action_rotates_every_selected_credential(admin_client):
    organization = OrganizationFactory()
    first, _ = issue_credential(organization)
    second, _ = issue_credential(organization)

    response = admin_client.post(
        url("apicredential", "changelist"),
        {"action": "issue_selected", "_selected_action": [first.pk, second.pk]},
    )

    shown = {row.api_user: row.key for row in response.context["keys"]}
    assert set(shown) == {first.api_user, second.api_user}
    assert api_credential_for_key(key=shown[first.api_user]) == first
    assert api_credential_for_key(key=shown[second.api_user]) == second


def test_rotate_button_asks_first_then_shows_new_key(admin_client):
    credential, old = issue_credential(OrganizationFactory())
    rotate_url = url("apicredential", "issue_key", credential.pk)

    change_page = admin_client.get(
        url("apicredential", "change", credential.pk)
    ).content.decode()
    confirm = admin_client.get(rotate_url)

    assert rotate_url in change_page
    assert confirm.status_code == 200
    assert "keeps working for 24 hours" in confirm.content.decode()
    assert ApiKey.objects.filter(credential=credential).count() == 1

    response = admin_client.post(rotate_url)

    new = response.context["keys"][0].key
    assert api_credential_for_key(key=new) == credential
    assert api_credential_for_key(key=old) == credential


def test_revoke_action_asks_first_then_stops_every_key_now(admin_client):
    credential, old = issue_credential(OrganizationFactory(), api_user="crm")
    new = api_key_rotate(credential=credential)
    changelist = url("apicredential", "changelist")

    confirm = admin_client.post(
        changelist, {"action": "revoke_selected", "_selected_action": [credential.pk]}
    )

    assert confirm.status_code == 200
    assert "stops working now" in confirm.content.decode()
    assert api_credential_for_key(key=new) == credential

    response = admin_client.post(
        changelist,
        {
            "action": "revoke_selected",
            "_selected_action": [credential.pk],
            "post": "yes",
        },
        follow=True,
    )

    assert response.status_code == 200
    assert "revoked: they stop working now" in response.content.decode()
    assert api_credential_for_key(key=old) is None
    assert api_credential_for_key(key=new) is None


def test_revoke_button_asks_first_then_stops_keys(admin_client):
    credential, key = issue_credential(OrganizationFactory())
    revoke_url = url("apicredential", "revoke_keys", credential.pk)

    assert admin_client.get(revoke_url).status_code == 200
    assert api_credential_for_key(key=key) == credential

    response = admin_client.post(revoke_url)

    assert response.status_code == 302
    assert response["Location"] == url("apicredential", "change", credential.pk)
    assert api_credential_for_key(key=key) is None


def test_key_pages_of_unknown_credential_are_not_found(admin_client):
    assert (
        admin_client.get(url("apicredential", "issue_key", 999999)).status_code == 404
    )
    assert (
        admin_client.post(url("apicredential", "revoke_keys", 999999)).status_code
        == 404
    )


def test_key_tools_need_change_permission(client, django_user_model):
    from django.contrib.auth.models import Permission

    staff = django_user_model.objects.create_user(
        username="viewer", password="x", is_staff=True
    )
    staff.user_permissions.add(Permission.objects.get(codename="view_apicredential"))
    client.force_login(staff)
    credential, key = issue_credential(OrganizationFactory())

    assert (
        client.post(url("apicredential", "issue_key", credential.pk)).status_code == 403
    )
    assert (
        client.post(url("apicredential", "revoke_keys", credential.pk)).status_code
        == 403
    )
    assert ApiKey.objects.filter(credential=credential).count() == 1
    assert api_credential_for_key(key=key) == credential


def test_credential_list_marks_revoked_credentials_unusable(admin_client):
    credential, _ = issue_credential(OrganizationFactory())
    api_credential_revoke(credential=credential)

    response = admin_client.get(url("apicredential", "changelist"))

    row = response.context["cl"].result_list[0]
    assert row.n_usable == 0
    assert row.current_prefix is None


# --- scored-data keys


@override_settings(API_KEY_ROTATION_GRACE=GRACE)
def test_issue_scored_data_key_action_shows_each_key_once(admin_client, monkeypatch):
    first, second = AccountFactory(), AccountFactory()
    old = issue_scored_data_key(first)

    response = admin_client.post(
        url("account", "changelist"),
        {"action": "issue_selected", "_selected_action": [first.pk, second.pk]},
    )

    assert response.status_code == 200
    assert "will not be shown again" in response.content.decode()
    keys = {row.owner: row.key for row in response.context["keys"]}
    assert account_for_scored_data_key(key=keys[first.name]) == first
    assert account_for_scored_data_key(key=keys[second.name]) == second
    assert account_for_scored_data_key(key=old) == first
    later(monkeypatch, GRACE + timedelta(minutes=1))
    assert account_for_scored_data_key(key=old) is None
    assert account_for_scored_data_key(key=keys[first.name]) == first


def test_revoke_scored_data_keys_action_asks_first(admin_client):
    account = AccountFactory()
    key = issue_scored_data_key(account)
    changelist = url("account", "changelist")

    admin_client.post(
        changelist,
        {"action": "revoke_selected", "_selected_action": [account.pk]},
    )
    assert account_for_scored_data_key(key=key) == account

    admin_client.post(
        changelist,
        {
            "action": "revoke_selected",
            "_selected_action": [account.pk],
            "post": "yes",
        },
    )
    assert account_for_scored_data_key(key=key) is None


def test_scored_data_buttons_on_account_page(admin_client):
    account = AccountFactory()
    old = issue_scored_data_key(account)
    page = admin_client.get(url("account", "change", account.pk)).content.decode()
    assert url("account", "issue_key", account.pk) in page
    assert url("account", "revoke_keys", account.pk) in page

    issued = admin_client.post(url("account", "issue_key", account.pk))
    new = issued.context["keys"][0].key
    admin_client.post(url("account", "revoke_keys", account.pk))

    assert account_for_scored_data_key(key=old) is None
    assert account_for_scored_data_key(key=new) is None
    assert (
        key_prefix(new)
        in admin_client.get(url("account", "change", account.pk)).content.decode()
    )


# --- accounts and their schedules


def test_account_add_page_offers_seven_schedule_days(admin_client):
    response = admin_client.get(url("account", "add"))

    formset = next(
        f.formset
        for f in response.context["inline_admin_formsets"]
        if f.formset.prefix == "schedule_days"
    )
    assert [form.initial.get("weekday") for form in formset.forms] == list(range(7))


def test_account_change_page_offers_only_missing_days(admin_client):
    account = AccountFactory(schedule=False)
    AccountScheduleDay.objects.create(
        account=account, weekday=2, start_time="09:00", end_time="17:00"
    )

    response = admin_client.get(url("account", "change", account.pk))

    formset = next(
        f.formset
        for f in response.context["inline_admin_formsets"]
        if f.formset.prefix == "schedule_days"
    )
    assert [form.initial.get("weekday") for form in formset.extra_forms] == [
        0,
        1,
        3,
        4,
        5,
        6,
    ]


def test_account_add_creates_teams_and_schedule(admin_client):
    organization = OrganizationFactory()
    data = {
        "organization": organization.pk,
        "name": "Demo Motors East",
        "is_active": "on",
        "timezone": "America/New_York",
        "country": "US",
        "address": "1 Main St",
        "city": "Boston",
        "postal_code": "02108",
        "caller_id": "+16175550150",
        "schedule_active": "on",
        **management("teams", 2),
        "teams-0-name": "Sales",
        "teams-1-name": "Service",
        **management("schedule_days", 2),
        "schedule_days-0-weekday": "0",
        "schedule_days-0-active": "on",
        "schedule_days-0-start_time": "08:00",
        "schedule_days-0-end_time": "18:00",
        "schedule_days-1-weekday": "6",
        "schedule_days-1-start_time": "10:00",
        "schedule_days-1-end_time": "16:00",
        **management("scored_data_keys"),
        **management("dialing_settings"),
        **management("texting_settings"),
        **management("notify_settings"),
        **management("alert_subscriptions"),
        **management("handoff_settings"),
    }

    response = admin_client.post(url("account", "add"), data)

    assert response.status_code == 302, response.context["adminform"].form.errors
    account = Account.objects.get(name="Demo Motors East")
    assert (account.organization, account.timezone, account.caller_id) == (
        organization,
        "America/New_York",
        "+16175550150",
    )
    assert sorted(account.teams.values_list("name", flat=True)) == ["Sales", "Service"]
    assert list(account.schedule_days.values_list("weekday", "active")) == [
        (0, True),
        (6, False),
    ]
    # Added through account_create: scoring gave it the default scorecard.
    assert Scorecard.objects.get(account=account).categories.count() == 10


def test_account_add_refuses_unknown_timezone_and_backwards_day(admin_client):
    organization = OrganizationFactory()
    data = {
        "organization": organization.pk,
        "name": "Broken",
        "timezone": "Mars/Olympus",
        "country": "US",
        **management("teams"),
        **management("schedule_days", 1),
        "schedule_days-0-weekday": "0",
        "schedule_days-0-active": "on",
        "schedule_days-0-start_time": "18:00",
        "schedule_days-0-end_time": "08:00",
        **management("scored_data_keys"),
        **management("dialing_settings"),
    }

    response = admin_client.post(url("account", "add"), data)

    assert response.status_code == 200
    assert "timezone" in response.context["adminform"].form.errors
    assert not Account.objects.filter(name="Broken").exists()


def test_account_schedule_day_must_end_after_it_starts(admin_client):
    account = AccountFactory(schedule=False)
    data = {
        "name": account.name,
        "timezone": account.timezone,
        "country": "US",
        **management("teams"),
        **management("schedule_days", 1),
        "schedule_days-0-weekday": "0",
        "schedule_days-0-active": "on",
        "schedule_days-0-start_time": "18:00",
        "schedule_days-0-end_time": "08:00",
        **management("scored_data_keys"),
        **management("dialing_settings"),
    }

    response = admin_client.post(url("account", "change", account.pk), data)

    assert response.status_code == 200
    formset = next(
        f.formset
        for f in response.context["inline_admin_formsets"]
        if f.formset.prefix == "schedule_days"
    )
    assert formset.errors[0] == {
        "end_time": [
            "The day must end after it starts; an end of 23:59 means until midnight."
        ]
    }
    assert not account.schedule_days.exists()


def schedule_formset(response):
    return next(
        f.formset
        for f in response.context["inline_admin_formsets"]
        if f.formset.prefix == "schedule_days"
    )


def account_add_form(client, organization: Organization, **fields) -> dict:
    """The add page's form as a browser posts it, with an organization and a name chosen."""
    page = client.get(url("account", "add"))
    assert page.status_code == 200
    return typed(
        form_data(page, "account_form"),
        {"organization": str(organization.pk), "name": "Demo Motors East", **fields},
    )


def test_account_schedule_is_offered_as_a_week_at_default_hours_and_stored_as_shown(
    client,
):
    sign_in_support(client)
    organization = OrganizationFactory()
    page = client.get(url("account", "add"))

    response = client.post(
        url("account", "add"), account_add_form(client, organization)
    )

    assert [
        (
            f.initial["weekday"],
            f.initial["active"],
            f.initial["start_time"],
            f.initial["end_time"],
        )
        for f in schedule_formset(page).forms
    ] == [(d, True, time(9), time(17)) for d in range(7)]
    assert response.status_code == 302, response.context["adminform"].form.errors
    account = Account.objects.get(name="Demo Motors East")
    assert list(
        account.schedule_days.values_list("weekday", "active", "start_time", "end_time")
    ) == [(d, True, time(9), time(17)) for d in range(7)]


def test_account_schedule_refuses_a_ticked_day_left_without_times(client):
    sign_in_support(client)
    organization = OrganizationFactory()

    response = client.post(
        url("account", "add"),
        account_add_form(
            client,
            organization,
            **{"schedule_days-0-start_time": "", "schedule_days-0-end_time": ""},
        ),
    )

    assert response.status_code == 200
    errors = schedule_formset(response).errors
    assert errors[0] == {"__all__": [BLANK_TIMES]}
    assert errors[1:] == [{}] * 6
    assert BLANK_TIMES in text_of(response)
    assert not Account.objects.filter(name="Demo Motors East").exists()


def test_account_schedule_day_unticked_without_times_is_a_day_off(client):
    sign_in_support(client)
    organization = OrganizationFactory()
    sunday_off = {
        "schedule_days-6-active": None,
        "schedule_days-6-start_time": "",
        "schedule_days-6-end_time": "",
    }
    half = {"schedule_days-5-active": None, "schedule_days-5-end_time": ""}

    refused = client.post(
        url("account", "add"),
        account_add_form(client, organization, **sunday_off, **half),
    )
    saved = client.post(
        url("account", "add"), account_add_form(client, organization, **sunday_off)
    )

    assert schedule_formset(refused).errors[5] == {"__all__": [HALF_BLANK_TIMES]}
    assert saved.status_code == 302, saved.context["adminform"].form.errors
    account = Account.objects.get(name="Demo Motors East")
    assert list(account.schedule_days.values_list("weekday", flat=True)) == list(
        range(6)
    )


def test_account_schedule_missing_days_stay_off_unless_ticked(client):
    sign_in_support(client)
    account = AccountFactory(schedule=False)
    AccountScheduleDay.objects.bulk_create(
        AccountScheduleDay(
            account=account, weekday=d, start_time=time(8), end_time=time(18)
        )
        for d in range(5)
    )
    page = client.get(url("account", "change", account.pk))
    data = form_data(page, "account_form")

    unchanged = client.post(url("account", "change", account.pk), data)
    days_after_unchanged = account.schedule_days.count()
    ticked = client.post(
        url("account", "change", account.pk),
        typed(data, {"schedule_days-5-active": "on"}),
    )

    assert [
        (f.initial["weekday"], f.initial["active"])
        for f in schedule_formset(page).extra_forms
    ] == [(5, False), (6, False)]
    assert unchanged.status_code == 302
    assert days_after_unchanged == 5
    assert ticked.status_code == 302
    assert list(
        account.schedule_days.values_list("weekday", "active", "start_time", "end_time")
    ) == [
        *[(d, True, time(8), time(18)) for d in range(5)],
        (5, True, time(9), time(17)),
    ]


def test_account_schedule_stored_day_cleared_is_refused(client):
    sign_in_support(client)
    account = AccountFactory()
    data = form_data(client.get(url("account", "change", account.pk)), "account_form")

    response = client.post(
        url("account", "change", account.pk),
        typed(data, {"schedule_days-1-start_time": ""}),
    )

    assert schedule_formset(response).errors[1] == {
        "__all__": ["Enter a start and an end time, or tick Delete to remove the day."]
    }
    assert account.schedule_days.get(weekday=1).start_time == time(8)


# --- the caller ID, read as the APIs read phone numbers


@pytest.mark.parametrize(
    ("country", "typed_number", "stored"),
    [
        ("US", "(303) 555-0188", "+13035550188"),
        ("US", "303.555.0188", "+13035550188"),
        ("US", "+1 303 555 0188", "+13035550188"),
        ("GB", "020 7946 0958", "+442079460958"),
        ("GB", "+13035550188", "+13035550188"),
    ],
)
def test_caller_id_in_national_format_is_stored_in_e164(
    client, country, typed_number, stored
):
    sign_in_support(client)
    account = AccountFactory(country=country)
    data = form_data(client.get(url("account", "change", account.pk)), "account_form")

    response = client.post(
        url("account", "change", account.pk), typed(data, {"caller_id": typed_number})
    )

    assert response.status_code == 302, response.context["adminform"].form.errors
    account.refresh_from_db()
    assert account.caller_id == stored


def test_caller_id_is_read_in_the_country_chosen_on_the_same_form(client):
    sign_in_support(client)
    organization = OrganizationFactory()

    response = client.post(
        url("account", "add"),
        account_add_form(
            client,
            organization,
            country="GB",
            timezone="Europe/London",
            caller_id="020 7946 0958",
        ),
    )

    assert response.status_code == 302, response.context["adminform"].form.errors
    assert Account.objects.get(name="Demo Motors East").caller_id == "+442079460958"


@pytest.mark.parametrize("junk", ["call the front desk", "12", "+1 555"])
def test_caller_id_that_is_not_a_phone_number_is_refused(client, junk):
    sign_in_support(client)
    account = AccountFactory(country="US", caller_id="+13035550199")
    data = form_data(client.get(url("account", "change", account.pk)), "account_form")

    response = client.post(
        url("account", "change", account.pk), typed(data, {"caller_id": junk})
    )

    assert response.status_code == 200
    assert response.context["adminform"].form.errors["caller_id"] == [
        f"“{junk}” is not a phone number. Enter it in E.164 (+13035550100) or as a "
        "national number of the account's country (US)."
    ]
    account.refresh_from_db()
    assert account.caller_id == "+13035550199"


# --- narrowing a credential: only its organization's accounts


def offered_accounts(response) -> list:
    """The account picker's options as rendered: (group, [names]) pairs, or names."""
    field = response.context["adminform"].form.fields["accounts"]
    return [
        (label, [name for _, name in value]) if isinstance(value, list) else label
        for value, label in (
            (choice[1], choice[0]) if isinstance(choice[1], list) else (None, choice[1])
            for choice in field.choices
        )
    ]


def test_credential_page_offers_only_its_organizations_accounts(client):
    sign_in_support(client)
    organization = OrganizationFactory()
    own = AccountFactory(organization=organization, name="Own Motors")
    AccountFactory(name="Somebody Else's Dealer")
    credential, _ = issue_credential(organization)

    page = client.get(url("apicredential", "change", credential.pk))

    assert offered_accounts(page) == ["Own Motors"]
    assert "Somebody Else" not in page.content.decode()
    assert own.name in page.content.decode()


def test_credential_page_refuses_a_foreign_account_with_the_services_message(client):
    sign_in_support(client)
    organization = OrganizationFactory()
    own = AccountFactory(organization=organization)
    foreign = AccountFactory(name="Somebody Else's Dealer")
    credential, key = issue_credential(organization, accounts=[own])
    data = form_data(
        client.get(url("apicredential", "change", credential.pk)), "apicredential_form"
    )
    data["accounts"] = [str(own.pk), str(foreign.pk)]

    response = client.post(url("apicredential", "change", credential.pk), data)

    assert response.status_code == 200
    assert response.context["adminform"].form.errors["accounts"] == [
        "A credential can only be narrowed to accounts of its own organization. "
        f"Not accounts of {organization.name}: Somebody Else's Dealer."
    ]
    assert list(credential.accounts.all()) == [own]
    assert api_credential_for_key(key=key) == credential


def test_credential_page_narrows_and_widens_through_the_service(client):
    sign_in_support(client)
    organization = OrganizationFactory()
    first = AccountFactory(organization=organization)
    second = AccountFactory(organization=organization)
    credential, _ = issue_credential(organization, accounts=[first])
    data = form_data(
        client.get(url("apicredential", "change", credential.pk)), "apicredential_form"
    )

    narrowed = client.post(
        url("apicredential", "change", credential.pk),
        {**data, "accounts": [str(second.pk)], "name": "CRM"},
    )
    narrowed_to = list(credential.accounts.all())
    widened = client.post(
        url("apicredential", "change", credential.pk), typed(data, {"accounts": None})
    )

    assert narrowed.status_code == 302
    assert narrowed_to == [second]
    assert widened.status_code == 302
    assert not credential.accounts.exists()
    credential.refresh_from_db()
    assert credential.name == ""


def test_credential_add_page_for_a_chosen_organization_offers_only_its_accounts(client):
    sign_in_support(client)
    organization = OrganizationFactory(name="Demo Motors Group")
    AccountFactory(organization=organization, name="Demo Motors North")
    AccountFactory(
        organization=OrganizationFactory(name="Other Group"), name="Elsewhere"
    )

    link = f"{url('apicredential', 'add')}?organization={organization.pk}"

    organization_page = client.get(url("organization", "change", organization.pk))
    chosen = client.get(link)
    not_yet = client.get(url("apicredential", "add"))

    assert link in organization_page.content.decode()
    assert chosen.context["adminform"].form["organization"].value() == str(
        organization.pk
    )

    assert offered_accounts(chosen) == ["Demo Motors North"]
    # Before an organization is chosen, every account is listed under its organization.
    assert offered_accounts(not_yet) == [
        ("Demo Motors Group", ["Demo Motors North"]),
        ("Other Group", ["Elsewhere"]),
    ]
    assert '<optgroup label="Other Group">' in not_yet.content.decode()


def test_credential_add_refuses_a_foreign_account_then_offers_only_the_organizations(
    client,
):
    sign_in_support(client)
    organization = OrganizationFactory(name="Demo Motors Group")
    AccountFactory(organization=organization, name="Demo Motors North")
    foreign = AccountFactory(name="Elsewhere")
    data = form_data(client.get(url("apicredential", "add")), "apicredential_form")
    data = typed(data, {"organization": str(organization.pk), "api_user": "crm"})
    data["accounts"] = [str(foreign.pk)]

    response = client.post(url("apicredential", "add"), data)

    assert response.status_code == 200
    assert response.context["adminform"].form.errors["accounts"] == [
        "A credential can only be narrowed to accounts of its own organization. "
        "Not accounts of Demo Motors Group: Elsewhere."
    ]
    assert offered_accounts(response) == ["Demo Motors North"]
    assert not ApiCredential.objects.filter(api_user="crm").exists()
    assert not ApiKey.objects.exists()


def test_issuing_the_first_scored_data_key_does_not_promise_a_grace_period(
    admin_client,
):
    account = AccountFactory()
    confirm = admin_client.get(url("account", "issue_key", account.pk))

    page = confirm.content.decode()
    assert "This account has no scored-data key yet: the new key works at once." in page
    assert "keeps working" not in page

    issue_scored_data_key(account)
    page = admin_client.get(url("account", "issue_key", account.pk)).content.decode()
    assert "current key keeps working for 24 hours" in page


def test_a_credential_whose_keys_were_all_revoked_is_told_the_new_key_works_at_once(
    admin_client,
):
    credential, _ = issue_credential(OrganizationFactory())
    ApiKey.objects.filter(credential=credential).update(revoked_at=timezone.now())

    page = admin_client.get(url("apicredential", "issue_key", credential.pk))

    assert "no working key yet: the new key works at once" in page.content.decode()
