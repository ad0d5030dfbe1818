"""Every answer an endpoint gives is described by the published schema: real requests
through the test client, success and each error shape, each body validated (jsonschema)
against the schema of its operation and status. A status the schema does not list fails."""

from __future__ import annotations

from types import SimpleNamespace

import pytest
from django.http import HttpResponse
from rest_framework.test import APIClient

from accounts.schedules import WEEKDAYS
from leads.models import RuleAction
from scoring.services import score_save
from tests.accounts.factories import issue_scored_data_key
from tests.conftest import Tenant
from tests.leads.factories import VendorRegistrationFactory, adf, catch_all_rule
from tests.openapi import assert_described
from tests.scoring.factories import CallFactory, in_role
from tests.users.factories import UserFactory, agent

pytestmark = pytest.mark.django_db

USER = "/api/users/{user_id}"
FORM = "application/x-www-form-urlencoded"


@pytest.fixture
def small_bodies(settings):
    """A body limit small enough to pass with a realistic request (the middleware's 413)."""
    settings.API_MAX_BODY_BYTES = 64
    settings.DATA_UPLOAD_MAX_MEMORY_SIZE = 64


def limit(settings, scope: str) -> None:
    settings.API_RATE_LIMITS = {**settings.API_RATE_LIMITS, scope: "1/min"}


def new_user(tenant: Tenant) -> dict:
    return {
        "organizationId": tenant.organization.pk,
        "firstName": "Avery",
        "lastName": "Lopez",
        "emailAddress": "avery@example.com",
        "accountIds": [tenant.account.pk],
    }


# --- the User API ------------------------------------------------------------------------


def test_user_create_answers_as_described(tenant, other_tenant):
    client = tenant.client()
    created = client.post("/api/users", new_user(tenant), format="json")
    schedule = {"active": True} | {
        day: {"active": day != "sunday", "startTime": "08:00", "endTime": "17:30"}
        for day in WEEKDAYS
    }
    with_schedule = client.post(
        "/api/users",
        {
            **new_user(tenant),
            "emailAddress": "robin@example.com",
            "schedule": schedule,
            "password": "Secret-1x",
            "phoneNumber": "+13035550147",
        },
        format="json",
    )
    answers = {
        201: created,
        401: APIClient().post("/api/users", new_user(tenant), format="json"),
        403: client.post(
            "/api/users",
            {**new_user(tenant), "organizationId": other_tenant.organization.pk},
            format="json",
        ),
        415: client.post("/api/users", new_user(tenant)),  # a multipart form
        422: client.post("/api/users", {"accountIds": []}, format="json"),
    }

    for status, response in answers.items():
        assert response.status_code == status, response.content
        assert_described(response, "POST", "/api/users")
    assert_described(with_schedule, "POST", "/api/users")
    assert with_schedule.json()["user"]["schedule"] == schedule
    assert answers[422].json()["errors"]["accountIds"]


def test_a_user_without_a_schedule_matches_the_schema(tenant):
    user = UserFactory(account=tenant.account)
    assert user.schedule_active is None

    response = tenant.client().get(USER.format(user_id=user.pk))

    body = assert_described(response, "GET", USER)
    assert body["user"]["schedule"] is None


def test_user_detail_operations_answer_as_described(tenant, other_tenant):
    client = tenant.client()
    user = agent(tenant.account, phone="+13035550111")
    foreign = UserFactory(account=other_tenant.account)
    path = USER.format(user_id=user.pk)

    got = client.get(path)
    assert got.json()["user"]["schedule"]["monday"]["startTime"] == "00:00"
    cases = [
        ("GET", got, 200),
        ("GET", APIClient().get(path), 401),
        ("GET", client.get(USER.format(user_id=foreign.pk)), 404),
        ("PUT", client.put(path, {"bio": "Sales"}, format="json"), 200),
        ("PUT", APIClient().put(path, {}, format="json"), 401),
        (
            "PUT",
            client.put(
                path,
                {"organizationId": other_tenant.organization.pk},
                format="json",
            ),
            403,
        ),
        ("PUT", client.put(USER.format(user_id=foreign.pk), {}, format="json"), 404),
        ("PUT", client.put(path, "bio=x", content_type=FORM), 415),
        ("PUT", client.put(path, {"firstName": ""}, format="json"), 422),
        ("DELETE", APIClient().delete(path), 401),
        ("DELETE", client.delete(USER.format(user_id=foreign.pk)), 404),
        ("DELETE", client.delete(path), 200),
    ]

    for method, response, status in cases:
        assert response.status_code == status, (method, response.content)
        assert_described(response, method, USER)


