"""Support's overview on the admin index: counts from the selectors, each linking to the list
it counts, in a fixed number of queries."""

from datetime import UTC, datetime, timedelta

import lxml.html
import pytest
from django.urls import reverse
from django.utils import timezone

from accounts.models import ApiKey, ScoredDataKey
from calls.models import Call, CallAttempt, CallStatus, Leg
from leads.models import Lead, Operator, RuleAction
from leads.services import lead_receive
from tests.accounts.factories import (
    AccountFactory,
    OrganizationFactory,
    issue_credential,
    issue_scored_data_key,
)
from tests.admin_pages import sign_in_support
from tests.leads.factories import VendorRegistrationFactory, adf, rule_with

pytestmark = pytest.mark.django_db

INDEX = reverse("admin:index")


def overview_rows(response, module: str) -> list[tuple[str, int, str]]:
    """(label, count, link) of each row of one part of the overview."""
    page = lxml.html.fromstring(response.content.decode())
    table = page.get_element_by_id(module)
    return [
        (
            row.find("th/a").text_content().strip(),
            int(row.find("td").text_content()),
            row.find("th/a").get("href"),
        )
        for row in table.iter("tr")
    ]


def counts(rows) -> dict[str, int]:
    return {label: count for label, count, _ in rows}


def listed(client, link: str) -> int:
    """How many rows the list a link of the overview leads to shows."""
    response = client.get(link)
    # 200, not Django's redirect to "?e=1" for a filter the list does not understand.
    assert response.status_code == 200, link
    return response.context["cl"].result_count


# --- leads


def receive_leads(capture) -> None:
    """Leads of every outcome in the last 24 hours, and one older lead that must not count."""
    organization = OrganizationFactory()
    credential, _ = issue_credential(organization)
    account = AccountFactory(organization=organization)
    registration = VendorRegistrationFactory(account=account)
    rule_with(
        account,
        ("provider/name", Operator.EQUALS, "DNP"),
        action=RuleAction.DO_NOT_PROCESS,
        priority=10,
    )
    rule_with(account, ("prospect/requesttype", Operator.EQUALS, "sales"), priority=20)
    vendor = registration.vendor_id
    documents = [
        adf(prospect_id="A-1", vendor_id=vendor),
        adf(prospect_id="A-2", vendor_id=vendor),
        adf(prospect_id="A-1", vendor_id=vendor),  # duplicate
        adf(prospect_id="N-1", vendor_id="UNKNOWN"),  # no vendor
        adf(prospect_id="N-2", vendor_id="UNKNOWN"),  # no vendor
        adf(prospect_id="R-1", vendor_id=vendor, request_type="service"),  # no rule
        adf(prospect_id="D-1", vendor_id=vendor, provider_name="DNP"),
        adf(prospect_id="P-9", vendor_id=vendor, phone=""),  # no phone
        adf(prospect_id="", vendor_id=vendor),  # no prospect id
        "<adf><prospect>",  # malformed
        "<adf><lead/></adf>",  # not ADF
        adf(prospect_id="OLD", vendor_id="UNKNOWN"),
    ]
    with capture():
        for document in documents:
            lead_receive(credential=credential, raw_xml=document)
    Lead.objects.filter(prospect_id="OLD").update(
        received_at=timezone.now() - timedelta(hours=25)
    )
    # Stored, not processed yet (its task has not run).
    Lead.objects.create(organization=organization, raw_xml="<adf/>")


def test_overview_counts_leads_received_and_refused_by_reason_with_links(
    client, django_capture_on_commit_callbacks
):
    sign_in_support(client)
    receive_leads(django_capture_on_commit_callbacks)

    rows = overview_rows(client.get(INDEX), "overview-leads")

    assert counts(rows) == {
        "Received": 12,
        "Accepted (called)": 2,
        "Duplicate": 1,
        "Not processed yet": 1,
        "Refused (not called)": 8,
        "No vendor": 2,
        "No rule": 1,
        "Do not process": 1,
        "No phone": 1,
        "No prospect id": 1,
        "Malformed": 1,
        "Not ADF": 1,
    }
    # Every link opens the leads list filtered to exactly what it counts.
    assert {label: listed(client, link) for label, _, link in rows} == counts(rows)


