"""Lead intake (interface C) through HTTP: status, whole body, and the leads and calls left behind."""

import time
import urllib.parse
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from threading import Barrier

import pytest
from django.db import connection
from rest_framework.test import APIClient

from accounts.services import api_credential_revoke
from calls.models import Call, CallOrigin, CallStatus, LeadType
from leads.adf import AdfError, parse_adf
from leads.models import Lead, Operator, Outcome, RuleAction
from tests.accounts.factories import AccountFactory, TeamFactory, issue_credential
from tests.leads.factories import (
    VendorRegistrationFactory,
    adf,
    adf_many,
    catch_all_rule,
    rule_with,
)

pytestmark = pytest.mark.django_db

URL = "/api/nl"
VENDOR_ID = "DLR-42"
VENDOR_NAME = "Front Range Toyota"

SUCCESS = "Lead received successfully."
SUCCESS_NO_PHONE = (
    "Lead received successfully. It has no usable phone number, so no call was set up."
)
NO_POST_DATA = "No POST data received. This endpoint expects POST data."
USER_BLANK = "API Username cannot be blank"
KEY_BLANK = "API Key cannot be blank"
NO_ACCOUNT = "No account found with the given API username/password. Please check your credentials and try again."
XML_BLANK = "XML cannot be blank"
MALFORMED = (
    "Unable to parse XML. Please check that the XML is well-formed and try again."
)
NO_VENDOR = "No active account found!"
NO_RULE = "No parsing rule was found on the account for this lead."
DO_NOT_PROCESS = "Lead was successfully parsed as a Do Not Process lead."
NO_PROSPECT_ID = "The lead has no prospect id."
NOT_ADF = "The document is not an ADF lead: no adf/prospect element."
TOO_LARGE = "The request body is larger than 1 MiB."

WHISPER = "Sales lead. New 2025 Toyota Camry. Call after 5."
CALL_NOTES = "\n".join(
    [
        "Request type: sales",
        f"Vendor: {VENDOR_NAME}",
        "Vehicle status: New",
        "Year: 2025",
        "Make: Toyota",
        "Model: Camry",
        "Body style: Sedan",
        "Vehicle comments: Blue please",
        "URL: https://crm.example.com/lead/1",
        "Customer comments: Can I test drive Saturday?",
    ]
)

SAMPLES = Path(__file__).resolve().parents[3] / "shared" / "adf-samples"


def document(**overrides):
    """The factory's lead, sent for the registered vendor."""
    overrides.setdefault("vendor_id", VENDOR_ID)
    overrides.setdefault("vendor_name", VENDOR_NAME)
    return adf(**overrides)


def post_lead(tenant, xml, **fields):
    """Post a lead the documented way: xml, apiuser and apikey as multipart form fields."""
    return APIClient().post(URL, {"xml": xml, **tenant.headers, **fields})


def post_raw(tenant, body, content_type="application/xml"):
    """Post the document as the request body, apiuser and apikey as headers."""
    return tenant.client().post(URL, body, content_type=content_type)


def accepted(lead_id, message=SUCCESS):
    return {"result": "Success", "leadId": lead_id, "message": message}


def reason(text):
    return {"reason": text}


@pytest.fixture
def intake(tenant):
    """The tenant's first account takes the vendor's leads; one catch-all rule routes them to Sales."""
    tenant.registration = VendorRegistrationFactory(
        account=tenant.account, vendor_id=VENDOR_ID, vendor_name=VENDOR_NAME
    )
    tenant.rule = catch_all_rule(tenant.account, team=tenant.teams[0])
    return tenant


def only_lead():
    (lead,) = Lead.objects.all()
    return lead


# --- accepted ---------------------------------------------------------------------------------


def test_accepted_lead_answers_success_and_queues_one_call(
    intake, django_capture_on_commit_callbacks
):
    xml = document(extra_customer="<whisper>Call after 5</whisper>")

    with django_capture_on_commit_callbacks() as callbacks:
        response = post_lead(intake, xml)

    assert response.status_code == 200
    assert response["Content-Type"] == "application/json; charset=utf-8"
    lead = only_lead()
    assert response.json() == accepted(lead.pk)
    assert len(callbacks) == 1
    assert lead.outcome == Outcome.ACCEPTED
    assert lead.reason == SUCCESS
    assert lead.raw_xml == xml
    assert lead.organization == intake.organization
    assert lead.credential == intake.credential
    assert lead.account == intake.account
    assert lead.matched_rule == intake.rule
    assert lead.vendor_id == VENDOR_ID
    assert lead.vendor_name == VENDOR_NAME
    assert lead.prospect_id == "P-1"
    assert lead.prospect_source == "CRM"
    assert lead.prospect_index == 0
    assert lead.whisper == WHISPER
    assert lead.call_notes == CALL_NOTES
    assert lead.is_test is False
    assert lead.processed_at is not None
    assert lead.response_status == 200
    assert lead.response_body == accepted(lead.pk)
    call = lead.call
    assert list(Call.objects.all()) == [call]
    assert call.status == CallStatus.QUEUED
    assert call.origin == CallOrigin.LEAD
    assert call.account == intake.account
    assert call.team == intake.teams[0]
    assert call.is_test is False
    assert call.received_at == lead.received_at
    assert call.altid == "P-1"
    assert call.source == "Web Form"
    assert call.first_name == "Maria"
    assert call.last_name == "Lopez"
    assert call.email == "maria@example.com"
    assert call.phone == "+13035550123"
    assert call.whisper == WHISPER
    assert call.call_notes == CALL_NOTES
    assert call.lead_type == "New"
    assert call.department == ""
    assert call.called_on_make == "Toyota"
    assert call.called_on_model == "Camry"
    assert call.called_on_year == "2025"
    assert call.called_on_registration == ""
    assert call.called_on_summary == "Blue please"
    assert call.current_make == "Honda"
    assert call.current_model == "Civic"
    assert call.current_year == "2015"
    assert call.current_registration == ""
    assert call.current_summary == ""
    assert call.agent is None
    assert call.attempts == 0


def test_accepted_lead_copies_plate_and_trade_in_comments_to_the_call(intake):
    xml = """<adf><prospect>
      <id source="CRM">P-9</id><requesttype>Internet lead</requesttype>
      <vehicle interest="trade-in"><year>2012</year><make>Ford</make><model>Focus</model>
        <license_plate>OLD 123</license_plate><comments>Scratched door</comments></vehicle>
      <vehicle interest="buy" status="used"><year>2021</year><make>Mazda</make><model>CX-5</model>
        <license_plate>NEW 456</license_plate></vehicle>
      <customer><contact><name part="full">Ann Lee Smith</name><phone>303 555 0177</phone></contact></customer>
      <vendor><id>DLR-42</id><vendorname>Front Range Toyota</vendorname></vendor>
    </prospect></adf>"""

    response = post_lead(intake, xml)

    assert response.status_code == 200
    lead = only_lead()
    assert response.json() == accepted(lead.pk)
    assert lead.whisper == "Internet lead. Used 2021 Mazda CX-5, plate NEW 456."
    call = lead.call
    assert (call.first_name, call.last_name, call.email) == ("Ann", "Lee Smith", "")
    assert call.source == VENDOR_NAME
    assert call.lead_type == "Used"
    assert (call.called_on_registration, call.called_on_summary) == ("NEW 456", "")
    assert (call.current_make, call.current_model, call.current_year) == (
        "Ford",
        "Focus",
        "2012",
    )
    assert (call.current_registration, call.current_summary) == (
        "OLD 123",
        "Scratched door",
    )


def test_urlencoded_body_is_accepted(intake):
    xml = document()
    body = urllib.parse.urlencode({"xml": xml, **intake.headers})

    response = APIClient().post(
        URL, body, format=None, content_type="application/x-www-form-urlencoded"
    )

    assert response.status_code == 200
    lead = only_lead()
    assert response.json() == accepted(lead.pk)
    assert lead.raw_xml == xml
    assert Call.objects.get().phone == "+13035550123"


def test_credentials_as_headers_are_accepted(intake):
    response = intake.client().post(URL, {"xml": document()})

    assert response.status_code == 200
    lead = only_lead()
    assert response.json() == accepted(lead.pk)
    assert lead.credential == intake.credential


def test_credentials_as_headers_with_urlencoded_body(intake):
    body = urllib.parse.urlencode({"xml": document()})

    response = intake.client().post(
        URL, body, format=None, content_type="application/x-www-form-urlencoded"
    )

    assert response.status_code == 200
    assert response.json() == accepted(only_lead().pk)


@pytest.mark.parametrize(
    ("country", "phone", "e164"),
    [
        ("US", "(303) 555-0123", "+13035550123"),
        ("US", "303.555.0123", "+13035550123"),
        ("US", "+1 303 555 0123", "+13035550123"),
        ("GB", "020 7946 0018", "+442079460018"),
        ("GB", "+44 161 496 0123", "+441614960123"),
    ],
)
def test_phone_is_read_in_the_account_country(tenant, country, phone, e164):
    account = AccountFactory(organization=tenant.organization, country=country)
    VendorRegistrationFactory(account=account, vendor_id=VENDOR_ID)
    catch_all_rule(account)

    response = post_lead(tenant, document(phone=phone))

    assert response.status_code == 200
    assert response.json() == accepted(only_lead().pk)
    assert Call.objects.get().phone == e164


