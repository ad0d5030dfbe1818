"""Corners of the four interfaces an integrator's probe found (session 35), through HTTP:
each interface answers in its one documented format whatever ``Accept`` or a ``format``
parameter asks; a number written in other digits than 0-9, or a key holding a NUL, is bad
input (never a 500); a repeated lead's answer reads as the first did, byte for byte."""

import pytest
from rest_framework.test import APIClient

from calls.models import Call
from leads.models import Lead
from tests.accounts.factories import AccountFactory, issue_scored_data_key
from tests.leads.factories import VendorRegistrationFactory, adf, catch_all_rule
from tests.scoring.factories import CallFactory
from tests.users.factories import UserFactory

pytestmark = pytest.mark.django_db

ASKS_FOR_OTHER_FORMATS = [
    {"HTTP_ACCEPT": "application/xml"},
    {"HTTP_ACCEPT": "text/xml"},
    {"HTTP_ACCEPT": "text/html"},
    {"QUERY_STRING": "format=xml"},
]
ids = ["accept-application-xml", "accept-text-xml", "accept-text-html", "format-xml"]
other_formats = pytest.mark.parametrize("asks", ASKS_FOR_OTHER_FORMATS, ids=ids)


@pytest.fixture
def intake(tenant):
    VendorRegistrationFactory(account=tenant.account, vendor_id="DLR-42")
    catch_all_rule(tenant.account, team=tenant.teams[0])
    return tenant


def accepted_bytes(lead_id: int, *extra: str) -> bytes:
    members = [
        '"result":"Success"',
        f'"leadId":{lead_id}',
        '"message":"Lead received successfully."',
        *extra,
    ]
    return ("{" + ",".join(members) + "}").encode()


@other_formats
def test_a_lead_asking_for_another_format_is_stored_and_answered_in_json(intake, asks):
    form = {"xml": adf(vendor_id="DLR-42"), **intake.headers}
    raw = adf(vendor_id="DLR-42", prospect_id="P-2")

    by_form = APIClient().post("/api/nl", form, **asks)
    by_body = intake.client().post("/api/nl", raw, content_type="text/xml", **asks)

    first, second = Lead.objects.order_by("id")
    assert (by_form.status_code, by_form.content) == (200, accepted_bytes(first.pk))
    assert (by_body.status_code, by_body.content) == (200, accepted_bytes(second.pk))
    assert by_form["Content-Type"] == "application/json; charset=utf-8"
    assert Call.objects.count() == 2


def test_a_repeated_lead_answers_the_first_answer_s_bytes_marked_duplicate(intake):
    form = {"xml": adf(vendor_id="DLR-42"), **intake.headers}

    first = APIClient().post("/api/nl", form)
    again = APIClient().post("/api/nl", form)

    lead = Lead.objects.order_by("id")[0]
    assert first.content == accepted_bytes(lead.pk)
    assert again.content == accepted_bytes(lead.pk, '"duplicate":true')


@other_formats
def test_the_user_api_answers_json_whatever_format_is_asked_for(tenant, asks):
    user = UserFactory(account=tenant.account)
    plain = tenant.client().get(f"/api/users/{user.pk}")

    response = tenant.client().get(f"/api/users/{user.pk}", **asks)

    assert response.status_code == 200
    assert response.content == plain.content
    assert response["Content-Type"] == plain["Content-Type"]


@other_formats
def test_click_to_call_places_the_call_whatever_format_is_asked_for(tenant, asks):
    agent = UserFactory(account=tenant.account)
    body = {
        "account_id": str(tenant.account.pk),
        "user_id": str(agent.pk),
        "customer_phone_number": "+17205550199",
    }

    response = APIClient().post(
        "/api/clicktocallv2", body, format="json", HTTP_API_KEY=tenant.key, **asks
    )

    call = Call.objects.get()
    assert response.status_code == 201
    assert response.json() == {
        "success": True,
        "message": "Call initiated",
        "callId": call.pk,
    }


