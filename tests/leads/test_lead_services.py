"""Lead services directly: re-processing, re-running after a configuration fix, the sweep,
and the branches HTTP cannot reach."""

from datetime import timedelta

import pytest
from django.utils import timezone

from accounts.models import Account
from calls.models import Call
from leads.adf import MAX_ADF_BYTES, parse_adf
from leads.models import Lead, Operator, Outcome, RuleAction
from leads.services import (
    Answer,
    lead_phone,
    lead_process,
    lead_receive,
    leads_rerun,
    leads_sweep,
)
from tests.leads.factories import (
    VendorRegistrationFactory,
    adf,
    adf_many,
    catch_all_rule,
    rule_with,
)

pytestmark = pytest.mark.django_db

VENDOR_ID = "DLR-42"
SUCCESS = "Lead received successfully."
NO_VENDOR = "No active account found!"
NO_RULE = "No parsing rule was found on the account for this lead."
DO_NOT_PROCESS = "Lead was successfully parsed as a Do Not Process lead."


def document(**overrides):
    overrides.setdefault("vendor_id", VENDOR_ID)
    return adf(**overrides)


def accepted(lead_id):
    return {"result": "Success", "leadId": lead_id, "message": SUCCESS}


def receive(tenant, xml):
    return lead_receive(credential=tenant.credential, raw_xml=xml)


def stored(tenant, xml, **fields):
    """A lead as the request stores it before processing (outcome "received")."""
    return Lead.objects.create(
        organization=tenant.organization,
        credential=tenant.credential,
        raw_xml=xml,
        **fields,
    )


def age(lead, seconds):
    Lead.objects.filter(pk=lead.pk).update(
        received_at=timezone.now() - timedelta(seconds=seconds)
    )


@pytest.fixture
def intake(tenant):
    VendorRegistrationFactory(account=tenant.account, vendor_id=VENDOR_ID)
    tenant.rule = catch_all_rule(tenant.account)
    return tenant


# --- lead_receive -----------------------------------------------------------------------------


def test_receive_answers_accepted_and_queues_the_call(
    intake, django_capture_on_commit_callbacks
):
    with django_capture_on_commit_callbacks() as callbacks:
        answer = receive(intake, document())

    lead = Lead.objects.get()
    assert answer == Answer(200, accepted(lead.pk))
    assert lead.call == Call.objects.get()
    assert len(callbacks) == 1


def test_receive_refuses_a_document_over_one_mib_with_413(intake):
    """The request body limit usually refuses these first; the parser's limit still holds."""
    xml = document(extra_customer="<whisper>" + "x" * MAX_ADF_BYTES + "</whisper>")

    answer = receive(intake, xml)

    assert answer == Answer(413, {"reason": "The XML document is larger than 1 MiB."})
    lead = Lead.objects.get()
    assert lead.outcome == Outcome.MALFORMED
    assert lead.raw_xml == xml
    assert lead.response_status == 413


def test_receive_counts_multibyte_characters_as_their_utf8_size(intake):
    xml = document(
        extra_customer="<whisper>" + "é" * (MAX_ADF_BYTES // 2) + "</whisper>"
    )
    assert len(xml) < MAX_ADF_BYTES < len(xml.encode())

    answer = receive(intake, xml)

    assert answer.status == 413


# --- lead_process -----------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("overrides", "outcome", "status"),
    [
        ({}, Outcome.ACCEPTED, 200),
        ({"phone": ""}, Outcome.NO_PHONE, 200),
        ({"provider_name": "DNP"}, Outcome.DO_NOT_PROCESS, 200),
    ],
)
def test_processing_a_processed_lead_again_answers_the_same_and_queues_nothing(
    intake, django_capture_on_commit_callbacks, overrides, outcome, status
):
    rule_with(
        intake.account,
        ("provider/name", Operator.EQUALS, "DNP"),
        priority=1,
        action=RuleAction.DO_NOT_PROCESS,
    )
    first = receive(intake, document(**overrides))
    lead = Lead.objects.get()
    assert lead.outcome == outcome

    with django_capture_on_commit_callbacks() as callbacks:
        again = lead_process(lead=lead)
        fresh = lead_process(lead=Lead.objects.get(pk=lead.pk))

    assert again == fresh == first
    assert again.status == status
    assert callbacks == []
    assert Call.objects.count() == (1 if outcome == Outcome.ACCEPTED else 0)
    lead.refresh_from_db()
    assert lead.outcome == outcome


