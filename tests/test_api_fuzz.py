"""No request makes an API answer 5xx: a property-based search over every operation of our
own OpenAPI schema (``/api/schema/``, drf-spectacular), driven by schemathesis through
Django's WSGI application, in-process and offline.

Schemathesis generates bodies, query strings, path parameters and headers, schema-valid
("positive") and schema-breaking ("negative"). Generated ids and credentials would almost
always stop at the 401/403/404, so each example is also steered by Hypothesis draws: most
carry valid credentials (some a narrowed, another tenant's, a wrong or no credential) and
often name the tenant's real organization, accounts, users, agents, calls, and, for lead
intake, a real ADF document with generated text in it; scored data gets ranges of days with
the calendar's ends in them. Validation, services and selectors are reached, not only the
authentication in front of them. A search that rarely lands on a rare input is backed by a
narrower property test of its own (scored data's ranges of days, below).

Bounded and derandomized: the same examples on every run, in a few seconds per operation.
The profile-picture fetcher is replaced (nothing leaves the machine), calls are set up
on commit, which the test's transaction never reaches, so no task or provider runs.
"""

from __future__ import annotations

import json
import re
from datetime import date
from zoneinfo import ZoneInfo

import pytest
import schemathesis
from django.urls import URLPattern, URLResolver, get_resolver
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from lxml import etree
from schemathesis.checks import not_a_server_error

from calls.models import Call
from config.wsgi import application
from leads.models import Lead
from scoring.dates import FIRST_DAY, LAST_DAY
from tests.accounts.factories import (
    AccountFactory,
    issue_scored_data_key,
)
from tests.fuzzing import CREDENTIALS, Fuzzed, steer_lead_intake
from tests.leads.factories import adf
from tests.scoring.factories import CallFactory
from tests.strategies import day_text
from users.models import User
from users.pictures import PictureError

MAX_EXAMPLES = 25
schema = schemathesis.openapi.from_wsgi("/api/schema/", application)
schema.config.generation.update(
    modes=[schemathesis.GenerationMode.POSITIVE, schemathesis.GenerationMode.NEGATIVE],
    max_examples=MAX_EXAMPLES,
    deterministic=True,
    # Credentials are chosen by the steering below, mostly valid ones.
    with_security_parameters=False,
)

INVALID = "The given data was invalid."


def _maybe(data, label: str) -> bool:
    return data.draw(st.booleans(), label=label)


def _steer_user_api(case, data, fuzzed: Fuzzed, headers: dict[str, str]) -> None:
    api_user, key = fuzzed.api_user_and_key(
        data.draw(st.sampled_from(CREDENTIALS), label="credentials")
    )
    if api_user:
        headers.update({"apiuser": api_user, "apikey": key})
    tenant = fuzzed.tenant
    if "user_id" in (case.path_parameters or {}):
        case.path_parameters["user_id"] = data.draw(
            st.sampled_from(
                [
                    case.path_parameters["user_id"],
                    fuzzed.agent.pk,
                    fuzzed.outside_agent.pk,
                    fuzzed.foreign_user.pk,
                ]
            ),
            label="user",
        )
    if isinstance(case.query, dict) and _maybe(data, "query names the organization"):
        case.query["organizationId"] = str(tenant.organization.pk)
    if isinstance(case.body, dict):
        if _maybe(data, "body names the organization"):
            case.body["organizationId"] = tenant.organization.pk
        if _maybe(data, "body names real accounts and teams"):
            case.body["accountIds"] = [tenant.account.pk, tenant.other_account.pk][
                : data.draw(st.integers(1, 2), label="accounts")
            ]
            case.body["teams"] = [team.pk for team in tenant.teams]


def _steer_click_to_call(case, data, fuzzed: Fuzzed, headers: dict[str, str]) -> None:
    credentials = data.draw(st.sampled_from(CREDENTIALS), label="credentials")
    key = fuzzed.api_user_and_key(credentials)[1]
    if key:
        headers["api_key"] = key
    if isinstance(case.body, dict) and _maybe(data, "body names the account"):
        case.body["account_id"] = str(fuzzed.tenant.account.pk)
        if _maybe(data, "body names the agent"):
            case.body["user_id"] = data.draw(
                st.sampled_from([str(fuzzed.agent.pk), "7", "0007"]), label="agent"
            )