@pytest.mark.parametrize(
    ("path", "query"),
    [
        ("/api/users/find/email", {"emailAddress": "{email}"}),
        ("/api/users/find/phone", {"phoneNumber": "+13035550122"}),
        ("/api/users/find/available-user-code", {}),
    ],
)
def test_user_lookups_answer_as_described(tenant, other_tenant, path, query):
    client = tenant.client()
    user = agent(tenant.account, phone="+13035550122")
    found = {k: v.format(email=user.email) for k, v in query.items()}
    mine, theirs = tenant.organization.pk, other_tenant.organization.pk
    cases = {
        200: client.get(path, {"organizationId": mine, **found}),
        401: APIClient().get(path, {"organizationId": mine, **found}),
        403: client.get(path, {"organizationId": theirs, **found}),
        422: client.get(path, {"organizationId": "0", **found}),
    }
    if query:
        cases[404] = client.get(
            path, {"organizationId": mine, **dict.fromkeys(query, "+13035550999")}
        )
        empty = client.get(path, {"organizationId": mine, **dict.fromkeys(query, "")})
        assert empty.status_code == 422
        assert_described(empty, "GET", path)

    for status, response in cases.items():
        assert response.status_code == status, (status, response.content)
        assert_described(response, "GET", path)


def test_the_user_api_limits_answer_as_described(tenant, settings, one_window):
    limit(settings, "users")
    client = tenant.client()
    path = "/api/users/find/available-user-code"
    query = {"organizationId": tenant.organization.pk}

    assert client.get(path, query).status_code == 200
    limited = client.get(path, query)

    assert limited.status_code == 429
    assert_described(limited, "GET", path)


def test_a_body_over_the_limit_is_described_everywhere(tenant, small_bodies):
    client = tenant.client()
    big = {**new_user(tenant), "bio": "x" * 100}
    user = UserFactory(account=tenant.account)

    cases = [
        ("POST", "/api/users", client.post("/api/users", big, format="json")),
        (
            "PUT",
            USER,
            client.put(USER.format(user_id=user.pk), big, format="json"),
        ),
        (
            "POST",
            "/api/clicktocallv2",
            APIClient().post("/api/clicktocallv2", big, format="json"),
        ),
        (
            "POST",
            "/api/nl",
            APIClient().post("/api/nl", {"xml": "x" * 100, **tenant.headers}),
        ),
    ]

    for method, path, response in cases:
        assert response.status_code == 413, (path, response.content)
        assert_described(response, method, path)


# --- lead intake -------------------------------------------------------------------------


@pytest.fixture
def vendor(tenant):
    catch_all_rule(tenant.account)
    return VendorRegistrationFactory(account=tenant.account)


def test_lead_intake_answers_as_described(tenant, vendor):
    def post(**fields):
        return APIClient().post("/api/nl", {**tenant.headers, **fields})

    lead = adf(vendor_id=vendor.vendor_id, vendor_name=vendor.vendor_name)
    cases = {
        "accepted": (post(xml=lead), 200),
        "duplicate": (post(xml=lead), 200),
        "as the body, credentials as headers": (
            APIClient().post(
                "/api/nl",
                adf(
                    prospect_id="P-2",
                    vendor_id=vendor.vendor_id,
                    vendor_name=vendor.vendor_name,
                ),
                content_type="application/xml",
                HTTP_APIUSER=tenant.credential.api_user,
                HTTP_APIKEY=tenant.key,
            ),
            200,
        ),
        "not well-formed": (post(xml="<adf><prospect>"), 400),
        "blank xml": (post(xml=" "), 403),
        "unknown credentials": (
            APIClient().post("/api/nl", {"xml": lead, "apiuser": "x", "apikey": "y"}),
            403,
        ),
        "JSON": (APIClient().post("/api/nl", {"xml": lead}, format="json"), 415),
        "unknown vendor": (post(xml=adf(vendor_id="NOPE", vendor_name="Nope")), 422),
    }

    for name, (response, status) in cases.items():
        assert response.status_code == status, (name, response.content)
        assert_described(response, "POST", "/api/nl")
    assert cases["duplicate"][0].json()["duplicate"] is True


def test_a_do_not_process_lead_answers_as_described(tenant):
    catch_all_rule(tenant.account, action=RuleAction.DO_NOT_PROCESS)
    vendor = VendorRegistrationFactory(account=tenant.account)

    response = APIClient().post(
        "/api/nl",
        {
            "xml": adf(vendor_id=vendor.vendor_id, vendor_name=vendor.vendor_name),
            **tenant.headers,
        },
    )

    assert response.status_code == 200
    body = assert_described(response, "POST", "/api/nl")
    assert body == {"reason": "Lead was successfully parsed as a Do Not Process lead."}


def test_lead_intake_limit_answers_as_described(tenant, vendor, settings, one_window):
    limit(settings, "leads")

    answers = [
        APIClient().post(
            "/api/nl",
            {
                "xml": adf(
                    prospect_id=f"P-{n}",
                    vendor_id=vendor.vendor_id,
                    vendor_name=vendor.vendor_name,
                ),
                **tenant.headers,
            },
        )
        for n in range(2)
    ]

    assert [a.status_code for a in answers] == [200, 429]
    assert_described(answers[1], "POST", "/api/nl")