def test_processing_a_duplicate_again_keeps_it_a_duplicate(
    intake, django_capture_on_commit_callbacks
):
    receive(intake, document())
    receive(intake, document())
    duplicate = Lead.objects.get(outcome=Outcome.DUPLICATE)
    original = Lead.objects.get(outcome=Outcome.ACCEPTED)

    with django_capture_on_commit_callbacks() as callbacks:
        answer = lead_process(lead=duplicate)

    assert answer == Answer(200, {**accepted(original.pk), "duplicate": True})
    assert callbacks == []
    assert Call.objects.count() == 1


def test_processing_a_stale_copy_of_a_processed_lead_queues_no_second_call(
    intake, django_capture_on_commit_callbacks
):
    lead = stored(intake, document())
    stale = Lead.objects.get(pk=lead.pk)
    lead_process(lead=lead)

    with django_capture_on_commit_callbacks() as callbacks:
        answer = lead_process(lead=stale)

    assert answer == Answer(200, accepted(lead.pk))
    assert callbacks == []
    assert Call.objects.count() == 1


def test_processing_a_lead_whose_prospect_is_gone_marks_it_malformed(intake):
    lead = stored(intake, document(), prospect_index=3)

    answer = lead_process(lead=lead)

    assert answer.status == 400
    lead.refresh_from_db()
    assert lead.outcome == Outcome.MALFORMED


def test_processing_a_lead_whose_credential_was_deleted_finds_no_vendor(intake):
    lead = stored(intake, document())
    lead.credential = None

    answer = lead_process(lead=lead)

    assert answer == Answer(422, {"reason": NO_VENDOR})
    assert not Call.objects.exists()


def test_processing_accepts_an_already_parsed_prospect(intake):
    lead = stored(intake, "<adf>not what was parsed</adf>")

    answer = lead_process(lead=lead, parsed=parse_adf(document())[0])

    assert answer == Answer(200, accepted(lead.pk))
    assert Call.objects.get().altid == "P-1"


# --- leads_rerun ------------------------------------------------------------------------------


def test_rerun_accepts_a_no_vendor_lead_once_support_registers_the_vendor(
    tenant, django_capture_on_commit_callbacks
):
    catch_all_rule(tenant.account)
    assert receive(tenant, document()) == Answer(422, {"reason": NO_VENDOR})
    lead = Lead.objects.get()
    VendorRegistrationFactory(account=tenant.account, vendor_id=VENDOR_ID)

    with django_capture_on_commit_callbacks() as callbacks:
        counts = leads_rerun(leads=[lead])

    assert counts == {Outcome.ACCEPTED: 1}
    lead.refresh_from_db()
    assert lead.outcome == Outcome.ACCEPTED
    assert lead.account == tenant.account
    assert lead.response_status == 200
    assert lead.response_body == accepted(lead.pk)
    assert lead.call == Call.objects.get()
    assert lead.call.received_at == lead.received_at
    assert len(callbacks) == 1


def test_rerun_accepts_a_no_rule_lead_once_support_adds_a_rule(
    tenant, django_capture_on_commit_callbacks
):
    VendorRegistrationFactory(account=tenant.account, vendor_id=VENDOR_ID)
    assert receive(tenant, document()) == Answer(422, {"reason": NO_RULE})
    lead = Lead.objects.get()
    rule = catch_all_rule(tenant.account, department="Sales")

    with django_capture_on_commit_callbacks() as callbacks:
        counts = leads_rerun(leads=[lead])

    assert counts == {Outcome.ACCEPTED: 1}
    lead.refresh_from_db()
    assert (lead.outcome, lead.matched_rule) == (Outcome.ACCEPTED, rule)
    assert lead.call is not None
    assert lead.call.department == "Sales"
    assert len(callbacks) == 1


def test_rerun_reports_outcome_counts(tenant, django_capture_on_commit_callbacks):
    catch_all_rule(tenant.account)
    VendorRegistrationFactory(account=tenant.account, vendor_id="DLR-OLD")
    receive(tenant, document(vendor_id="DLR-OLD", prospect_id="P-9"))
    receive(tenant, document(prospect_id="P-1"))
    receive(tenant, document(prospect_id="P-1"))
    receive(tenant, document(vendor_id="DLR-UNKNOWN"))
    receive(tenant, "<adf><prospect>")
    receive(tenant, document(prospect_id=""))
    VendorRegistrationFactory(account=tenant.account, vendor_id=VENDOR_ID)

    with django_capture_on_commit_callbacks() as callbacks:
        counts = leads_rerun(leads=list(Lead.objects.order_by("pk")))

    assert counts == {
        Outcome.ACCEPTED: 2,
        Outcome.DUPLICATE: 1,
        Outcome.NO_VENDOR: 1,
        Outcome.MALFORMED: 1,
        Outcome.NO_PROSPECT_ID: 1,
    }
    assert sorted(Call.objects.values_list("altid", flat=True)) == ["P-1", "P-9"]
    assert len(callbacks) == 1
    first, second = Lead.objects.filter(
        vendor_id=VENDOR_ID, prospect_id="P-1"
    ).order_by("pk")
    assert second.duplicate_of == first