def _steer_scored_data(case, data, fuzzed: Fuzzed, headers: dict[str, str]) -> None:
    if not isinstance(case.query, dict):
        case.query = {}
    if data.draw(st.sampled_from(CREDENTIALS), label="credentials") == "valid":
        case.query["apikey"] = fuzzed.scored_data_key
    if _maybe(data, "names the call"):
        case.query["callId"] = str(fuzzed.call.pk)
    elif _maybe(data, "a range with the calendar's ends in it"):
        case.query["fromDate"] = data.draw(day_text, label="fromDate")
        case.query["toDate"] = data.draw(day_text, label="toDate")


def _steer_appointments(case, data, fuzzed: Fuzzed, headers: dict[str, str]) -> None:
    if not isinstance(case.query, dict):
        case.query = {}
    if data.draw(st.sampled_from(CREDENTIALS), label="credentials") == "valid":
        case.query["apikey"] = fuzzed.scored_data_key
    if isinstance(case.path_parameters, dict) and _maybe(data, "names the appointment"):
        case.path_parameters["appointment_id"] = fuzzed.appointment.pk
    elif _maybe(data, "names the call"):
        case.query["callId"] = str(fuzzed.call.pk)


def _steer_consent(case, data, fuzzed: Fuzzed, headers: dict[str, str]) -> None:
    if not isinstance(case.query, dict):
        case.query = {}
    if data.draw(st.sampled_from(CREDENTIALS), label="credentials") == "valid":
        case.query["apikey"] = fuzzed.scored_data_key
    if _maybe(data, "names a number"):
        number = data.draw(st.sampled_from(["+13035550123", "3035550123"]))
        if isinstance(case.body, dict):
            case.body["phone"] = number
        else:
            case.query["phone"] = number


def _steer_lead_intake(case, data, fuzzed: Fuzzed, headers: dict[str, str]) -> None:
    steer_lead_intake(
        case,
        data,
        fuzzed,
        headers,
        credentials=data.draw(st.sampled_from(CREDENTIALS), label="credentials"),
        document=_maybe(data, "a real ADF document with generated text"),
    )


STEERING = {
    "/api/clicktocallv2": _steer_click_to_call,
    "/api/scoreddata": _steer_scored_data,
    "/api/nl": _steer_lead_intake,
    "/api/appointments": _steer_appointments,
    "/api/appointments/{appointment_id}": _steer_appointments,
    "/api/consent": _steer_consent,
}


@pytest.mark.django_db
@schema.parametrize()
@schema.given(data=st.data())
@settings(
    deadline=None,
    derandomize=True,
    database=None,
    suppress_health_check=[
        HealthCheck.function_scoped_fixture,
        HealthCheck.too_slow,
        HealthCheck.filter_too_much,
        HealthCheck.data_too_large,
    ],
)
def test_no_request_makes_an_api_answer_a_server_error(
    case, data, fuzzed, wsgi_in_the_test_transaction
):
    headers: dict[str, str] = {}
    steer = STEERING.get(case.operation.path, _steer_user_api)
    steer(case, data, fuzzed, headers)

    response = case.call(headers=headers)

    case.validate_response(response, checks=[not_a_server_error])


# --- scored data: any range of days, in any timezone -----------------------------------

# Accounts 14 hours ahead of UTC, 12 behind, and on local mean time before 1900.
ZONES = ["Pacific/Kiritimati", "Etc/GMT+12", "Asia/Manila", "America/Denver"]
ISO_DAY = re.compile(r"[0-9]{4}-[0-9]{2}-[0-9]{2}")
RANGE_MESSAGES = {
    f"The {name} parameter {problem}"
    for name in ("fromDate", "toDate")
    for problem in (
        "is required.",
        "must be a date in the format YYYY-MM-DD.",
        f"must be a date between {FIRST_DAY} and {LAST_DAY}.",
    )
} | {"The fromDate parameter must not be after toDate."}


@pytest.fixture
def zoned_keys(db) -> dict[str, tuple[str, Call]]:
    """For each zone of ``ZONES``: an account's scored-data key and its one call."""
    keys = {}
    for zone in ZONES:
        account = AccountFactory(timezone=zone)
        keys[zone] = (issue_scored_data_key(account), CallFactory(account=account))
    return keys


def _accepted_day(text: str) -> date | None:
    text = text.strip()
    if not ISO_DAY.fullmatch(text):
        return None
    try:
        day = date.fromisoformat(text)
    except ValueError:
        return None
    return day if FIRST_DAY <= day <= LAST_DAY else None