@pytest.mark.parametrize(
    ("phone", "note"),
    [
        ("", "no phone element"),
        ("555-0100", "too short for the account's country"),
        ("123-456-7890", "no such area code"),
        ("call me", "no digits"),
    ],
)
def test_lead_without_usable_phone_is_accepted_without_a_call(
    intake, django_capture_on_commit_callbacks, phone, note
):
    with django_capture_on_commit_callbacks() as callbacks:
        response = post_lead(intake, document(phone=phone))

    assert response.status_code == 200, note
    lead = only_lead()
    assert response.json() == accepted(lead.pk, SUCCESS_NO_PHONE)
    assert lead.outcome == Outcome.NO_PHONE
    assert lead.reason == SUCCESS_NO_PHONE
    assert lead.matched_rule == intake.rule
    assert lead.call is None
    assert not Call.objects.exists()
    assert callbacks == []


def test_fax_number_is_not_called(intake):
    xml = document(phone="", extra_customer="")
    xml = xml.replace("<email>", '<phone type="fax">303-555-0123</phone><email>', 1)

    response = post_lead(intake, xml)

    assert response.json() == accepted(only_lead().pk, SUCCESS_NO_PHONE)
    assert not Call.objects.exists()


def test_test_account_is_processed_and_marked_as_test(
    intake, django_capture_on_commit_callbacks
):
    intake.account.is_test = True
    intake.account.save(update_fields=["is_test"])

    with django_capture_on_commit_callbacks() as callbacks:
        response = post_lead(intake, document())

    assert response.status_code == 200
    lead = only_lead()
    assert response.json() == accepted(lead.pk)
    assert lead.is_test is True
    assert lead.outcome == Outcome.ACCEPTED
    assert lead.call.is_test is True
    assert lead.call.status == CallStatus.QUEUED
    assert len(callbacks) == 1


# --- duplicates -------------------------------------------------------------------------------


def test_same_lead_again_answers_the_first_body_marked_duplicate(
    intake, django_capture_on_commit_callbacks
):
    xml = document()
    first = post_lead(intake, xml)
    first_lead = only_lead()

    with django_capture_on_commit_callbacks() as callbacks:
        again = post_lead(intake, xml)

    assert first.json() == accepted(first_lead.pk)
    assert again.status_code == 200
    assert again.json() == {**accepted(first_lead.pk), "duplicate": True}
    assert callbacks == []
    assert Call.objects.count() == 1
    second_lead = Lead.objects.exclude(pk=first_lead.pk).get()
    assert second_lead.outcome == Outcome.DUPLICATE
    assert second_lead.duplicate_of == first_lead
    assert second_lead.call is None
    assert second_lead.raw_xml == xml
    assert second_lead.response_body == {**accepted(first_lead.pk), "duplicate": True}


def test_duplicate_matches_vendor_name_case_insensitively(intake):
    """Without a vendor id the name identifies the vendor, whatever its case."""
    post_lead(intake, document(vendor_id=""))

    again = post_lead(intake, document(vendor_id="", vendor_name=VENDOR_NAME.upper()))

    first_lead = Lead.objects.get(outcome=Outcome.ACCEPTED)
    assert again.json() == {**accepted(first_lead.pk), "duplicate": True}
    assert Call.objects.count() == 1


def test_duplicate_of_a_lead_without_phone_answers_its_body(
    intake, django_capture_on_commit_callbacks
):
    post_lead(intake, document(phone=""))
    first_lead = only_lead()

    with django_capture_on_commit_callbacks() as callbacks:
        again = post_lead(intake, document(phone=""))

    assert again.json() == {
        **accepted(first_lead.pk, SUCCESS_NO_PHONE),
        "duplicate": True,
    }
    assert callbacks == []


def test_duplicate_answers_the_first_even_when_the_new_copy_has_a_phone(intake):
    post_lead(intake, document(phone=""))

    again = post_lead(intake, document())

    first_lead = Lead.objects.get(outcome=Outcome.NO_PHONE)
    assert again.json() == {
        **accepted(first_lead.pk, SUCCESS_NO_PHONE),
        "duplicate": True,
    }
    assert not Call.objects.exists()


@pytest.mark.parametrize(
    "changed",
    [
        {"source": "OtherCRM"},
        {"source": ""},
        {"prospect_id": "P-2"},
    ],
)
def test_lead_with_other_source_or_prospect_id_is_not_a_duplicate(intake, changed):
    post_lead(intake, document())

    response = post_lead(intake, document(**changed))

    second = Lead.objects.order_by("-pk").first()
    assert second is not None
    assert response.json() == accepted(second.pk)
    assert second.outcome == Outcome.ACCEPTED
    assert Call.objects.count() == 2


def test_same_prospect_from_another_vendor_is_not_a_duplicate(intake):
    VendorRegistrationFactory(
        account=intake.account, vendor_id="DLR-43", vendor_name="Second Lot"
    )
    post_lead(intake, document())

    response = post_lead(intake, document(vendor_id="DLR-43", vendor_name="Second Lot"))

    second = Lead.objects.order_by("-pk").first()
    assert second is not None
    assert response.json() == accepted(second.pk)
    assert Call.objects.count() == 2


def test_same_prospect_for_another_account_is_not_a_duplicate(intake):
    VendorRegistrationFactory(
        account=intake.other_account, vendor_id="DLR-77", vendor_name="Other Lot"
    )
    catch_all_rule(intake.other_account)
    post_lead(intake, document())

    response = post_lead(intake, document(vendor_id="DLR-77", vendor_name="Other Lot"))

    second = Lead.objects.order_by("-pk").first()
    assert second is not None
    assert response.json() == accepted(second.pk)
    assert second.account == intake.other_account
    assert sorted(Call.objects.values_list("account_id", flat=True)) == sorted(
        [intake.account.pk, intake.other_account.pk]
    )


def test_lead_refused_for_configuration_is_not_remembered_as_processed(intake):
    """A lead refused for missing configuration is not a duplicate once support fixes it."""
    xml = document(vendor_id="DLR-NEW", vendor_name="New Lot")
    assert post_lead(intake, xml).json() == reason(NO_VENDOR)
    VendorRegistrationFactory(account=intake.account, vendor_id="DLR-NEW")

    response = post_lead(intake, xml)

    second = Lead.objects.order_by("-pk").first()
    assert second is not None
    assert response.json() == accepted(second.pk)
    assert Call.objects.count() == 1


@pytest.mark.django_db(transaction=True)
def test_concurrent_copies_of_a_lead_set_up_one_call(tenant, monkeypatch):
    """Six copies race in; the unique dedupe key lets one through and the rest answer it."""
    VendorRegistrationFactory(
        account=tenant.account, vendor_id=VENDOR_ID, vendor_name=VENDOR_NAME
    )
    catch_all_rule(tenant.account)
    dispatched = []
    # The hand-over would enqueue a Celery task once each transaction commits; record it instead.
    monkeypatch.setattr(
        "calls.pipeline.broker.dispatch_setup",
        lambda call_id, at=None, **_: dispatched.append(call_id),
    )
    xml = document()
    start = Barrier(6)

    def send(_):
        try:
            start.wait(timeout=10)
            response = post_lead(tenant, xml)
            return response.status_code, response.json()
        finally:
            connection.close()

    with ThreadPoolExecutor(max_workers=6) as pool:
        answers = list(pool.map(send, range(6)))

    winner = Lead.objects.get(outcome=Outcome.ACCEPTED)
    assert (
        sorted(answers, key=lambda a: "duplicate" in a[1])
        == [(200, accepted(winner.pk))]
        + [(200, {**accepted(winner.pk), "duplicate": True})] * 5
    )
    assert Lead.objects.count() == 6
    assert (
        Lead.objects.filter(outcome=Outcome.DUPLICATE, duplicate_of=winner).count() == 5
    )
    assert list(Call.objects.values_list("pk", flat=True)) == [winner.call_id]
    assert dispatched == [winner.call_id]


# --- several prospects ------------------------------------------------------------------------


def test_each_prospect_becomes_its_own_lead(intake, django_capture_on_commit_callbacks):
    xml = adf_many(
        document(prospect_id="P-1"),
        document(prospect_id="P-2", phone="303-555-0124"),
        document(prospect_id="P-3", phone=""),
    )

    with django_capture_on_commit_callbacks() as callbacks:
        response = post_lead(intake, xml)

    leads = list(Lead.objects.order_by("prospect_index"))
    assert [lead.prospect_index for lead in leads] == [0, 1, 2]
    assert response.status_code == 200
    assert response.json() == {
        **accepted(leads[0].pk),
        "leadIds": [lead.pk for lead in leads],
    }
    assert [lead.prospect_id for lead in leads] == ["P-1", "P-2", "P-3"]
    assert [lead.outcome for lead in leads] == [
        Outcome.ACCEPTED,
        Outcome.ACCEPTED,
        Outcome.NO_PHONE,
    ]
    assert all(lead.raw_xml == xml for lead in leads)
    assert sorted(Call.objects.values_list("altid", "phone")) == [
        ("P-1", "+13035550123"),
        ("P-2", "+13035550124"),
    ]
    assert len(callbacks) == 2