def test_leads_list_filters_on_the_last_24_hours(client, tenant):
    sign_in_support(client)
    recent = Lead.objects.create(organization=tenant.organization, raw_xml="<adf/>")
    old = Lead.objects.create(organization=tenant.organization, raw_xml="<adf/>")
    Lead.objects.filter(pk=old.pk).update(
        received_at=timezone.now() - timedelta(days=2)
    )

    response = client.get(reverse("admin:leads_lead_changelist"), {"received": "24h"})
    week = client.get(reverse("admin:leads_lead_changelist"), {"received": "7d"})

    assert list(response.context["cl"].result_list) == [recent]
    assert set(week.context["cl"].result_list) == {recent, old}


# --- calls


def call(account, status, *, age: timedelta, **fields) -> Call:
    """A call queued ``age`` ago."""
    now = timezone.now()
    made = Call.objects.create(
        account=account,
        status=status,
        received_at=now - age,
        phone="+13035550123",
        **fields,
    )
    Call.objects.filter(pk=made.pk).update(created_at=now - age)
    return made


def leg(of: Call, *, age: timedelta, **moments: timedelta) -> CallAttempt:
    """An agent leg created ``age`` ago; ``moments`` are how long ago its events came."""
    now = timezone.now()
    attempt = CallAttempt.objects.create(
        call=of,
        leg=Leg.AGENT,
        number="+13035554001",
        provider="simulator",
        **{name: now - ago for name, ago in moments.items()},
    )
    CallAttempt.objects.filter(pk=attempt.pk).update(created_at=now - age)
    return attempt


def place_calls() -> dict[str, Call]:
    account = AccountFactory()
    now = timezone.now()
    minutes = lambda n: timedelta(minutes=n)  # noqa: E731
    calls = {
        "fresh": call(account, CallStatus.QUEUED, age=minutes(1)),
        "waiting for the schedule": call(
            account,
            CallStatus.QUEUED,
            age=minutes(60),
            next_attempt_at=now + minutes(30),
        ),
        "retry just due": call(
            account,
            CallStatus.QUEUED,
            age=minutes(30),
            next_attempt_at=now - minutes(2),
        ),
        "retry overdue": call(
            account,
            CallStatus.QUEUED,
            age=minutes(30),
            next_attempt_at=now - minutes(6),
        ),
        "never picked up": call(account, CallStatus.QUEUED, age=minutes(8)),
        "dialing, ringing now": call(account, CallStatus.DIALING, age=minutes(20)),
        "dialing, just set up": call(account, CallStatus.DIALING, age=minutes(1)),
        "dialing, silent": call(account, CallStatus.DIALING, age=minutes(40)),
        "failed": call(
            account, CallStatus.FAILED, age=minutes(70), ended_at=now - minutes(60)
        ),
        "failed long ago": call(
            account,
            CallStatus.FAILED,
            age=timedelta(days=2),
            ended_at=now - timedelta(days=2),
        ),
        "no agent": call(
            account, CallStatus.NOAGENT, age=minutes(200), ended_at=now - minutes(180)
        ),
        "answered": call(
            account, CallStatus.ANSWER, age=minutes(50), ended_at=now - minutes(45)
        ),
    }
    leg(
        calls["dialing, ringing now"],
        age=minutes(20),
        dial_requested_at=minutes(1),
        ringing_at=minutes(1),
    )
    leg(
        calls["dialing, silent"],
        age=minutes(40),
        dial_requested_at=minutes(39),
        ringing_at=minutes(15),
    )
    return calls


def test_overview_counts_calls_queued_dialing_stuck_and_ended_badly_with_links(client):
    sign_in_support(client)
    calls = place_calls()

    response = client.get(INDEX)
    now_rows = overview_rows(response, "overview-calls-now")
    ended_rows = overview_rows(response, "overview-calls-ended")

    assert counts(now_rows) == {
        "Queued": 5,
        "Dialing": 3,
        "Stuck": 3,
        "Queued, due more than 5 minutes ago": 2,
        "Dialing, no event for 10 minutes": 1,
    }
    assert counts(ended_rows) == {"Failed": 1, "No agent": 1}
    assert {
        label: listed(client, link) for label, _, link in now_rows + ended_rows
    } == (counts(now_rows) | counts(ended_rows))
    stuck_link = {label: link for label, _, link in now_rows}["Stuck"]
    assert set(client.get(stuck_link).context["cl"].result_list) == {
        calls["retry overdue"],
        calls["never picked up"],
        calls["dialing, silent"],
    }


