"""Intake reads vendor registrations and rules from the shared cache; every change to
them (a rule, a condition, a registration, an account or team) reaches the next lead, and
the cache never routes one organization's or credential's lead by another's."""

import pytest
from rest_framework.test import APIClient

from leads.models import Lead, Outcome, RuleAction
from tests.accounts.factories import issue_credential
from tests.leads.factories import (
    RuleConditionFactory,
    VendorRegistrationFactory,
    adf,
    catch_all_rule,
)
from tests.texting.conftest import texting_on

pytestmark = pytest.mark.django_db

_count = [0]


def post(headers, vendor_id="V-1", request_type="sales"):
    """Post a lead; its status and the lead stored for it."""
    _count[0] += 1
    xml = adf(
        vendor_id=vendor_id,
        prospect_id=f"P-{_count[0]}",
        request_type=request_type,
    )
    response = APIClient().post("/api/nl", {"xml": xml, **headers})
    return response.status_code, Lead.objects.latest("id")


def outcome(headers, **lead):
    status, stored = post(headers, **lead)
    return status, stored.outcome


@pytest.fixture
def routed(tenant):
    registration = VendorRegistrationFactory(account=tenant.account, vendor_id="V-1")
    rule = catch_all_rule(tenant.account)
    return registration, rule


def test_a_second_lead_reads_no_registration_or_rule(
    tenant, routed, django_assert_num_queries
):
    post(tenant.headers)  # caches the key, the registration and the rules
    # The lead stored; in one transaction (a savepoint here): the call and the lead's
    # outcome, and the lead's consent in the consent ledger; nothing for routing. The last
    # query is this test's own read of the lead.
    with django_assert_num_queries(7):
        status, stored = post(tenant.headers)
    assert status == 200
    assert stored.outcome == Outcome.ACCEPTED


def test_a_rule_changed_or_deleted_routes_the_next_lead(tenant, routed):
    _, rule = routed
    assert outcome(tenant.headers) == (200, Outcome.ACCEPTED)

    rule.action = RuleAction.DO_NOT_PROCESS
    rule.save()
    assert outcome(tenant.headers) == (200, Outcome.DO_NOT_PROCESS)

    RuleConditionFactory(rule=rule, field="prospect/requesttype", value="service")
    assert (
        outcome(tenant.headers)[1] == Outcome.NO_RULE
    )  # a sales lead no longer matches

    rule.delete()
    assert outcome(tenant.headers, request_type="service")[1] == Outcome.NO_RULE


def test_a_registration_or_account_switched_off_routes_the_next_lead(tenant, routed):
    registration, _ = routed
    assert outcome(tenant.headers) == (200, Outcome.ACCEPTED)

    registration.is_active = False
    registration.save()
    assert outcome(tenant.headers)[1] == Outcome.NO_VENDOR

    registration.is_active = True
    registration.save()
    assert outcome(tenant.headers) == (200, Outcome.ACCEPTED)

    tenant.account.is_active = False
    tenant.account.save()
    assert outcome(tenant.headers)[1] == Outcome.NO_VENDOR


def test_one_vendor_id_in_two_organizations_never_crosses(tenant, other_tenant, routed):
    assert outcome(tenant.headers) == (200, Outcome.ACCEPTED)  # cached for the first
    assert outcome(other_tenant.headers)[1] == Outcome.NO_VENDOR

    VendorRegistrationFactory(account=other_tenant.account, vendor_id="V-1")
    catch_all_rule(other_tenant.account)
    status, stored = post(other_tenant.headers)
    assert status == 200
    assert stored.account == other_tenant.account
    status, stored = post(tenant.headers)
    assert stored.account == tenant.account


def test_a_narrowed_credential_is_routed_within_its_reach_only(tenant, routed):
    assert outcome(tenant.headers) == (200, Outcome.ACCEPTED)  # the wide one, cached
    credential, key = issue_credential(
        tenant.organization, accounts=[tenant.other_account]
    )
    narrowed = {"apiuser": credential.api_user, "apikey": key}
    assert outcome(narrowed)[1] == Outcome.NO_VENDOR


def test_texting_settings_changed_reach_the_next_leads_instant_text(
    tenant, routed, django_capture_on_commit_callbacks
):
    """The account's texting settings come from the shared cache (an account without any
    is cached as such): switching texting on, then off, reaches the very next lead."""
    from texting.models import Purpose, Text

    def instant_texts(lead):
        return list(
            Text.objects.filter(call=lead.call, purpose=Purpose.INSTANT).values_list(
                "body", flat=True
            )
        )

    with django_capture_on_commit_callbacks(execute=True):
        _, before = post(tenant.headers)
    config = texting_on(
        tenant.account, instant_enabled=True, instant_template="Hi {first_name}!"
    )
    with django_capture_on_commit_callbacks(execute=True):
        _, on = post(tenant.headers)
    config.enabled = False
    config.save()
    with django_capture_on_commit_callbacks(execute=True):
        _, off = post(tenant.headers)

    assert (instant_texts(before), instant_texts(on), instant_texts(off)) == (
        [],
        ["Hi Maria!"],
        [],
    )