def test_several_prospects_answer_the_first_leads_outcome(intake):
    xml = adf_many(
        document(prospect_id=""),
        document(prospect_id="P-2"),
    )

    response = post_lead(intake, xml)

    leads = list(Lead.objects.order_by("prospect_index"))
    assert response.status_code == 422
    assert response.json() == {
        **reason(NO_PROSPECT_ID),
        "leadIds": [lead.pk for lead in leads],
    }
    assert [lead.outcome for lead in leads] == [
        Outcome.NO_PROSPECT_ID,
        Outcome.ACCEPTED,
    ]
    assert Call.objects.get().altid == "P-2"


# --- GET, credentials, size -------------------------------------------------------------------


@pytest.mark.parametrize("with_credentials", [False, True])
def test_get_answers_404_and_stores_nothing(intake, with_credentials):
    client = intake.client() if with_credentials else APIClient()

    response = client.get(URL, {"xml": document()})

    assert response.status_code == 404
    assert response["Content-Type"] == "application/json; charset=utf-8"
    assert response.json() == reason(NO_POST_DATA)
    assert not Lead.objects.exists()


@pytest.mark.parametrize(
    ("fields", "expected"),
    [
        ({}, USER_BLANK),
        ({"apiuser": "", "apikey": "KEY", "xml": "XML"}, USER_BLANK),
        ({"apiuser": "   ", "apikey": "KEY", "xml": "XML"}, USER_BLANK),
        ({"apikey": "", "xml": ""}, USER_BLANK),
        ({"apikey": "KEY"}, USER_BLANK),
        ({"apiuser": "USER", "xml": "XML"}, KEY_BLANK),
        ({"apiuser": "USER", "apikey": "", "xml": "XML"}, KEY_BLANK),
        ({"apiuser": "USER", "apikey": "  ", "xml": ""}, KEY_BLANK),
        ({"apiuser": "USER", "apikey": "KEY"}, XML_BLANK),
        ({"apiuser": "USER", "apikey": "KEY", "xml": ""}, XML_BLANK),
        ({"apiuser": "USER", "apikey": "KEY", "xml": " \n\t "}, XML_BLANK),
    ],
)
def test_blank_members_are_refused_in_the_documented_order(intake, fields, expected):
    real = {"USER": intake.credential.api_user, "KEY": intake.key, "XML": document()}
    data = {name: real.get(value, value) for name, value in fields.items()}

    response = APIClient().post(URL, data)

    assert response.status_code == 403
    assert response.json() == reason(expected)
    assert not Lead.objects.exists()
    assert not Call.objects.exists()


def test_blank_members_are_refused_in_an_urlencoded_body(intake):
    body = urllib.parse.urlencode({"apiuser": "", "apikey": "", "xml": ""})

    response = APIClient().post(
        URL, body, format=None, content_type="application/x-www-form-urlencoded"
    )

    assert response.status_code == 403
    assert response.json() == reason(USER_BLANK)


@pytest.mark.parametrize(
    "credentials",
    [
        "wrong key",
        "malformed key",
        "other user",
        "unknown user",
        "other tenant's key",
        "revoked key",
    ],
)
@pytest.mark.parametrize("with_xml", [True, False])
def test_wrong_credentials_are_refused_before_the_xml_is_looked_at(
    intake, other_tenant, credentials, with_xml
):
    api_user, key = intake.credential.api_user, intake.key
    if credentials == "wrong key":
        key = key[:-4] + ("0000" if not key.endswith("0000") else "1111")
    elif credentials == "malformed key":
        key = "not-a-key"
    elif credentials == "other user":
        api_user = other_tenant.credential.api_user
    elif credentials == "unknown user":
        api_user = "nobody"
    elif credentials == "other tenant's key":
        key = other_tenant.key
    else:
        api_credential_revoke(credential=intake.credential)
    data = {"apiuser": api_user, "apikey": key}
    if with_xml:
        data["xml"] = document()

    response = APIClient().post(URL, data)

    assert response.status_code == 403
    assert response.json() == reason(NO_ACCOUNT)
    assert not Lead.objects.exists()


@pytest.mark.parametrize(
    ("headers", "expected"),
    [
        ({}, USER_BLANK),
        ({"HTTP_APIUSER": "USER"}, KEY_BLANK),
        ({"HTTP_APIKEY": "KEY"}, USER_BLANK),
        ({"HTTP_APIUSER": "USER", "HTTP_APIKEY": "nope"}, NO_ACCOUNT),
    ],
)
def test_header_credentials_are_checked_like_form_fields(intake, headers, expected):
    real = {"USER": intake.credential.api_user, "KEY": intake.key}
    client = APIClient()
    client.credentials(**{name: real.get(v, v) for name, v in headers.items()})

    response = client.post(URL, {"xml": document()})

    assert response.status_code == 403
    assert response.json() == reason(expected)
    assert not Lead.objects.exists()


def test_form_field_and_header_may_be_mixed(intake):
    client = APIClient()
    client.credentials(HTTP_APIKEY=intake.key)

    response = client.post(
        URL, {"xml": document(), "apiuser": intake.credential.api_user}
    )

    assert response.json() == accepted(only_lead().pk)


def test_body_over_one_mib_is_refused_with_413(intake):
    padding = "x" * (1024 * 1024)
    xml = document(extra_customer=f"<whisper>{padding}</whisper>")

    response = post_lead(intake, xml)

    assert response.status_code == 413
    assert response.json() == reason("The request body is larger than 1 MiB.")
    assert not Lead.objects.exists()
    assert not Call.objects.exists()


def test_urlencoded_body_over_one_mib_is_refused_with_413(intake):
    body = urllib.parse.urlencode(
        {"xml": document(extra_customer="<whisper>" + "é" * 200_000 + "</whisper>")}
    )
    assert len(body) > 1024 * 1024

    response = intake.client().post(
        URL, body, format=None, content_type="application/x-www-form-urlencoded"
    )

    assert response.status_code == 413
    assert response.json() == reason("The request body is larger than 1 MiB.")
    assert not Lead.objects.exists()


# --- malformed and hostile documents ---------------------------------------------------------


@pytest.mark.parametrize(
    "xml",
    [
        "<adf><prospect><id>1</id></prospect>",
        "this is not xml",
        "<adf><prospect></adf>",
        "<html><body>lead</html>",
        '{"prospect": {"id": 1}}',
    ],
)
def test_malformed_document_is_stored_and_answered_400(intake, xml):
    response = post_lead(intake, xml)

    assert response.status_code == 400
    assert response.json() == reason(MALFORMED)
    lead = only_lead()
    assert lead.outcome == Outcome.MALFORMED
    assert lead.raw_xml == xml
    assert lead.reason != ""
    assert lead.response_status == 400
    assert lead.account is None
    assert not Call.objects.exists()


BILLION_LAUGHS = """<?xml version="1.0"?>
<!DOCTYPE lolz [
 <!ENTITY lol "lol">
 <!ENTITY lol2 "&lol;&lol;&lol;&lol;&lol;&lol;&lol;&lol;&lol;&lol;">
 <!ENTITY lol3 "&lol2;&lol2;&lol2;&lol2;&lol2;&lol2;&lol2;&lol2;&lol2;&lol2;">
 <!ENTITY lol4 "&lol3;&lol3;&lol3;&lol3;&lol3;&lol3;&lol3;&lol3;&lol3;&lol3;">
 <!ENTITY lol5 "&lol4;&lol4;&lol4;&lol4;&lol4;&lol4;&lol4;&lol4;&lol4;&lol4;">
 <!ENTITY lol6 "&lol5;&lol5;&lol5;&lol5;&lol5;&lol5;&lol5;&lol5;&lol5;&lol5;">
 <!ENTITY lol7 "&lol6;&lol6;&lol6;&lol6;&lol6;&lol6;&lol6;&lol6;&lol6;&lol6;">
 <!ENTITY lol8 "&lol7;&lol7;&lol7;&lol7;&lol7;&lol7;&lol7;&lol7;&lol7;&lol7;">
 <!ENTITY lol9 "&lol8;&lol8;&lol8;&lol8;&lol8;&lol8;&lol8;&lol8;&lol8;&lol8;">
]>
<adf><prospect><id>P-1</id><customer><comments>&lol9;</comments></customer>
<vendor><id>DLR-42</id></vendor></prospect></adf>"""

XXE = """<?xml version="1.0"?>
<!DOCTYPE x [<!ENTITY e SYSTEM "file:///etc/passwd">]>
<adf><prospect><id>P-1</id><customer><contact><name part="full">&e;</name>
<phone>303-555-0123</phone></contact><comments>&e;</comments></customer>
<vendor><id>DLR-42</id></vendor></prospect></adf>"""

EXTERNAL_DTD = """<?xml version="1.0"?>
<!DOCTYPE adf SYSTEM "http://127.0.0.1:9/adf.dtd">
<adf><prospect><id>P-1</id><vendor><id>DLR-42</id></vendor></prospect></adf>"""


@pytest.fixture
def handed_to_lxml(monkeypatch):
    """Every document the parser hands to lxml (a hostile one must never be)."""
    from lxml import etree

    from leads.adf import guards as adf_guards

    handed: list[bytes | str] = []

    class Lxml:
        def __getattr__(self, name):
            return getattr(etree, name)

        def fromstring(self, body, parser=None):
            handed.append(body)
            return etree.fromstring(body, parser)

    monkeypatch.setattr(adf_guards, "etree", Lxml())
    return handed