@pytest.mark.parametrize(
    ("return_type", "asks"),
    [
        ("xml", {"HTTP_ACCEPT": "application/xml"}),
        ("xml", {"HTTP_ACCEPT": "text/xml"}),
        ("json", {"HTTP_ACCEPT": "application/xml"}),
        ("xml", {"format": "xml"}),
        ("json", {"format": "xml"}),
    ],
)
def test_scored_data_answers_in_the_return_type_asked_for_whatever_else_is(
    return_type, asks
):
    account = AccountFactory()
    key = issue_scored_data_key(account)
    call = CallFactory(account=account)
    query = {"apikey": key, "callId": call.pk, "returnType": return_type}
    query.update({k: v for k, v in asks.items() if not k.startswith("HTTP_")})
    headers = {k: v for k, v in asks.items() if k.startswith("HTTP_")}
    plain = APIClient().get(
        "/api/scoreddata", {"apikey": key, "callId": call.pk, "returnType": return_type}
    )

    response = APIClient().get("/api/scoreddata", query, **headers)

    assert plain.status_code == 200
    assert (response.status_code, response.content) == (200, plain.content)


@pytest.mark.parametrize("call_id", ["²", "①", "\uff11", "\u0661", "12³"])
def test_a_call_id_in_other_digits_than_0_to_9_is_a_bad_parameter(call_id):
    account = AccountFactory()
    key = issue_scored_data_key(account)
    CallFactory(account=account)

    response = APIClient().get("/api/scoreddata", {"apikey": key, "callId": call_id})

    assert response.status_code == 400
    assert response.json() == {
        "success": False,
        "message": "The callId parameter must be a call ID (a whole number).",
    }


def with_nul(key: str) -> str:
    """The key with a NUL inside its public prefix."""
    return key[:5] + "\x00" + key[6:]


def test_a_key_holding_a_nul_is_refused_as_any_unknown_key(intake):
    account = AccountFactory()
    scored_key = issue_scored_data_key(account)

    scored = APIClient().get(
        "/api/scoreddata", {"apikey": with_nul(scored_key), "callId": "1"}
    )
    lead = APIClient().post(
        "/api/nl",
        {
            "xml": adf(vendor_id="DLR-42"),
            "apiuser": intake.credential.api_user,
            "apikey": with_nul(intake.key),
        },
    )
    click = APIClient().post(
        "/api/clicktocallv2",
        {"api_key": with_nul(intake.key), "account_id": intake.account.pk},
        format="json",
    )
    user = APIClient().get(
        "/api/users/1",
        HTTP_APIUSER=intake.credential.api_user,
        HTTP_APIKEY=with_nul(intake.key),
    )

    assert (scored.status_code, scored.json()) == (
        401,
        {"success": False, "message": "Invalid API key"},
    )
    assert lead.status_code == 403
    assert lead.json() == {
        "reason": "No account found with the given API username/password. "
        "Please check your credentials and try again."
    }
    assert (click.status_code, click.json()) == (
        401,
        {"success": False, "message": "Invalid API key"},
    )
    assert user.status_code == 401
    assert not Call.objects.exists()


@pytest.mark.parametrize(
    ("path", "body"),
    [
        ("/api/users/", {"success": False, "message": "Not found."}),
        ("/api/users/find/nickname", {"success": False, "message": "Not found."}),
        ("/api/nl/", {"reason": "Not found."}),
        ("/api/scoreddata/", {"success": False, "message": "Not found."}),
        ("/api/nothing-here", {"success": False, "message": "Not found."}),
    ],
)
def test_an_api_path_naming_no_endpoint_is_a_json_404_in_its_interface_s_shape(
    client, path, body
):
    response = client.post(path) if path == "/api/nl/" else client.get(path)

    assert response.status_code == 404
    assert response["Content-Type"] == "application/json; charset=utf-8"
    assert response.json() == body


def test_a_page_naming_nothing_is_still_the_page(client):
    response = client.get("/no-such-page")

    assert response.status_code == 404
    assert response["Content-Type"].startswith("text/html")


@pytest.mark.parametrize(
    ("path", "body"),
    [
        ("/api/nl", b'{"reason":"The request body is larger than 1 MiB."}'),
        (
            "/api/users",
            b'{"success":false,"message":"The request body is larger than 1 MiB."}',
        ),
    ],
)
def test_a_body_refused_before_the_view_is_written_compact_as_every_answer(
    client, settings, path, body
):
    too_long = b"x" * (settings.API_MAX_BODY_BYTES + 1)

    response = client.post(path, too_long, content_type="application/xml")

    assert (response.status_code, response.content) == (413, body)
