"""The rule tester's dry run (``leads.trial.lead_trial``) and real intake agree: the same
account and the same rule for every prospect, because both decide with the same functions."""

from pathlib import Path

import pytest

from leads.adf import AdfError, parse_adf
from leads.models import Lead, Operator, Outcome
from leads.services import lead_receive
from leads.trial import lead_trial
from tests.leads.factories import (
    VendorRegistrationFactory,
    adf,
    adf_many,
    catch_all_rule,
    rule_with,
)

pytestmark = pytest.mark.django_db

SAMPLES = Path(__file__).resolve().parents[3] / "shared" / "adf-samples"


def configure(tenant, document: str) -> None:
    """Registrations for every vendor of the document on the tenant's account, and rules
    that send service requests, leads with a vehicle and everything else different ways
    (behind an inactive catch-all that comes first)."""
    try:
        prospects = parse_adf(document)
    except AdfError:
        prospects = []
    vendors = {(p.vendor.id, p.vendor.name) for p in prospects}
    for vendor_id, vendor_name in vendors:
        if not (vendor_id or vendor_name):
            continue
        VendorRegistrationFactory(
            account=tenant.account, vendor_id=vendor_id, vendor_name=vendor_name
        )
    for account in (tenant.account, tenant.other_account):
        catch_all_rule(account, priority=1, is_active=False, name="Switched off")
        rule_with(
            account,
            ("prospect/requesttype", Operator.EQUALS, "service"),
            priority=10,
            name="Service",
        )
        rule_with(
            account,
            ("vehicle/make", Operator.PRESENT, ""),
            priority=20,
            name="Has a make",
        )
        catch_all_rule(account)


def assert_agree(tenant, document: str):
    trial = lead_trial(
        raw_xml=document, organization=None, credential=tenant.credential
    )
    lead_receive(credential=tenant.credential, raw_xml=document)
    leads = list(Lead.objects.order_by("id"))
    if trial.error:
        assert [lead.outcome for lead in leads] in (
            [Outcome.MALFORMED],
            [Outcome.NOT_ADF],
        )
        return trial
    assert len(trial.prospects) == len(leads)
    for prospect, lead in zip(trial.prospects, leads, strict=True):
        if lead.outcome == Outcome.NO_PROSPECT_ID:
            # Intake stops before routing; the tester still shows where it would go.
            assert prospect.outcome == Outcome.NO_PROSPECT_ID.label
            continue
        assert prospect.account == lead.account
        assert prospect.rule == lead.matched_rule
    return trial


@pytest.mark.parametrize(
    "sample", sorted(p.name for p in SAMPLES.glob("*.xml")), ids=str
)
def test_trial_and_intake_agree_on_every_sample(tenant, sample):
    document = (SAMPLES / sample).read_text(encoding="utf-8", errors="replace")
    configure(tenant, document)

    assert_agree(tenant, document)


@pytest.mark.parametrize(
    ("document", "rules"),
    [
        (adf(request_type="service"), ["Service"]),
        (adf(request_type="sales"), ["Has a make"]),
        (adf(vendor_id="", vendor_name="vendor 0"), ["Has a make"]),
        (adf(vendor_id="UNREGISTERED"), [None]),
        (
            adf_many(
                adf(prospect_id="A"), adf(prospect_id="B", request_type="service")
            ),
            ["Has a make", "Service"],
        ),
    ],
    ids=["service", "sales", "by-name", "unregistered", "two-prospects"],
)
def test_trial_and_intake_agree_on_routing_and_rule(tenant, document, rules):
    configure(tenant, adf())

    trial = assert_agree(tenant, document)

    assert [p.rule.name if p.rule else None for p in trial.prospects] == rules


def test_trial_and_intake_agree_when_the_credential_does_not_reach_the_account(
    tenant,
):
    configure(tenant, adf())
    tenant.credential.accounts.set([tenant.other_account])

    trial = lead_trial(raw_xml=adf(), organization=None, credential=tenant.credential)
    lead_receive(credential=tenant.credential, raw_xml=adf())

    assert Lead.objects.get().account is None
    assert trial.prospects[0].account is None
    assert "does not reach" in trial.prospects[0].account_why