@pytest.mark.parametrize(
    "xml",
    [BILLION_LAUGHS, XXE, EXTERNAL_DTD],
    ids=["billion-laughs", "xxe", "external-dtd"],
)
def test_hostile_document_is_refused_and_stored_as_malformed(
    intake, xml, handed_to_lxml
):
    # Refused by the DOCTYPE check, before lxml reads a byte: no entity is expanded.
    response = post_lead(intake, xml)

    assert handed_to_lxml == []
    assert response.status_code == 400
    assert response.json() == reason(MALFORMED)
    assert b"root:" not in response.content
    lead = only_lead()
    assert lead.outcome == Outcome.MALFORMED
    assert lead.raw_xml == xml
    assert "root:" not in lead.reason
    assert lead.parsed is None
    assert not Call.objects.exists()


# --- stored first -----------------------------------------------------------------------------


def dnp_then_sales(account):
    """The account registered for VENDOR_ID, with a Do Not Process rule for provider DNP
    first and a rule for sales leads after it."""
    VendorRegistrationFactory(account=account, vendor_id=VENDOR_ID)
    rule_with(
        account,
        ("provider/name", Operator.EQUALS, "DNP"),
        priority=1,
        action=RuleAction.DO_NOT_PROCESS,
    )
    rule_with(account, ("prospect/requesttype", Operator.EQUALS, "sales"), priority=2)


@pytest.mark.parametrize(
    ("xml", "status", "outcome"),
    [
        (document(), 200, Outcome.ACCEPTED),
        (document(phone=""), 200, Outcome.NO_PHONE),
        (document(vendor_id="DLR-0"), 422, Outcome.NO_VENDOR),
        (document(request_type="service"), 422, Outcome.NO_RULE),
        (document(provider_name="DNP"), 200, Outcome.DO_NOT_PROCESS),
        (document(prospect_id=""), 422, Outcome.NO_PROSPECT_ID),
        ("<adf><prospect>", 400, Outcome.MALFORMED),
    ],
)
def test_every_authenticated_lead_is_stored_with_its_raw_xml(
    tenant, xml, status, outcome
):
    dnp_then_sales(tenant.account)

    response = post_lead(tenant, xml)

    assert response.status_code == status
    lead = only_lead()
    assert lead.raw_xml == xml
    assert lead.outcome == outcome
    assert lead.organization == tenant.organization
    assert lead.credential == tenant.credential
    assert lead.response_status == status
    assert lead.response_body == response.json()


# --- vendor routing ---------------------------------------------------------------------------


def test_unregistered_vendor_is_refused_with_422(
    intake, django_capture_on_commit_callbacks
):
    with django_capture_on_commit_callbacks() as callbacks:
        response = post_lead(intake, document(vendor_id="DLR-99", vendor_name="Nobody"))

    assert response.status_code == 422
    assert response.json() == reason(NO_VENDOR)
    lead = only_lead()
    assert lead.outcome == Outcome.NO_VENDOR
    assert lead.reason == NO_VENDOR
    assert lead.account is None
    assert lead.matched_rule is None
    assert (lead.vendor_id, lead.vendor_name) == ("DLR-99", "Nobody")
    assert lead.prospect_id == "P-1"
    assert not Call.objects.exists()
    assert callbacks == []


def test_lead_without_any_vendor_is_refused_with_422(intake):
    xml = document(vendor_id="", vendor_name="")

    response = post_lead(intake, xml)

    assert response.status_code == 422
    assert response.json() == reason(NO_VENDOR)
    assert only_lead().outcome == Outcome.NO_VENDOR


@pytest.mark.parametrize(
    "sent_name", [VENDOR_NAME, VENDOR_NAME.upper(), "front range toyota"]
)
def test_vendor_is_found_by_name_when_the_id_is_absent(tenant, sent_name):
    VendorRegistrationFactory(
        account=tenant.account, vendor_id="", vendor_name=VENDOR_NAME
    )
    catch_all_rule(tenant.account)

    response = post_lead(tenant, document(vendor_id="", vendor_name=sent_name))

    assert response.status_code == 200
    lead = only_lead()
    assert response.json() == accepted(lead.pk)
    assert lead.account == tenant.account


def test_vendor_is_found_by_id_whatever_the_name(intake):
    response = post_lead(intake, document(vendor_name="Some Other Name"))

    assert response.json() == accepted(only_lead().pk)
    assert Call.objects.get().source == "Web Form"


def test_a_vendor_registered_by_name_alone_takes_its_leads_whatever_their_id(tenant):
    """Support registers "the vendor name or vendor ID", and every ADF lead has an id."""
    VendorRegistrationFactory(
        account=tenant.account, vendor_id="", vendor_name=VENDOR_NAME
    )
    catch_all_rule(tenant.account)

    response = post_lead(tenant, document(vendor_id="DLR-99"))

    assert response.status_code == 200
    lead = only_lead()
    assert response.json() == accepted(lead.pk)
    assert lead.account == tenant.account


def test_a_vendor_registered_with_another_id_does_not_take_a_lead_by_its_name(tenant):
    VendorRegistrationFactory(
        account=tenant.account, vendor_id=VENDOR_ID, vendor_name=VENDOR_NAME
    )
    catch_all_rule(tenant.account)

    response = post_lead(tenant, document(vendor_id="DLR-99"))

    assert response.status_code == 422
    assert response.json() == reason(NO_VENDOR)
    assert only_lead().account is None


def test_the_id_s_registration_wins_over_a_registration_by_name_alone(tenant):
    by_name = AccountFactory(organization=tenant.organization)
    VendorRegistrationFactory(account=by_name, vendor_id="", vendor_name=VENDOR_NAME)
    VendorRegistrationFactory(
        account=tenant.account, vendor_id=VENDOR_ID, vendor_name="Another Name"
    )
    catch_all_rule(tenant.account)
    catch_all_rule(by_name)

    by_id = post_lead(tenant, document())
    by_its_name = post_lead(tenant, document(vendor_id="DLR-99", prospect_id="P-2"))

    assert (by_id.status_code, by_its_name.status_code) == (200, 200)
    first, second = Lead.objects.order_by("id")
    assert (first.account, second.account) == (tenant.account, by_name)


def test_inactive_registration_is_refused(intake):
    intake.registration.is_active = False
    intake.registration.save(update_fields=["is_active"])

    response = post_lead(intake, document())

    assert response.status_code == 422
    assert response.json() == reason(NO_VENDOR)
    assert only_lead().outcome == Outcome.NO_VENDOR
    assert not Call.objects.exists()


def test_inactive_account_is_refused(intake):
    intake.account.is_active = False
    intake.account.save(update_fields=["is_active"])

    response = post_lead(intake, document())

    assert response.status_code == 422
    assert response.json() == reason(NO_VENDOR)
    assert only_lead().account is None
    assert not Call.objects.exists()


def test_vendor_registered_only_in_another_organization_is_not_found(
    tenant, other_tenant, django_capture_on_commit_callbacks
):
    VendorRegistrationFactory(
        account=other_tenant.account, vendor_id=VENDOR_ID, vendor_name=VENDOR_NAME
    )
    catch_all_rule(other_tenant.account)

    with django_capture_on_commit_callbacks() as callbacks:
        response = post_lead(tenant, document())

    assert response.status_code == 422
    assert response.json() == reason(NO_VENDOR)
    lead = only_lead()
    assert lead.organization == tenant.organization
    assert lead.account is None
    assert not Call.objects.filter(
        account__organization=other_tenant.organization
    ).exists()
    assert not Call.objects.exists()
    assert callbacks == []


def test_same_vendor_id_in_two_organizations_routes_by_credential(tenant, other_tenant):
    VendorRegistrationFactory(account=tenant.account, vendor_id=VENDOR_ID)
    VendorRegistrationFactory(account=other_tenant.account, vendor_id=VENDOR_ID)
    catch_all_rule(tenant.account)
    catch_all_rule(other_tenant.account)

    response = post_lead(other_tenant, document())

    lead = only_lead()
    assert response.json() == accepted(lead.pk)
    assert lead.account == other_tenant.account
    assert Call.objects.get().account == other_tenant.account


def test_narrowed_credential_cannot_post_to_another_account_of_its_organization(tenant):
    narrowed, key = issue_credential(tenant.organization, accounts=[tenant.account])
    VendorRegistrationFactory(account=tenant.other_account, vendor_id="DLR-OTHER")
    catch_all_rule(tenant.other_account)
    VendorRegistrationFactory(account=tenant.account, vendor_id=VENDOR_ID)
    catch_all_rule(tenant.account)
    client = APIClient()
    client.credentials(HTTP_APIUSER=narrowed.api_user, HTTP_APIKEY=key)

    refused = client.post(URL, {"xml": document(vendor_id="DLR-OTHER")})
    allowed = client.post(URL, {"xml": document(prospect_id="P-2")})

    assert refused.status_code == 422
    assert refused.json() == reason(NO_VENDOR)
    refused_lead = Lead.objects.get(outcome=Outcome.NO_VENDOR)
    assert refused_lead.account is None
    assert refused_lead.credential == narrowed
    assert allowed.json() == accepted(Lead.objects.get(outcome=Outcome.ACCEPTED).pk)
    assert list(Call.objects.values_list("account_id", flat=True)) == [
        tenant.account.pk
    ]