# --- keys


def test_overview_lists_the_keys_used_most_recently_in_the_users_timezone(client):
    sign_in_support(client, tz="America/Denver")
    organization = OrganizationFactory(name="North Group")
    account = AccountFactory(organization=organization, name="Demo Motors North")
    crm, _ = issue_credential(organization, api_user="crm-north")
    issue_credential(organization, api_user="never-used")
    issue_scored_data_key(account)
    used = datetime(2026, 11, 22, 16, 14, 3, tzinfo=UTC)
    ApiKey.objects.filter(credential=crm).update(last_used_at=used)
    ScoredDataKey.objects.filter(account=account).update(
        last_used_at=used + timedelta(minutes=5)
    )

    page = lxml.html.fromstring(client.get(INDEX).content.decode())

    table = page.get_element_by_id("overview-keys")
    rows = [
        [" ".join(cell.text_content().split()) for cell in row.findall("td")]
        for row in table.iter("tr")
        if row.findall("td")
    ]
    scored_prefix = ScoredDataKey.objects.get().prefix
    crm_prefix = ApiKey.objects.get(credential=crm).prefix
    assert rows == [
        [
            "Scored-data key",
            "Demo Motors North",
            "North Group",
            f"{scored_prefix}…",
            "2026-11-22 09:19:03 MST",
            "yes",
        ],
        [
            "API key",
            "crm-north",
            "North Group",
            f"{crm_prefix}…",
            "2026-11-22 09:14:03 MST",
            "yes",
        ],
    ]
    links = [a.get("href") for a in table.iter("a")]
    assert links == [
        reverse("admin:accounts_account_change", args=[account.pk]),
        reverse("admin:accounts_apicredential_change", args=[crm.pk]),
    ]


def test_overview_key_headers_are_kept_on_one_line(client):
    # Django's dashboard.css lets a module table's headers break inside words, and
    # "Usable" broke into three lines (tests/pages/test_admin_tables.py sees it in Chromium).
    sign_in_support(client)
    account = AccountFactory()
    issue_scored_data_key(account)
    ScoredDataKey.objects.update(last_used_at=timezone.now())

    page = lxml.html.fromstring(client.get(INDEX).content.decode())

    headers = page.get_element_by_id("overview-keys").xpath(".//thead//th")
    assert [header.text_content() for header in headers][-1] == "Usable"
    style = " ".join(" ".join(page.xpath("//style/text()")).split())
    assert "#support-overview thead th { width: auto; white-space: nowrap; }" in style


# --- the page


def test_overview_sits_above_the_app_list(client):
    sign_in_support(client)

    page = client.get(INDEX).content.decode()

    assert page.index('id="support-overview"') < page.index('id="content-main"')
    assert 'class="app-leads module' in page
    assert 'class="app-calls module' in page


def test_staff_without_those_permissions_see_only_the_app_list(client, tenant):
    from django.contrib.auth.models import Permission

    user = sign_in_support(client)
    user.user_permissions.set(
        Permission.objects.filter(content_type__app_label="users")
    )
    Lead.objects.create(organization=tenant.organization, raw_xml="<adf/>")

    response = client.get(INDEX)

    assert response.status_code == 200
    assert response.context["overview"] == {}
    assert 'id="support-overview"' not in response.content.decode()
    assert 'class="app-users module' in response.content.decode()


def test_overview_is_read_in_a_fixed_number_of_queries(
    client, django_assert_max_num_queries, django_capture_on_commit_callbacks
):
    sign_in_support(client)
    for _ in range(3):
        receive_leads(django_capture_on_commit_callbacks)
        place_calls()
        organization = OrganizationFactory()
        issue_credential(organization)
        issue_scored_data_key(AccountFactory(organization=organization))
    ApiKey.objects.update(last_used_at=timezone.now())
    ScoredDataKey.objects.update(last_used_at=timezone.now())

    # Session, user, its permissions (2), the sidebar's log: Django's. The overview: leads
    # by outcome (1), calls (1), webhook endpoints and deliveries (2), transcriptions (1),
    # effects and sweep items set aside (2), numbers of several organizations and their
    # accounts (2), texts to them not routed (1), the two kinds of keys (2), however many
    # rows there are.
    with django_assert_max_num_queries(17):
        response = client.get(INDEX)

    assert response.status_code == 200
    assert counts(overview_rows(response, "overview-leads"))["Received"] == 36