def test_lead_intake_options_does_not_offer_get():
    options = APIClient().options("/api/nl")
    get = APIClient().get("/api/nl")

    assert options.status_code == 200
    assert options["Allow"] == "POST, OPTIONS"
    assert get.status_code == 404  # still the documented answer, but not offered
    assert get.json() == {
        "reason": "No POST data received. This endpoint expects POST data."
    }


# --- click-to-call -----------------------------------------------------------------------


def test_click_to_call_answers_as_described(tenant, other_tenant, settings, one_window):
    the_agent = agent(tenant.account, phone="+13035550133")
    key = {"HTTP_API_KEY": tenant.key}
    ok = {
        "account_id": str(tenant.account.pk),
        "user_id": str(the_agent.pk),
        "customer_phone_number": "+17205550199",
    }

    def post(body, fmt="json", **headers):
        return APIClient().post("/api/clicktocallv2", body, format=fmt, **headers)

    cases = {
        201: post(ok, **key),
        401: post(ok),
        403: post({**ok, "account_id": str(other_tenant.account.pk)}, **key),
        415: post(ok, fmt="multipart", **key),
        422: post({**ok, "account_id": "0"}, **key),
    }
    body_key = post({**ok, "api_key": tenant.key})
    limit(settings, "clicktocall")
    post(ok, **key)
    cases[429] = post(ok, **key)

    for status, response in cases.items():
        assert response.status_code == status, (status, response.content)
        assert_described(response, "POST", "/api/clicktocallv2")
    assert body_key.status_code == 201
    assert_described(body_key, "POST", "/api/clicktocallv2")


# --- scored data -------------------------------------------------------------------------


@pytest.fixture
def scored(tenant):
    """The account's key, an unscored call and a scored one."""
    key = issue_scored_data_key(tenant.account)
    unscored = CallFactory(account=tenant.account)
    call = CallFactory(account=tenant.account)
    scorer = in_role("Scorer", accounts=[tenant.account])
    score_save(
        call=call,
        scorer=scorer,
        values={"cat1": True, "wow": True, "first_name": "Sam", "notes": "Keen."},
    )
    return SimpleNamespace(key=key, call=call, unscored=unscored)


@pytest.mark.parametrize("return_type", ["json", "xml"])
def test_scored_data_answers_as_described(client, scored, return_type):
    def get(**query):
        return client.get("/api/scoreddata", {"returnType": return_type, **query})

    day = scored.call.received_at.date().isoformat()
    cases = [
        (get(apikey=scored.key, callId=scored.call.pk), 200),
        (get(apikey=scored.key, callId=scored.unscored.pk), 200),
        (get(apikey=scored.key, fromDate="2000-01-01", toDate="2999-01-01"), 200),
        (get(apikey=scored.key, fromDate="1999-01-01", toDate="1999-01-02"), 200),
        (get(apikey=scored.key, toDate=day), 400),
        (get(apikey=scored.key, fromDate=day, toDate="1999-01-01"), 400),
        (get(callId=scored.call.pk), 401),
        (get(apikey=scored.key, callId=scored.call.pk + 1000), 404),
    ]

    bodies = []
    for response, status in cases:
        assert response.status_code == status
        bodies.append(assert_described(response, "GET", "/api/scoreddata"))
    if return_type == "json":
        scored_record, unscored_record, records, empty = bodies[:4]
        assert scored_record["wow"] == "1"
        assert unscored_record["wow"] is None
        assert [r["id"] for r in records] == [
            str(scored.unscored.pk),
            str(scored.call.pk),
        ]
        assert empty == []


@pytest.mark.parametrize("return_type", ["json", "xml"])
def test_scored_data_limit_answers_as_described(
    client, scored, settings, one_window, return_type
):
    limit(settings, "scoreddata")
    query = {"apikey": scored.key, "callId": scored.call.pk, "returnType": return_type}

    assert client.get("/api/scoreddata", query).status_code == 200
    limited = client.get("/api/scoreddata", query)

    assert limited.status_code == 429
    assert_described(limited, "GET", "/api/scoreddata")


# --- the check itself --------------------------------------------------------------------


def test_a_status_the_schema_does_not_list_fails_the_check():
    teapot = HttpResponse(b"{}", status=418, content_type="application/json")

    with pytest.raises(AssertionError, match="418"):
        assert_described(teapot, "GET", "/api/scoreddata")


def test_a_body_of_another_shape_fails_the_check():
    wrong = HttpResponse(
        b'{"success": true, "message": "Invalid API key"}',
        status=401,
        content_type="application/json",
    )

    with pytest.raises(Exception, match="False was expected"):
        assert_described(wrong, "GET", "/api/scoreddata")