# --- parsing rules ----------------------------------------------------------------------------


def test_no_matching_rule_is_refused_with_422(
    tenant, django_capture_on_commit_callbacks
):
    VendorRegistrationFactory(account=tenant.account, vendor_id=VENDOR_ID)
    rule_with(tenant.account, ("prospect/requesttype", Operator.EQUALS, "service"))

    with django_capture_on_commit_callbacks() as callbacks:
        response = post_lead(tenant, document())

    assert response.status_code == 422
    assert response.json() == reason(NO_RULE)
    lead = only_lead()
    assert lead.outcome == Outcome.NO_RULE
    assert lead.reason == NO_RULE
    assert lead.account == tenant.account
    assert lead.matched_rule is None
    assert not Call.objects.exists()
    assert callbacks == []


def test_account_without_rules_is_refused_with_422(tenant):
    VendorRegistrationFactory(account=tenant.account, vendor_id=VENDOR_ID)

    response = post_lead(tenant, document())

    assert response.status_code == 422
    assert response.json() == reason(NO_RULE)


def test_rules_of_another_account_do_not_apply(tenant):
    VendorRegistrationFactory(account=tenant.account, vendor_id=VENDOR_ID)
    catch_all_rule(tenant.other_account)

    response = post_lead(tenant, document())

    assert response.json() == reason(NO_RULE)


def test_only_inactive_rules_is_refused_with_422(tenant):
    VendorRegistrationFactory(account=tenant.account, vendor_id=VENDOR_ID)
    catch_all_rule(tenant.account, is_active=False)

    response = post_lead(tenant, document())

    assert response.status_code == 422
    assert response.json() == reason(NO_RULE)


def test_do_not_process_rule_answers_200_with_its_reason(
    intake, django_capture_on_commit_callbacks
):
    dnp = rule_with(
        intake.account,
        ("provider/name", Operator.EQUALS, "dnp"),
        priority=1,
        action=RuleAction.DO_NOT_PROCESS,
    )

    with django_capture_on_commit_callbacks() as callbacks:
        response = post_lead(intake, document(provider_name="DNP"))

    assert response.status_code == 200
    assert response.json() == reason(DO_NOT_PROCESS)
    lead = only_lead()
    assert lead.outcome == Outcome.DO_NOT_PROCESS
    assert lead.reason == DO_NOT_PROCESS
    assert lead.matched_rule == dnp
    assert lead.account == intake.account
    assert lead.call is None
    assert not Call.objects.exists()
    assert callbacks == []


def test_do_not_process_lead_sent_again_is_a_duplicate(intake):
    catch_all_rule(intake.account, priority=1, action=RuleAction.DO_NOT_PROCESS)
    post_lead(intake, document())

    again = post_lead(intake, document())

    assert again.status_code == 200
    assert again.json() == {**reason(DO_NOT_PROCESS), "duplicate": True}
    assert not Call.objects.exists()


def test_rules_run_in_priority_order_and_the_first_match_wins(intake):
    late = rule_with(
        intake.account,
        ("vehicle/make", Operator.EQUALS, "toyota"),
        priority=20,
        department="Late",
    )
    early = rule_with(
        intake.account,
        ("customer/email", Operator.CONTAINS, "@EXAMPLE.com"),
        priority=10,
        department="Early",
        team=intake.teams[1],
    )

    post_lead(intake, document())

    lead = only_lead()
    assert lead.matched_rule == early != late
    assert (lead.call.department, lead.call.team) == ("Early", intake.teams[1])


def test_an_inactive_rule_is_skipped(intake):
    rule_with(
        intake.account,
        ("vehicle/make", Operator.EQUALS, "toyota"),
        priority=1,
        is_active=False,
        action=RuleAction.DO_NOT_PROCESS,
    )
    second = rule_with(
        intake.account,
        ("vehicle/make", Operator.STARTS_WITH, "TOY"),
        priority=2,
        department="Sales floor",
    )

    response = post_lead(intake, document())

    lead = only_lead()
    assert response.json() == accepted(lead.pk)
    assert lead.matched_rule == second
    assert lead.call.department == "Sales floor"


def test_a_rule_with_an_unmet_condition_falls_through_to_the_catch_all(intake):
    rule_with(
        intake.account,
        ("vehicle/make", Operator.EQUALS, "toyota"),
        ("tradein/make", Operator.EQUALS, "ford"),
        priority=1,
        action=RuleAction.DO_NOT_PROCESS,
    )

    response = post_lead(intake, document())

    lead = only_lead()
    assert response.json() == accepted(lead.pk)
    assert lead.matched_rule == intake.rule


@pytest.mark.parametrize(
    ("field", "operator", "value"),
    [
        ("prospect/requesttype", Operator.EQUALS, "SALES"),
        ("provider/name", Operator.CONTAINS, "web"),
        ("vehicle/make", Operator.STARTS_WITH, "toy"),
        ("customer/email", Operator.REGEX, r"^MARIA@.*\.COM$"),
        ("vendor/vendorname", Operator.EQUALS, "front range toyota"),
        ("tradein/make", Operator.EQUALS, "HONDA"),
        ("vehicle/status", Operator.EQUALS, "NEW"),
        ("customer/phone", Operator.PRESENT, ""),
        ("vehicle/vin", Operator.ABSENT, ""),
    ],
)
def test_a_condition_on_an_adf_field_routes_the_lead(intake, field, operator, value):
    dnp = rule_with(
        intake.account,
        (field, operator, value),
        priority=1,
        action=RuleAction.DO_NOT_PROCESS,
    )

    response = post_lead(intake, document())

    assert response.json() == reason(DO_NOT_PROCESS)
    assert only_lead().matched_rule == dnp


@pytest.mark.parametrize(
    ("source_label", "provider_name", "vendor_name", "source"),
    [
        ("Billboard", "Web Form", VENDOR_NAME, "Billboard"),
        ("", "Web Form", VENDOR_NAME, "Web Form"),
        ("", "", VENDOR_NAME, VENDOR_NAME),
        ("", "", "", ""),
    ],
)
def test_call_source_is_the_rule_label_else_provider_else_vendor(
    tenant, source_label, provider_name, vendor_name, source
):
    VendorRegistrationFactory(account=tenant.account, vendor_id=VENDOR_ID)
    catch_all_rule(tenant.account, source_label=source_label)

    response = post_lead(
        tenant, document(provider_name=provider_name, vendor_name=vendor_name)
    )

    assert response.json() == accepted(only_lead().pk)
    assert Call.objects.get().source == source


def test_call_source_is_cut_to_45_characters(tenant):
    VendorRegistrationFactory(account=tenant.account, vendor_id=VENDOR_ID)
    catch_all_rule(tenant.account)

    post_lead(tenant, document(provider_name="P" * 60))

    assert Call.objects.get().source == "P" * 45


@pytest.mark.parametrize(
    ("rule_lead_type", "vehicle_status", "lead_type"),
    [
        (LeadType.NEW, "used", "New"),
        (LeadType.USED, "new", "Used"),
        ("", "new", "New"),
        ("", "used", "Used"),
        ("", "", "Used"),
    ],
)
def test_call_lead_type_is_the_rules_else_the_buy_vehicle_status(
    tenant, rule_lead_type, vehicle_status, lead_type
):
    VendorRegistrationFactory(account=tenant.account, vendor_id=VENDOR_ID)
    catch_all_rule(tenant.account, lead_type=rule_lead_type)
    xml = document().replace(
        '<vehicle interest="buy" status="new">',
        f'<vehicle interest="buy" status="{vehicle_status}">',
    )

    post_lead(tenant, xml)

    assert Call.objects.get().lead_type == lead_type


def test_call_lead_type_is_empty_without_a_buy_vehicle(tenant):
    VendorRegistrationFactory(account=tenant.account, vendor_id=VENDOR_ID)
    catch_all_rule(tenant.account)
    xml = document().replace('interest="buy" status="new"', 'interest="trade-in"')

    post_lead(tenant, xml)

    call = Call.objects.get()
    assert call.lead_type == ""
    assert (call.called_on_make, call.current_make) == ("", "Toyota")


def test_matching_rule_sets_department_team_and_source(tenant):
    VendorRegistrationFactory(account=tenant.account, vendor_id=VENDOR_ID)
    service_team = TeamFactory(account=tenant.account, name="Body shop")
    rule = rule_with(
        tenant.account,
        ("prospect/requesttype", Operator.EQUALS, "service"),
        source_label="Service web form",
        department="Service",
        lead_type=LeadType.USED,
        team=service_team,
    )
    catch_all_rule(tenant.account, team=tenant.teams[0], department="Sales")

    post_lead(tenant, document(request_type="Service"))

    lead = only_lead()
    assert lead.matched_rule == rule
    call = lead.call
    assert (call.source, call.department, call.lead_type, call.team) == (
        "Service web form",
        "Service",
        "Used",
        service_team,
    )