@pytest.mark.django_db
@given(
    first=day_text,
    last=day_text,
    zone=st.sampled_from(ZONES),
    return_type=st.sampled_from(["json", "xml"]),
)
@settings(
    max_examples=60,
    deadline=None,
    derandomize=True,
    database=None,
    suppress_health_check=[HealthCheck.function_scoped_fixture],
)
def test_any_range_of_days_is_answered_or_refused_as_a_bad_parameter(
    client, settings, zoned_keys, first, last, zone, return_type
):
    """Whatever two days are asked for (the calendar's ends included), in whatever timezone:
    a 200 with the calls of the range when both are accepted days in order, else a 400 in
    the documented shape naming the parameter. Never a 5xx, never a cut stream."""
    settings.API_RATE_LIMITS = dict.fromkeys(settings.API_RATE_LIMITS, "100000/min")
    key, call = zoned_keys[zone]

    response = client.get(
        "/api/scoreddata",
        {"apikey": key, "fromDate": first, "toDate": last, "returnType": return_type},
    )

    first_day, last_day = _accepted_day(first), _accepted_day(last)
    if first_day and last_day and first_day <= last_day:
        assert response.status_code == 200
        body = b"".join(response.streaming_content)  # streamed to its end
        received_on = call.received_at.astimezone(ZoneInfo(zone)).date()
        expected = [str(call.pk)] if first_day <= received_on <= last_day else []
        if return_type == "json":
            assert [record["id"] for record in json.loads(body)] == expected
        else:
            root = etree.fromstring(body, etree.XMLParser(resolve_entities=False))
            assert root.tag == "calldrips"
            assert root.xpath("calldrip/id/text()") == expected
        return
    assert response.status_code == 400, (first, last, response.status_code)
    if return_type == "json":
        found = response.json()
        assert found["success"] is False
        message = found["message"]
    else:
        root = etree.fromstring(response.content)
        assert (root.tag, root.findtext("success")) == ("error", "false")
        message = root.findtext("message")
    assert message in RANGE_MESSAGES
    # The first parameter at fault is the one named.
    if first_day is None:
        assert message.startswith("The fromDate parameter")
    elif last_day is None:
        assert message.startswith("The toDate parameter")
    else:
        assert message == "The fromDate parameter must not be after toDate."


# --- what the search relies on ------------------------------------------------------------------


def _api_routes(resolver: URLResolver, prefix: str = "") -> set[str]:
    routes: set[str] = set()
    for pattern in resolver.url_patterns:
        route = prefix + str(pattern.pattern)
        if isinstance(pattern, URLResolver):
            routes |= _api_routes(pattern, route)
        elif isinstance(pattern, URLPattern) and route.startswith("api/"):
            routes.add("/" + re.sub(r"<int:(\w+)>", r"{\1}", route))
    return routes


def test_every_api_route_is_in_the_schema_the_search_covers():
    """A new endpoint under /api/ is fuzzed as soon as it is routed, or this fails."""
    documented = set(schema.raw_schema["paths"])

    assert _api_routes(get_resolver()) - documented == {"/api/schema/", "/api/docs/"}
    assert documented >= {
        "/api/users",
        "/api/users/{user_id}",
        "/api/users/find/email",
        "/api/users/find/phone",
        "/api/users/find/available-user-code",
        "/api/nl",
        "/api/clicktocallv2",
        "/api/scoreddata",
        "/api/appointments",
        "/api/appointments/{appointment_id}",
        "/api/consent",
    }


def test_the_steering_reaches_past_authentication(fuzzed, api_client):
    """The steered values are real: the credentials, ids and key the search plants work."""
    tenant = fuzzed.tenant

    user = tenant.client().get(f"/api/users/{fuzzed.agent.pk}")
    call = api_client.get(
        "/api/scoreddata",
        {"apikey": fuzzed.scored_data_key, "callId": fuzzed.call.pk},
    )
    lead = api_client.post(
        "/api/nl",
        {
            "apiuser": tenant.credential.api_user,
            "apikey": tenant.key,
            "xml": adf(
                vendor_id=fuzzed.vendor.vendor_id,
                vendor_name=fuzzed.vendor.vendor_name,
            ),
        },
    )
    click = api_client.post(
        "/api/clicktocallv2",
        {
            "account_id": str(tenant.account.pk),
            "user_id": "0007",
            "customer_phone_number": "+17205550199",
        },
        format="json",
        HTTP_API_KEY=tenant.key,
    )

    assert user.status_code == 200
    assert call.status_code == 200
    assert lead.status_code == 200, lead.json()
    assert Lead.objects.filter(account=tenant.account).exists()
    assert click.status_code == 201, click.json()
    assert Call.objects.filter(account=tenant.account).count() == 3