def test_rerun_of_nothing_counts_nothing(db):
    assert leads_rerun(leads=[]) == {}


# --- leads_sweep ------------------------------------------------------------------------------


def test_sweep_processes_a_stuck_lead_and_leaves_a_fresh_one(
    intake, django_capture_on_commit_callbacks
):
    stuck = stored(intake, document(prospect_id="P-OLD"))
    age(stuck, 120)
    fresh = stored(intake, document(prospect_id="P-NEW"))

    with django_capture_on_commit_callbacks() as callbacks:
        count = leads_sweep()

    assert count == 1
    stuck.refresh_from_db()
    fresh.refresh_from_db()
    assert stuck.outcome == Outcome.ACCEPTED
    assert stuck.response_body == accepted(stuck.pk)
    assert stuck.call.altid == "P-OLD"
    assert fresh.outcome == Outcome.RECEIVED
    assert fresh.processed_at is None
    assert len(callbacks) == 1


def test_sweep_honours_its_threshold(intake):
    lead = stored(intake, document())
    age(lead, 20)

    assert leads_sweep() == 0
    assert leads_sweep(older_than=timedelta(seconds=10)) == 1
    lead.refresh_from_db()
    assert lead.outcome == Outcome.ACCEPTED


def test_sweep_leaves_processed_leads_alone(tenant, django_capture_on_commit_callbacks):
    catch_all_rule(tenant.account)
    receive(tenant, document())
    lead = Lead.objects.get()
    assert lead.outcome == Outcome.NO_VENDOR
    age(lead, 3600)
    VendorRegistrationFactory(account=tenant.account, vendor_id=VENDOR_ID)

    with django_capture_on_commit_callbacks() as callbacks:
        assert leads_sweep() == 0

    lead.refresh_from_db()
    assert lead.outcome == Outcome.NO_VENDOR
    assert callbacks == []


def test_sweep_processes_each_stuck_prospect_of_a_document(intake):
    xml = adf_many(document(prospect_id="P-1"), document(prospect_id="P-2"))
    first = stored(intake, xml)
    age(first, 60)
    age(stored(intake, xml, prospect_index=1, document=first), 60)

    assert leads_sweep() == 2

    assert sorted(Call.objects.values_list("altid", flat=True)) == ["P-1", "P-2"]


def test_sweep_stores_the_prospects_a_dead_request_never_stored(intake):
    xml = adf_many(
        document(prospect_id="P-1"),
        document(prospect_id="P-2"),
        document(prospect_id="P-3"),
    )
    age(
        stored(intake, xml), 60
    )  # the request died after storing the document's first lead

    assert leads_sweep() == 3

    assert sorted(Call.objects.values_list("altid", flat=True)) == ["P-1", "P-2", "P-3"]
    assert Lead.objects.filter(document__isnull=False).count() == 2


# --- lead_phone -------------------------------------------------------------------------------


def lead_with_phones(*phones):
    contact = "".join(
        f'<phone type="{kind}">{number}</phone>' for kind, number in phones
    )
    return parse_adf(
        f"<prospect><customer><contact>{contact}</contact></customer></prospect>"
    )[0]


@pytest.mark.parametrize(
    ("country", "phones", "e164"),
    [
        ("US", [("voice", "(303) 555-0123")], "+13035550123"),
        ("US", [("cellphone", "1-303-555-0123")], "+13035550123"),
        ("CA", [("voice", "514 555 0100")], "+15145550100"),
        ("GB", [("voice", "020 7946 0018")], "+442079460018"),
        ("GB", [("voice", "+1 303 555 0123")], "+13035550123"),
        ("US", [("fax", "303-555-0123"), ("voice", "303-555-0124")], "+13035550124"),
        ("US", [], ""),
        ("US", [("voice", "")], ""),
        ("US", [("voice", "555-0100")], ""),
        ("US", [("voice", "1")], ""),
        ("US", [("voice", "++--1")], ""),
        ("US", [("fax", "303-555-0123")], ""),
    ],
)
def test_lead_phone_reads_national_numbers_in_the_account_country(
    country, phones, e164
):
    assert lead_phone(lead_with_phones(*phones), Account(country=country)) == e164