def test_missing_prospect_id_is_refused_with_422(
    intake, django_capture_on_commit_callbacks
):
    with django_capture_on_commit_callbacks() as callbacks:
        response = post_lead(intake, document(prospect_id=""))

    assert response.status_code == 422
    assert response.json() == reason(NO_PROSPECT_ID)
    lead = only_lead()
    assert lead.outcome == Outcome.NO_PROSPECT_ID
    assert lead.account is None
    assert not Call.objects.exists()
    assert callbacks == []


def test_blank_prospect_id_is_refused_with_422(intake):
    xml = document(prospect_id="").replace(
        "<requestdate>", '<id sequence="1" source="CRM">   </id><requestdate>'
    )

    response = post_lead(intake, xml)

    assert response.status_code == 422
    assert response.json() == reason(NO_PROSPECT_ID)


# --- rate limit and query count ---------------------------------------------------------------


def test_third_request_in_a_minute_is_rate_limited(intake, settings, one_window):
    settings.API_RATE_LIMITS = {**settings.API_RATE_LIMITS, "leads": "2/min"}
    if time.time() % 60 > 55:  # keep the three requests inside one counting window
        time.sleep(60 - time.time() % 60 + 0.1)

    statuses = [
        post_lead(intake, document(prospect_id=f"P-{n}")).status_code for n in (1, 2)
    ]
    response = post_lead(intake, document(prospect_id="P-3"))

    assert statuses == [200, 200]
    assert response.status_code == 429
    assert response.json() == reason("Too many requests. Please slow down.")
    assert 1 <= int(response["Retry-After"]) <= 60
    assert Lead.objects.count() == 2
    # The limit is per credential: another credential of the organization still gets through.
    other, key = issue_credential(intake.organization)
    client = APIClient()
    client.credentials(HTTP_APIUSER=other.api_user, HTTP_APIKEY=key)
    assert client.post(URL, {"xml": document(prospect_id="P-4")}).status_code == 200


def test_accepted_lead_pins_its_query_count(intake, django_assert_num_queries):
    # Cold: the key (and its last use stamped), the registration, the rules and their
    # conditions, the texting settings, the e-mail settings (the lead gave an address) and
    # the webhook endpoints are read and cached.
    with django_assert_num_queries(14):
        first = post_lead(intake, document(prospect_id="P-1"))
    # Warm: the lead stored; then in one transaction (a savepoint within the test's) the
    # call inserted, the lead's consent added to the consent ledger and the lead's outcome
    # written by one conditional UPDATE.
    with django_assert_num_queries(6):
        second = post_lead(intake, document(prospect_id="P-2"))

    assert first.status_code == second.status_code == 200
    assert [lead.outcome for lead in Lead.objects.order_by("id")] == [
        Outcome.ACCEPTED,
        Outcome.ACCEPTED,
    ]


# --- real-world samples -----------------------------------------------------------------------


def _parsing_samples():
    for path in sorted(SAMPLES.glob("*.xml")):
        try:
            parse_adf(path.read_bytes())
        except AdfError:
            continue
        yield pytest.param(path, id=path.stem)


@pytest.mark.parametrize("path", list(_parsing_samples()))
def test_every_parsing_sample_is_received_through_http(tenant, path):
    xml = path.read_bytes().decode("utf-8")
    prospects = parse_adf(xml)
    vendors = {
        (p.vendor.id, p.vendor.name) for p in prospects if p.vendor.id or p.vendor.name
    }
    for vendor_id, vendor_name in vendors:
        VendorRegistrationFactory(
            account=tenant.account, vendor_id=vendor_id, vendor_name=vendor_name
        )
    catch_all_rule(tenant.account)
    first = prospects[0]
    if not first.prospect_id:
        expected_status, expected_outcomes = 422, {Outcome.NO_PROSPECT_ID}
    elif not (first.vendor.id or first.vendor.name):
        expected_status, expected_outcomes = 422, {Outcome.NO_VENDOR}
    else:
        expected_status, expected_outcomes = 200, {Outcome.ACCEPTED, Outcome.NO_PHONE}

    response = post_lead(tenant, xml)

    assert response.status_code == expected_status, response.json()
    leads = list(Lead.objects.order_by("prospect_index"))
    assert [lead.prospect_id for lead in leads] == [p.prospect_id for p in prospects]
    assert leads[0].outcome in expected_outcomes
    assert all(lead.raw_xml == xml for lead in leads)
    body = response.json()
    if expected_status == 200:
        assert body["result"] == "Success"
        assert body["leadId"] == leads[0].pk
    if len(prospects) > 1:
        assert body["leadIds"] == [lead.pk for lead in leads]
    assert Call.objects.count() == Lead.objects.filter(outcome=Outcome.ACCEPTED).count()


# --- odd requests -----------------------------------------------------------------------------


def test_json_body_is_refused_with_415_in_the_reason_shape(intake):
    response = intake.client().post(URL, {"xml": document()}, format="json")

    assert response.status_code == 415
    assert response.json() == reason('Unsupported content type "application/json".')
    assert not Lead.objects.exists()


def test_a_prospect_sent_before_answers_as_a_duplicate_inside_a_batch(intake):
    """Each prospect is answered as if sent alone: a resent one reports its first lead's id."""
    post_lead(intake, document(prospect_id="P-1"))
    original = only_lead()

    response = post_lead(
        intake, adf_many(document(prospect_id="P-1"), document(prospect_id="P-2"))
    )

    resent, new = Lead.objects.exclude(pk=original.pk).order_by("prospect_index")
    assert (resent.outcome, resent.duplicate_of) == (Outcome.DUPLICATE, original)
    assert new.outcome == Outcome.ACCEPTED
    assert response.json() == {
        **accepted(original.pk),
        "duplicate": True,
        "leadIds": [original.pk, new.pk],
    }
    assert sorted(Call.objects.values_list("altid", flat=True)) == ["P-1", "P-2"]


# --- bugs -------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("prospect_id", "source"),
    [("P" * 700, "CRM"), ("P" * 255, "S" * 340)],
    ids=["long-prospect-id", "long-source"],
)
def test_long_prospect_id_or_source_is_accepted(intake, prospect_id, source):
    response = post_lead(intake, document(prospect_id=prospect_id, source=source))

    lead = only_lead()
    assert response.status_code == 200
    assert response.json() == accepted(lead.pk)
    assert lead.prospect_id == prospect_id[:255]
    assert Call.objects.get().altid == prospect_id[:255]


def test_prospect_id_and_source_are_not_confused_when_they_contain_the_separator(
    intake,
):
    post_lead(intake, document(prospect_id="7", source="A|B"))

    response = post_lead(intake, document(prospect_id="7|A", source="B"))

    second = Lead.objects.order_by("-pk").first()
    assert second is not None
    assert response.json() == accepted(second.pk)
    assert Call.objects.count() == 2


def test_document_with_a_nul_character_is_stored_and_answered_400(intake):
    xml = document().replace("Blue please", "Blue\x00please")

    response = post_lead(intake, xml)

    assert response.status_code == 400
    assert response.json() == reason(MALFORMED)
    assert only_lead().outcome == Outcome.MALFORMED


def test_lead_whose_first_phone_is_unusable_calls_the_next_usable_one(intake):
    xml = document(phone="555-0100").replace(
        "</contact>", '<phone type="cellphone">303-555-0124</phone></contact>'
    )

    response = post_lead(intake, xml)

    assert response.json() == accepted(only_lead().pk)
    assert Call.objects.get().phone == "+13035550124"


def test_xml_uploaded_as_a_file_part_is_read_like_the_field(intake):
    from django.core.files.uploadedfile import SimpleUploadedFile

    upload = SimpleUploadedFile(
        "lead.xml", document().encode(), content_type="text/xml"
    )

    response = APIClient().post(URL, {"xml": upload, **intake.headers})

    assert response.status_code == 200
    assert response.json() == accepted(only_lead().pk)


def test_a_document_with_too_many_prospects_is_refused_and_stored_as_malformed(intake):
    xml = adf_many(*(document(prospect_id=f"P-{n}") for n in range(51)))

    response = post_lead(intake, xml)

    assert response.status_code == 400
    assert response.json() == {
        "reason": "Unable to parse XML. Please check that the XML is well-formed and try again."
    }
    lead = only_lead()
    assert lead.outcome == Outcome.MALFORMED
    assert lead.reason == "The document holds more than 50 prospects."
    assert not Call.objects.exists()


# --- well-formed, but not ADF ------------------------------------------------------------------

NOT_ADF_DOCUMENTS = {
    "empty-adf": ("<adf></adf>", "The document holds no prospect."),
    "self-closed-adf": (
        '<?xml version="1.0"?>\n<adf/>',
        "The document holds no prospect.",
    ),
    "adf-without-prospect": (
        "<adf><vendor><id>DLR-42</id></vendor></adf>",
        "The document holds no prospect.",
    ),
    "html": ("<html><body>lead</body></html>", "The document is not an ADF lead."),
    "other-root": (
        '<?xml version="1.0"?><order><prospect><id>P-1</id></prospect></order>',
        "The document is not an ADF lead.",
    ),
}