# --- the cases the search found, pinned -------------------------------------------------------


def _nested(depth: int) -> bytes:
    return b'{"a":' * depth + b"1" + b"}" * depth


@pytest.mark.parametrize(
    ("method", "path", "headers"),
    [
        ("POST", "/api/users", "user api"),
        ("PUT", "/api/users/{user}", "user api"),
        ("POST", "/api/clicktocallv2", "click-to-call"),
        ("POST", "/api/clicktocallv2", None),  # the key would be read from the body
    ],
)
@pytest.mark.parametrize("payload", [b"[" * 10_000, _nested(5000)])
def test_a_deeply_nested_json_body_is_refused_with_the_validation_shape(
    fuzzed, api_client, method, path, headers, payload
):
    tenant = fuzzed.tenant
    credentials = {
        "user api": {
            "HTTP_APIUSER": tenant.credential.api_user,
            "HTTP_APIKEY": tenant.key,
        },
        "click-to-call": {"HTTP_API_KEY": tenant.key},
        None: {},
    }[headers]

    response = api_client.generic(
        method,
        path.format(user=fuzzed.agent.pk),
        payload,
        content_type="application/json",
        **credentials,
    )

    assert response.status_code == 422
    assert response.json() == {
        "message": INVALID,
        "errors": {
            "body": ["The request body may not be nested more than 32 levels deep."]
        },
    }
    assert User.objects.filter(pk=fuzzed.agent.pk).exists()
    assert not Call.objects.exclude(pk=fuzzed.call.pk).exists()


def test_lead_intake_answers_deeply_nested_bodies_without_a_server_error(
    fuzzed, api_client
):
    """Lead intake takes forms: a JSON body is an unsupported type, and a deeply nested ADF
    document in the form is refused by the hardened XML parser as not well-formed."""
    tenant = fuzzed.tenant
    json_body = api_client.generic(
        "POST", "/api/nl", b"[" * 10_000, content_type="application/json"
    )
    deep_xml = api_client.post(
        "/api/nl",
        {
            "apiuser": tenant.credential.api_user,
            "apikey": tenant.key,
            "xml": "<adf>" + "<a>" * 10_000 + "</a>" * 10_000 + "</adf>",
        },
    )

    assert json_body.status_code == 415
    assert deep_xml.status_code == 400
    assert deep_xml.json() == {
        "reason": "Unable to parse XML. Please check that the XML is well-formed and try again."
    }


@pytest.mark.parametrize(
    ("member", "value", "message"),
    [
        ("account_id", [], "The account id must be an integer."),
        ("account_id", {}, "The account id must be an integer."),
        ("account_id", float("inf"), "The account id must be an integer."),
        ("account_id", 1.5, "The account id must be an integer."),
        ("user_id", {}, "The user id must be a string."),
        ("user_id", [1], "The user id must be a string."),
        ("user_id", True, "The user id must be a string."),
        ("user_phone_number", [], "The user phone number must be a string."),
        ("customer_phone_number", {}, "The customer phone number must be a string."),
        ("customer_first_name", True, "The customer first name must be a string."),
        ("api_key", [], "The api key must be a string."),
    ],
)
def test_click_to_call_answers_a_member_of_the_wrong_type_with_the_validation_shape(
    fuzzed, api_client, member, value, message
):
    tenant = fuzzed.tenant
    body = {
        "account_id": str(tenant.account.pk),
        "user_id": str(fuzzed.agent.pk),
        "customer_phone_number": "+17205550199",
        member: value,
    }
    # A Python infinity goes as the literal 1e999, as any client could send it.
    text = json.dumps(body).replace("Infinity", "1e999")

    response = api_client.generic(
        "POST",
        "/api/clicktocallv2",
        text,
        content_type="application/json",
        HTTP_API_KEY=tenant.key,
    )

    assert response.status_code == 422
    assert response.json() == {"message": INVALID, "errors": {member: [message]}}
    assert not Call.objects.exclude(pk=fuzzed.call.pk).exists()


def test_the_picture_fetcher_is_replaced_for_the_search(fuzzed):
    """The search may send an HTTPS profilePicture; it must never leave the machine."""
    from users import pictures, services

    assert services.fetch_picture is not pictures.fetch_picture
    with pytest.raises(PictureError):
        services.fetch_picture("https://example.com/a.png")