@pytest.mark.parametrize("path", ["form", "body"])
@pytest.mark.parametrize("name", list(NOT_ADF_DOCUMENTS))
def test_well_formed_document_that_is_not_adf_is_stored_and_answered_422(
    intake, path, name, django_capture_on_commit_callbacks
):
    xml, detail = NOT_ADF_DOCUMENTS[name]

    with django_capture_on_commit_callbacks() as callbacks:
        response = post_lead(intake, xml) if path == "form" else post_raw(intake, xml)

    assert response.status_code == 422
    assert response.json() == reason(NOT_ADF)
    lead = only_lead()
    assert lead.outcome == Outcome.NOT_ADF
    assert lead.raw_xml == xml
    assert lead.reason == detail
    assert (lead.response_status, lead.response_body) == (422, reason(NOT_ADF))
    assert lead.credential == intake.credential
    assert lead.account is None
    assert lead.parsed is None
    assert not Call.objects.exists()
    assert callbacks == []


def test_not_adf_lead_is_not_remembered_as_processed(intake):
    post_raw(intake, "<adf/>")

    again = post_raw(intake, "<adf/>")

    assert again.json() == reason(NOT_ADF)
    assert [lead.outcome for lead in Lead.objects.all()] == [Outcome.NOT_ADF] * 2
    assert Lead.objects.filter(dedupe_key__isnull=False).count() == 0


def test_not_adf_lead_is_reported_to_webhooks_as_refused_with_its_reason(
    intake, settings, django_capture_on_commit_callbacks
):
    import json

    from webhooks.models import WebhookEvent
    from webhooks.services import webhook_endpoint_create

    settings.WEBHOOK_ALLOWED_ADDRESSES = ["127.0.0.1"]
    webhook_endpoint_create(
        organization=intake.organization, url="https://127.0.0.1:9/hook"
    )

    with django_capture_on_commit_callbacks():  # not run: nothing is delivered
        post_raw(intake, "<adf/>")

    event = WebhookEvent.objects.get()
    body = json.loads(event.body)
    assert (event.type, body["reason"], body["message"]) == (
        "lead_refused",
        "not_adf",
        NOT_ADF,
    )
    assert body["lead_id"] == only_lead().pk


# --- the document as the request body ---------------------------------------------------------


@pytest.mark.parametrize(
    "content_type",
    [
        "application/xml",
        "text/xml",
        "application/xml; charset=utf-8",
        "text/xml; charset=UTF-8",
    ],
)
def test_document_as_the_body_is_accepted(
    intake, content_type, django_capture_on_commit_callbacks
):
    xml = document(extra_customer="<whisper>Call after 5</whisper>")

    with django_capture_on_commit_callbacks() as callbacks:
        response = post_raw(intake, xml.encode(), content_type)

    assert response.status_code == 200
    assert response["Content-Type"] == "application/json; charset=utf-8"
    lead = only_lead()
    assert response.json() == accepted(lead.pk)
    assert len(callbacks) == 1
    assert lead.outcome == Outcome.ACCEPTED
    assert lead.raw_xml == xml
    assert lead.credential == intake.credential
    assert lead.account == intake.account
    assert (lead.prospect_id, lead.prospect_source) == ("P-1", "CRM")
    assert lead.whisper == WHISPER
    assert lead.call_notes == CALL_NOTES
    call = Call.objects.get()
    assert lead.call == call
    assert (call.first_name, call.last_name, call.phone) == (
        "Maria",
        "Lopez",
        "+13035550123",
    )


@pytest.mark.parametrize(
    ("xml", "status", "outcome"),
    [
        (document(), 200, Outcome.ACCEPTED),
        (document(phone=""), 200, Outcome.NO_PHONE),
        (document(vendor_id="DLR-0"), 422, Outcome.NO_VENDOR),
        (document(request_type="service"), 422, Outcome.NO_RULE),
        (document(provider_name="DNP"), 200, Outcome.DO_NOT_PROCESS),
        (document(prospect_id=""), 422, Outcome.NO_PROSPECT_ID),
        ("<adf><prospect>", 400, Outcome.MALFORMED),
        ("<adf><lead/></adf>", 422, Outcome.NOT_ADF),
        (adf_many(document(prospect_id="P-1"), document(prospect_id="P-2")), 200, None),
    ],
    ids=[
        "accepted",
        "no-phone",
        "no-vendor",
        "no-rule",
        "do-not-process",
        "no-prospect-id",
        "malformed",
        "not-adf",
        "two-prospects",
    ],
)
def test_document_as_the_body_is_answered_and_stored_like_the_form_field(
    tenant, other_tenant, xml, status, outcome
):
    """The same document, posted the form way by one tenant and as the body by another,
    set up alike: the same answer (but for the lead ids) and the same leads stored."""
    for each in (tenant, other_tenant):
        dnp_then_sales(each.account)

    form = post_lead(tenant, xml)
    body = post_raw(other_tenant, xml.encode())

    def stored(each):
        leads = Lead.objects.filter(credential=each.credential).order_by("pk")
        ids = {lead.pk: f"lead{n}" for n, lead in enumerate(leads)}
        rows = [
            (lead.outcome, lead.raw_xml, lead.reason, lead.response_status)
            for lead in leads
        ]
        return ids, rows

    (form_ids, form_leads), (body_ids, body_leads) = (
        stored(tenant),
        stored(other_tenant),
    )

    def answer(response, ids):
        answered = response.json()
        if "leadId" in answered:
            answered["leadId"] = ids[answered["leadId"]]
        if "leadIds" in answered:
            answered["leadIds"] = [ids[n] for n in answered["leadIds"]]
        return answered

    assert (body.status_code, form.status_code) == (status, status)
    assert answer(body, body_ids) == answer(form, form_ids)
    assert body_leads == form_leads
    assert all(raw_xml == xml for _, raw_xml, _, _ in body_leads)
    if outcome is not None:
        assert [row[0] for row in body_leads] == [outcome]
    assert Call.objects.filter(account=other_tenant.account).count() == (
        Call.objects.filter(account=tenant.account).count()
    )


def test_document_as_the_body_sent_again_is_a_duplicate(
    intake, django_capture_on_commit_callbacks
):
    xml = document().encode()
    first = post_raw(intake, xml)
    first_lead = only_lead()

    with django_capture_on_commit_callbacks() as callbacks:
        again = post_raw(intake, xml, "text/xml")
        form = post_lead(intake, xml.decode())

    assert first.json() == accepted(first_lead.pk)
    assert again.status_code == form.status_code == 200
    assert again.json() == form.json() == {**accepted(first_lead.pk), "duplicate": True}
    assert callbacks == []
    assert Call.objects.count() == 1
    assert [lead.outcome for lead in Lead.objects.exclude(pk=first_lead.pk)] == [
        Outcome.DUPLICATE,
        Outcome.DUPLICATE,
    ]


@pytest.mark.parametrize(
    ("headers", "expected"),
    [
        ({}, USER_BLANK),
        ({"HTTP_APIUSER": "  "}, USER_BLANK),
        ({"HTTP_APIKEY": "KEY"}, USER_BLANK),
        ({"HTTP_APIUSER": "USER"}, KEY_BLANK),
        ({"HTTP_APIUSER": "USER", "HTTP_APIKEY": ""}, KEY_BLANK),
        ({"HTTP_APIUSER": "USER", "HTTP_APIKEY": "nope"}, NO_ACCOUNT),
        ({"HTTP_APIUSER": "nobody", "HTTP_APIKEY": "KEY"}, NO_ACCOUNT),
    ],
)
@pytest.mark.parametrize("blank_body", [False, True])
def test_document_as_the_body_needs_the_credentials_as_headers(
    intake, headers, expected, blank_body
):
    """Credentials are checked first, in the documented order, whatever the body holds."""
    real = {"USER": intake.credential.api_user, "KEY": intake.key}
    client = APIClient()
    client.credentials(**{name: real.get(v, v) for name, v in headers.items()})

    response = client.post(
        URL, " \n" if blank_body else document(), content_type="application/xml"
    )

    assert response.status_code == 403
    assert response.json() == reason(expected)
    assert not Lead.objects.exists()


def test_credentials_in_the_query_string_do_not_count_for_a_body_document(intake):
    query = urllib.parse.urlencode(intake.headers)

    response = APIClient().post(
        f"{URL}?{query}", document(), content_type="application/xml"
    )

    assert response.status_code == 403
    assert response.json() == reason(USER_BLANK)
    assert not Lead.objects.exists()


@pytest.mark.parametrize("body", ["", " ", "\r\n\t  \n"])
@pytest.mark.parametrize("content_type", ["application/xml", "text/xml"])
def test_blank_body_is_refused_as_blank_xml(intake, body, content_type):
    response = post_raw(intake, body, content_type)

    assert response.status_code == 403
    assert response.json() == reason(XML_BLANK)
    assert not Lead.objects.exists()


def test_blank_body_with_wrong_credentials_is_refused_for_the_credentials(intake):
    client = APIClient()
    client.credentials(HTTP_APIUSER=intake.credential.api_user, HTTP_APIKEY="nope")

    response = client.post(URL, "\n", content_type="text/xml")

    assert response.status_code == 403
    assert response.json() == reason(NO_ACCOUNT)


CP1252_LEAD = """<?xml version="1.0" encoding="{encoding}"?>
<adf><prospect>
  <id source="CRM">W-1</id><requesttype>sales</requesttype>
  <customer><contact><name part="first">Zoë</name><name part="last">Müller</name>
    <phone>303-555-0123</phone></contact>
    <comments>“Best price” for the Škoda? Budget 20 000 €</comments></customer>
  <vendor><id>DLR-42</id><vendorname>Front Range Toyota</vendorname></vendor>
</prospect></adf>"""


@pytest.mark.parametrize("encoding", ["windows-1252", "cp1252", "ISO-8859-1"])
def test_body_in_the_declared_windows_1252_encoding_is_read_and_stored_as_text(
    intake, encoding
):
    """Senders label Windows-1252 as Latin-1; the euro sign and curly quotes say which."""
    xml = CP1252_LEAD.format(encoding=encoding)
    body = xml.encode("cp1252")
    assert "€".encode() not in body

    response = post_raw(intake, body, "text/xml; charset=ISO-8859-1")

    assert response.status_code == 200
    lead = only_lead()
    assert response.json() == accepted(lead.pk)
    assert lead.raw_xml == xml
    assert lead.parsed["customer"]["comments"] == (
        "“Best price” for the Škoda? Budget 20 000 €"
    )
    call = lead.call
    assert (call.first_name, call.last_name) == ("Zoë", "Müller")
    assert "“Best price” for the Škoda? Budget 20 000 €" in call.call_notes


@pytest.mark.parametrize(
    ("codec", "bom"),
    [
        ("utf-8", b"\xef\xbb\xbf"),
        ("utf-16-le", b"\xff\xfe"),
        ("utf-16-be", b"\xfe\xff"),
    ],
)
def test_body_with_a_byte_order_mark_is_read_and_stored_without_it(intake, codec, bom):
    xml = CP1252_LEAD.format(encoding="UTF-8" if codec == "utf-8" else "UTF-16")

    response = post_raw(intake, bom + xml.encode(codec))

    assert response.status_code == 200
    lead = only_lead()
    assert response.json() == accepted(lead.pk)
    assert lead.raw_xml == xml
    assert lead.call.first_name == "Zoë"


def test_body_in_iso_8859_15_is_read_in_it(intake):
    xml = CP1252_LEAD.format(encoding="ISO-8859-15").replace("“", '"').replace("”", '"')

    response = post_raw(intake, xml.encode("iso8859-15"))

    assert response.status_code == 200
    assert only_lead().raw_xml == xml
    assert only_lead().parsed["customer"]["comments"].endswith("Budget 20 000 €")


def test_xml_file_part_in_windows_1252_is_read_in_its_declared_encoding(intake):
    from django.core.files.uploadedfile import SimpleUploadedFile

    xml = CP1252_LEAD.format(encoding="windows-1252")
    upload = SimpleUploadedFile("lead.xml", xml.encode("cp1252"), "text/xml")

    response = APIClient().post(URL, {"xml": upload, **intake.headers})

    assert response.status_code == 200
    lead = only_lead()
    assert lead.raw_xml == xml
    assert (lead.call.first_name, lead.call.last_name) == ("Zoë", "Müller")


@pytest.mark.parametrize(
    ("body", "stored"),
    [
        (
            b"<adf><prospect><id>1</id></prospect>",
            "<adf><prospect><id>1</id></prospect>",
        ),
        (b"this is not xml", "this is not xml"),
        (b'{"prospect": {"id": 1}}', '{"prospect": {"id": 1}}'),
        (
            b'<?xml version="1.0" encoding="no-such-encoding"?><adf/>',
            '<?xml version="1.0" encoding="no-such-encoding"?><adf/>',
        ),
        (
            b'<?xml version="1.0" encoding="base64"?><adf/>',
            '<?xml version="1.0" encoding="base64"?><adf/>',
        ),
        # Latin-1 bytes in a document that declares UTF-8: stored with the byte escaped.
        (
            document(prospect_id="Zoë").encode("latin-1"),
            document(prospect_id="Zo\\xeb"),
        ),
        (document().replace("Blue please", "Blue\x00please").encode(), None),
    ],
    ids=[
        "unclosed",
        "text",
        "json",
        "unknown-encoding",
        "not-a-text-encoding",
        "undeclared-latin-1",
        "nul",
    ],
)
def test_malformed_body_is_stored_and_answered_400(intake, body, stored):
    response = post_raw(intake, body)

    assert response.status_code == 400
    assert response.json() == reason(MALFORMED)
    lead = only_lead()
    assert lead.outcome == Outcome.MALFORMED
    assert lead.response_status == 400
    if stored is not None:
        assert lead.raw_xml == stored
    assert lead.reason != ""
    assert not Call.objects.exists()


UTF16_XXE = ('<?xml version="1.0" encoding="UTF-16"?>' + XXE.split("?>", 1)[1]).encode(
    "utf-16"
)


@pytest.mark.parametrize(
    "body",
    [
        BILLION_LAUGHS.encode(),
        XXE.encode(),
        EXTERNAL_DTD.encode(),
        UTF16_XXE,
        b"\xef\xbb\xbf" + XXE.encode(),
        XXE.replace('version="1.0"', 'version="1.0" encoding="ISO-8859-1"').encode(),
    ],
    ids=[
        "billion-laughs",
        "xxe",
        "external-dtd",
        "xxe-in-utf16",
        "xxe-after-bom",
        "xxe-in-latin-1",
    ],
)
def test_hostile_body_is_refused_before_lxml_and_stored(intake, body, handed_to_lxml):
    response = post_raw(intake, body)

    assert handed_to_lxml == []
    assert response.status_code == 400
    assert response.json() == reason(MALFORMED)
    assert b"root:" not in response.content
    lead = only_lead()
    assert lead.outcome == Outcome.MALFORMED
    assert "<!DOCTYPE" in lead.raw_xml
    assert "root:" not in lead.reason + lead.raw_xml
    assert lead.parsed is None
    assert not Call.objects.exists()


def test_deeply_nested_body_is_refused_without_a_500(intake):
    body = b"<adf>" + b"<a>" * 100_000 + b"</a>" * 100_000 + b"</adf>"

    response = post_raw(intake, body)

    assert response.status_code == 400
    assert response.json() == reason(MALFORMED)
    assert only_lead().outcome == Outcome.MALFORMED


@pytest.mark.parametrize("content_type", ["application/xml", "text/xml"])
def test_body_over_one_mib_is_refused_with_413_before_it_is_read(intake, content_type):
    padding = "x" * (1024 * 1024)
    body = document(extra_customer=f"<whisper>{padding}</whisper>").encode()

    response = post_raw(intake, body, content_type)

    assert response.status_code == 413
    assert response.json() == reason(TOO_LARGE)
    assert not Lead.objects.exists()
    assert not Call.objects.exists()


def test_body_of_exactly_one_mib_is_read(intake):
    xml = document(extra_customer="<whisper></whisper>")
    padding = 1024 * 1024 - len(xml.encode())
    body = xml.replace("<whisper>", "<whisper>" + "x" * padding).encode()
    assert len(body) == 1024 * 1024

    response = post_raw(intake, body)

    assert response.status_code == 200
    assert response.json() == accepted(only_lead().pk)


def test_xml_body_parser_refuses_a_stream_longer_than_the_limit(settings):
    """A body whose length was not declared (so the size middleware could not see it) is
    still read no further than the limit."""
    import io

    from core.api import PayloadTooLarge
    from leads.apis import XmlBodyParser

    settings.API_MAX_BODY_BYTES = 10
    parser = XmlBodyParser()

    assert parser.parse(io.BytesIO(b"<adf/>")) == {"xml": b"<adf/>"}
    with pytest.raises(PayloadTooLarge):
        parser.parse(io.BytesIO(b"<adf>" + b" " * 10 + b"</adf>"))


@pytest.mark.parametrize(
    "content_type", ["text/plain", "application/json", "application/octet-stream"]
)
def test_document_in_another_content_type_is_refused_with_415(intake, content_type):
    response = post_raw(intake, document(), content_type)

    assert response.status_code == 415
    assert response.json() == reason(f'Unsupported content type "{content_type}".')
    assert not Lead.objects.exists()


def test_the_schema_offers_the_document_as_an_xml_body(client):
    schema = client.get("/api/schema/?format=json").json()

    body = schema["paths"]["/api/nl"]["post"]["requestBody"]

    assert body["required"] is True
    assert list(body["content"]) == [
        "application/x-www-form-urlencoded",
        "multipart/form-data",
        "application/xml",
        "text/xml",
    ]
    assert body["content"]["text/xml"]["schema"]["type"] == "string"


def test_tab_lf_and_cr_in_a_one_line_member_become_a_space(intake):
    """CONTRACT.md "Common": a name or a phone sent with line breaks (as characters or as
    character references) is stored on one line; nothing of it reaches a header."""
    xml = document().replace(
        '<name part="first">Maria</name>',
        '<name part="first">Eve&#13;&#10;Bcc: evil@example.com\tJr</name>',
    )

    response = post_lead(intake, xml)

    assert response.status_code == 200, response.json()
    call = Call.objects.get(lead=Lead.objects.get())
    assert call.first_name == "Eve Bcc: evil@example.com Jr"


def test_a_control_character_xml_cannot_carry_is_a_document_not_well_formed(intake):
    xml = document().replace(
        '<name part="first">Maria</name>', '<name part="first">Ctl&#1;char</name>'
    )

    response = post_lead(intake, xml)

    assert (response.status_code, response.json()) == (400, {"reason": MALFORMED})
    assert not Call.objects.exists()
