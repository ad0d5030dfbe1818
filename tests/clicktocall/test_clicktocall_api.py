"""Click-to-call (interface D) through HTTP: bodies compared whole, the queued call checked after."""

from datetime import timedelta

import pytest
from django.utils import timezone

from accounts.services import api_credential_revoke, api_key_rotate
from calls.models import AttemptOutcome, Call, CallAttempt, CallOrigin, CallStatus, Leg
from tests.accounts.factories import (
    AccountFactory,
    issue_credential,
    issue_scored_data_key,
)
from tests.calls.harness import World
from tests.users.factories import UserFactory
from tests.users.factories import agent as scheduled_agent

pytestmark = [pytest.mark.django_db, pytest.mark.urls("tests.clicktocall.urls")]

URL = "/api/clicktocallv2"
INVALID = "The given data was invalid."
INVALID_KEY = {"success": False, "message": "Invalid API key"}
UNAUTHORIZED = {"success": False, "message": "Unauthorized for this account"}
BAD_PHONE = "The {} must be a valid phone number, in E.164 or the account country's national format."


def agent(account, code=None, **fields):
    return UserFactory(account=account, account__code=code, **fields)


def body(tenant, **members):
    return {
        "account_id": str(tenant.account.pk),
        "customer_phone_number": "+17205550199",
        "customer_first_name": "Pat",
        "customer_last_name": "Lee",
        **members,
    }


def post(api_client, tenant, data, *, key=None):
    """POST ``data`` as JSON with the key in the ``api_key`` header (the tenant's by default)."""
    return api_client.post(
        URL, data, format="json", HTTP_API_KEY=tenant.key if key is None else key
    )


def initiated(response):
    """Checks the success body whole; returns the one call it queued."""
    assert response.status_code == 201, response.json()
    call = Call.objects.get()
    assert response.json() == {
        "success": True,
        "message": "Call initiated",
        "callId": call.pk,
    }
    return call


def invalid(response, errors):
    assert response.status_code == 422
    assert response.json() == {"message": INVALID, "errors": errors}
    assert not Call.objects.exists()


# --- success ----------------------------------------------------------------------------------


def test_by_user_id_queues_a_click_to_call_offered_to_that_agent_first(
    api_client, tenant, django_capture_on_commit_callbacks
):
    someone_else = agent(tenant.account)
    wanted = agent(tenant.account)
    before = timezone.now()

    with django_capture_on_commit_callbacks() as callbacks:
        response = post(api_client, tenant, body(tenant, user_id=str(wanted.pk)))

    assert response["Content-Type"] == "application/json; charset=utf-8"
    call = initiated(response)
    assert call.account == tenant.account
    assert call.origin == CallOrigin.CLICK_TO_CALL
    assert call.status == CallStatus.QUEUED
    assert call.requested_agent == wanted != someone_else
    assert call.agent is None
    assert call.phone == "+17205550199"
    assert (call.first_name, call.last_name) == ("Pat", "Lee")
    assert call.source == "Click to Call"
    assert before <= call.received_at <= timezone.now()
    assert call.team is None
    assert not call.is_test
    # The pipeline is handed the call once the request's transaction commits.
    assert len(callbacks) == 1


def test_ids_may_be_sent_as_numbers(api_client, tenant):
    wanted = agent(tenant.account)

    response = post(
        api_client,
        tenant,
        body(tenant, account_id=tenant.account.pk, user_id=wanted.pk),
    )

    assert initiated(response).requested_agent == wanted


@pytest.mark.parametrize("user_id", ["12", "0012", "000012", 12])
def test_by_user_code_with_or_without_zero_padding(
    api_client, tenant, other_tenant, user_id
):
    # The agent is the account's only user: should its id be 12, it is still the one meant.
    wanted = agent(tenant.account, code="0012")
    agent(tenant.other_account, code="0013")
    agent(other_tenant.account, code="0012")

    response = post(api_client, tenant, body(tenant, user_id=user_id))

    assert initiated(response).requested_agent == wanted


def test_user_id_is_the_id_first_and_a_padded_number_is_always_a_code(
    api_client, tenant
):
    by_id = agent(tenant.account)
    by_code = agent(tenant.account, code=f"{by_id.pk:04d}")
    padded = f"0{by_id.pk:04d}"

    first = post(api_client, tenant, body(tenant, user_id=str(by_id.pk)))
    second = post(api_client, tenant, body(tenant, user_id=padded))

    assert first.status_code == second.status_code == 201
    calls = {c.pk: c.requested_agent for c in Call.objects.all()}
    assert calls[first.json()["callId"]] == by_id
    assert calls[second.json()["callId"]] == by_code


@pytest.mark.parametrize(
    "user_phone_number", ["+13035551234", "(303) 555-1234", "303.555.1234"]
)
def test_by_user_phone_number_in_e164_or_national_format(
    api_client, tenant, user_phone_number
):
    agent(tenant.account, phone_number="+13035559876")
    wanted = agent(tenant.account, phone_number="+13035551234")

    response = post(
        api_client, tenant, body(tenant, user_phone_number=user_phone_number)
    )

    assert initiated(response).requested_agent == wanted


def test_user_id_wins_over_user_phone_number(api_client, tenant):
    wanted = agent(tenant.account, phone_number="+13035551111")
    agent(tenant.account, phone_number="+13035552222")

    response = post(
        api_client,
        tenant,
        body(tenant, user_id=str(wanted.pk), user_phone_number="+13035552222"),
    )

    assert initiated(response).requested_agent == wanted


@pytest.mark.parametrize(
    ("sent", "stored"),
    [
        ("(720) 555-0199", "+17205550199"),
        ("720-555-0199", "+17205550199"),
        ("1 720 555 0199", "+17205550199"),
        ("+44 7911 123456", "+447911123456"),
    ],
)
def test_customer_phone_number_is_read_in_the_account_country_and_stored_as_e164(
    api_client, tenant, sent, stored
):
    wanted = agent(tenant.account)

    response = post(
        api_client,
        tenant,
        body(tenant, user_id=str(wanted.pk), customer_phone_number=sent),
    )

    assert initiated(response).phone == stored


def test_national_numbers_follow_the_account_country_not_the_united_states(
    api_client, tenant
):
    british = AccountFactory(organization=tenant.organization, country="GB")
    wanted = agent(british, phone_number="+447911123456")

    response = post(
        api_client,
        tenant,
        {
            "account_id": british.pk,
            "user_phone_number": "07911 123456",
            "customer_phone_number": "07911 123457",
        },
    )

    call = initiated(response)
    assert (call.account, call.requested_agent) == (british, wanted)
    assert call.phone == "+447911123457"
    assert (call.first_name, call.last_name) == ("", "")


def test_names_are_optional_and_may_be_null(api_client, tenant):
    wanted = agent(tenant.account)

    response = post(
        api_client,
        tenant,
        body(
            tenant,
            user_id=str(wanted.pk),
            customer_first_name=None,
            customer_last_name="",
        ),
    )

    call = initiated(response)
    assert (call.first_name, call.last_name) == ("", "")


# --- the key ----------------------------------------------------------------------------------


def test_key_in_the_body_when_no_header_is_sent(api_client, tenant):
    wanted = agent(tenant.account)

    response = api_client.post(
        URL, body(tenant, user_id=str(wanted.pk), api_key=tenant.key), format="json"
    )

    assert initiated(response).requested_agent == wanted


def test_the_header_key_wins_over_the_body_member(api_client, tenant):
    wanted = agent(tenant.account)
    data = body(tenant, user_id=str(wanted.pk), api_key=tenant.key)

    refused = post(api_client, tenant, data, key="lc_abcdefgh_0123")
    accepted = post(api_client, tenant, {**data, "api_key": "junk"})

    assert (refused.status_code, refused.json()) == (401, INVALID_KEY)
    assert initiated(accepted).requested_agent == wanted


@pytest.mark.parametrize(
    ("headers", "body_key"),
    [
        ({}, None),
        ({}, ""),
        ({}, 12345),
        ({"HTTP_API_KEY": ""}, None),
        ({"HTTP_API_KEY": "garbage"}, None),
        ({"HTTP_API_KEY": "lc_abcdefgh_0123"}, None),
        ({}, "lc_abcdefgh_0123"),
    ],
)
def test_missing_or_invalid_key_is_refused(api_client, tenant, headers, body_key):
    wanted = agent(tenant.account)
    data = body(tenant, user_id=str(wanted.pk))
    if body_key is not None:
        data["api_key"] = body_key

    response = api_client.post(URL, data, format="json", **headers)

    assert response.status_code == 401
    assert response.json() == INVALID_KEY
    assert not Call.objects.exists()


def test_a_user_api_key_pair_in_user_api_headers_is_not_click_to_calls_key(
    api_client, tenant
):
    wanted = agent(tenant.account)

    response = tenant.client().post(
        URL, body(tenant, user_id=str(wanted.pk)), format="json"
    )

    assert (response.status_code, response.json()) == (401, INVALID_KEY)


def test_a_revoked_key_is_refused_and_a_rotated_one_works_through_its_grace(
    api_client, tenant
):
    wanted = agent(tenant.account)
    data = body(tenant, user_id=str(wanted.pk))
    new_key = api_key_rotate(credential=tenant.credential)

    assert post(api_client, tenant, data).status_code == 201
    assert post(api_client, tenant, data, key=new_key).status_code == 201

    api_key_rotate(credential=tenant.credential, grace=timedelta(0))
    assert post(api_client, tenant, data).status_code == 401

    api_credential_revoke(credential=tenant.credential)
    response = post(api_client, tenant, data, key=new_key)
    assert (response.status_code, response.json()) == (401, INVALID_KEY)
    assert Call.objects.count() == 2


# --- account scope ----------------------------------------------------------------------------


def test_an_account_of_another_tenant_is_unauthorized(api_client, tenant, other_tenant):
    theirs = agent(other_tenant.account)

    response = post(
        api_client,
        tenant,
        body(other_tenant, user_id=str(theirs.pk)),
    )

    assert (response.status_code, response.json()) == (403, UNAUTHORIZED)
    assert not Call.objects.exists()


@pytest.mark.parametrize("account_id", [987654321, "987654321", 99999999999999999999])
def test_an_unknown_account_is_unauthorized(api_client, tenant, account_id):
    response = post(
        api_client, tenant, body(tenant, account_id=account_id, user_id="1")
    )

    assert (response.status_code, response.json()) == (403, UNAUTHORIZED)


def test_an_inactive_account_is_unauthorized(api_client, tenant):
    wanted = agent(tenant.account)
    tenant.account.is_active = False
    tenant.account.save(update_fields=["is_active"])

    response = post(api_client, tenant, body(tenant, user_id=str(wanted.pk)))

    assert (response.status_code, response.json()) == (403, UNAUTHORIZED)


def test_a_narrowed_credential_reaches_only_its_accounts(api_client, tenant):
    _, narrowed_key = issue_credential(tenant.organization, accounts=[tenant.account])
    inside = agent(tenant.account)
    outside = agent(tenant.other_account)

    allowed = post(
        api_client, tenant, body(tenant, user_id=str(inside.pk)), key=narrowed_key
    )
    refused = post(
        api_client,
        tenant,
        body(tenant, account_id=tenant.other_account.pk, user_id=str(outside.pk)),
        key=narrowed_key,
    )
    # The organization-wide credential still reaches both.
    wide = post(
        api_client,
        tenant,
        body(tenant, account_id=tenant.other_account.pk, user_id=str(outside.pk)),
    )

    assert allowed.status_code == 201
    assert (refused.status_code, refused.json()) == (403, UNAUTHORIZED)
    assert wide.status_code == 201
    assert sorted(Call.objects.values_list("account_id", flat=True)) == sorted(
        [tenant.account.pk, tenant.other_account.pk]
    )


def test_scope_is_checked_before_the_other_members(api_client, tenant, other_tenant):
    response = post(
        api_client,
        tenant,
        {"account_id": other_tenant.account.pk, "customer_phone_number": "x"},
    )

    assert (response.status_code, response.json()) == (403, UNAUTHORIZED)


# --- the agent --------------------------------------------------------------------------------


def test_a_user_of_another_account_of_the_organization_is_not_this_accounts_agent(
    api_client, tenant
):
    elsewhere = agent(tenant.other_account, code="0007", phone_number="+13035557777")

    invalid(
        post(api_client, tenant, body(tenant, user_id=str(elsewhere.pk))),
        {"user_id": ["The selected user id is invalid."]},
    )
    invalid(
        post(api_client, tenant, body(tenant, user_id="7")),
        {"user_id": ["The selected user id is invalid."]},
    )
    # Their phone number is only a number here: rung as an agent who is not a user.
    by_phone = post(
        api_client, tenant, body(tenant, user_phone_number=elsewhere.phone_number)
    )

    call = initiated(by_phone)
    assert call.requested_agent is None
    assert (call.vendor_agent_id, call.agent_number) == ("", "+13035557777")


def test_a_user_of_another_tenant_is_not_this_accounts_agent(
    api_client, tenant, other_tenant
):
    theirs = agent(other_tenant.account, code="0005", phone_number="+13035555555")

    invalid(
        post(api_client, tenant, body(tenant, user_id=str(theirs.pk))),
        {"user_id": ["The selected user id is invalid."]},
    )
    invalid(
        post(api_client, tenant, body(tenant, user_id="0005")),
        {"user_id": ["The selected user id is invalid."]},
    )
    by_phone = post(api_client, tenant, body(tenant, user_phone_number="3035555555"))

    call = initiated(by_phone)
    assert call.requested_agent is None
    assert (call.vendor_agent_id, call.agent_number) == ("", "+13035555555")


def test_a_code_of_another_organization_does_not_match_even_for_a_shared_user(
    api_client, tenant, other_tenant
):
    """A user in two organizations is found by the code of the account's organization only."""
    shared = agent(tenant.account, code="0021")
    shared.accounts.add(other_tenant.account)
    shared.memberships.create(organization=other_tenant.organization, code="9999999999")

    ours = post(api_client, tenant, body(tenant, user_id="21"))
    theirs = post(api_client, tenant, body(tenant, user_id="9999999999"))

    assert initiated(ours).requested_agent == shared
    assert theirs.status_code == 422
    assert theirs.json()["errors"] == {"user_id": ["The selected user id is invalid."]}


@pytest.mark.parametrize("user_id", ["abc", "12a", "-5", "1.5", "99999999999999999999"])
def test_a_user_id_that_is_neither_id_nor_code_is_invalid(api_client, tenant, user_id):
    agent(tenant.account, code="0012")

    response = post(api_client, tenant, body(tenant, user_id=user_id))

    invalid(response, {"user_id": ["The selected user id is invalid."]})


def test_an_inactive_user_is_invalid(api_client, tenant):
    gone = agent(tenant.account, is_active=False)

    response = post(api_client, tenant, body(tenant, user_id=str(gone.pk)))

    invalid(response, {"user_id": ["The selected user id is invalid."]})


def test_a_user_without_a_phone_number_cannot_be_called(api_client, tenant):
    silent = agent(tenant.account, phone_number="")

    response = post(api_client, tenant, body(tenant, user_id=str(silent.pk)))

    invalid(
        response, {"user_id": ["The selected user id has no phone number to call."]}
    )


# --- validation -------------------------------------------------------------------------------


def test_every_missing_required_member_is_reported_at_once(api_client, tenant):
    response = post(api_client, tenant, {})

    invalid(
        response,
        {
            "account_id": ["The account id field is required."],
            "customer_phone_number": ["The customer phone number field is required."],
            "user_id": [
                "The user id field is required when user phone number is not present."
            ],
        },
    )


@pytest.mark.parametrize(
    "members",
    [{}, {"user_id": ""}, {"user_id": None, "user_phone_number": "  "}],
)
def test_user_id_is_required_without_user_phone_number(api_client, tenant, members):
    response = post(api_client, tenant, body(tenant, **members))

    invalid(
        response,
        {
            "user_id": [
                "The user id field is required when user phone number is not present."
            ]
        },
    )


@pytest.mark.parametrize(
    ("member", "value", "message"),
    [
        ("account_id", "abc", "The account id must be an integer."),
        ("account_id", "12.5", "The account id must be an integer."),
        ("account_id", True, "The account id must be an integer."),
        ("account_id", "", "The account id field is required."),
        ("account_id", None, "The account id field is required."),
        ("account_id", 0, "The account id must be at least 1."),
        ("customer_phone_number", "", "The customer phone number field is required."),
        ("customer_phone_number", None, "The customer phone number field is required."),
        (
            "customer_phone_number",
            "555-0123",
            BAD_PHONE.format("customer phone number"),
        ),
        ("customer_phone_number", "+1 720", BAD_PHONE.format("customer phone number")),
        ("customer_phone_number", "call me", BAD_PHONE.format("customer phone number")),
        (
            "customer_phone_number",
            "7" * 33,
            "The customer phone number may not be greater than 32 characters.",
        ),
        (
            "customer_phone_number",
            ["+17205550199"],
            "The customer phone number must be a string.",
        ),
        (
            "customer_first_name",
            "x" * 46,
            "The customer first name may not be greater than 45 characters.",
        ),
        (
            "customer_last_name",
            "y" * 46,
            "The customer last name may not be greater than 45 characters.",
        ),
        ("customer_last_name", {"a": 1}, "The customer last name must be a string."),
        (
            "customer_first_name",
            "Pat\x00",
            "The customer first name may not contain null characters.",
        ),
        (
            "customer_first_name",
            "Ctl\u0001\u000bchar",
            "The customer first name field must not contain control characters.",
        ),
        (
            "customer_last_name",
            "Eve\r\nBcc: evil@example.com",
            "The customer last name field must not contain control characters.",
        ),
        (
            "user_phone_number",
            "+1720555\u007f0199",
            "The user phone number field must not contain control characters.",
        ),
        ("user_id", ["1"], "The user id must be a string."),
        ("user_id", "1" * 21, "The user id may not be greater than 20 characters."),
    ],
)
def test_an_invalid_member_is_reported_and_nothing_is_queued(
    api_client, tenant, member, value, message
):
    wanted = agent(tenant.account)
    data = body(tenant, user_id=str(wanted.pk))
    data[member] = value

    response = post(api_client, tenant, data)

    invalid(response, {member: [message]})


def test_an_invalid_user_phone_number_is_reported(api_client, tenant):
    wanted = agent(tenant.account)

    invalid(
        post(api_client, tenant, body(tenant, user_phone_number="12")),
        {"user_phone_number": [BAD_PHONE.format("user phone number")]},
    )
    # Even beside a user_id, a user phone number must be one.
    invalid(
        post(
            api_client,
            tenant,
            body(tenant, user_id=str(wanted.pk), user_phone_number="12"),
        ),
        {"user_phone_number": [BAD_PHONE.format("user phone number")]},
    )


@pytest.mark.parametrize(
    ("payload", "headers"),
    [
        (b"{not json", {"HTTP_API_KEY": "key"}),
        (b"[1, 2]", {"HTTP_API_KEY": "key"}),
        (b'"text"', {"HTTP_API_KEY": "key"}),
        (b"{not json", {}),
    ],
)
def test_a_body_that_is_not_a_json_object_is_refused(
    api_client, tenant, payload, headers
):
    headers = dict.fromkeys(headers, tenant.key)

    response = api_client.generic(
        "POST", URL, payload, content_type="application/json", **headers
    )

    assert response.status_code == 422
    assert response.json()["message"] == INVALID
    assert list(response.json()["errors"]) == ["body"]
    assert not Call.objects.exists()


def test_a_form_body_is_an_unsupported_content_type(api_client, tenant):
    response = api_client.post(
        URL,
        "account_id=1&customer_phone_number=%2B17205550199&user_id=1",
        content_type="application/x-www-form-urlencoded",
        HTTP_API_KEY=tenant.key,
    )

    assert response.status_code == 415
    assert response.json()["success"] is False


def test_a_body_over_one_mebibyte_is_refused_before_it_is_read(api_client, tenant):
    response = api_client.generic(
        "POST",
        URL,
        b'{"customer_first_name": "' + b"x" * (1024 * 1024) + b'"}',
        content_type="application/json",
        HTTP_API_KEY=tenant.key,
    )

    assert response.status_code == 413
    assert response.json() == {
        "success": False,
        "message": "The request body is larger than 1 MiB.",
    }
    assert not Call.objects.exists()


def test_get_is_not_allowed(api_client, tenant):
    response = api_client.get(URL, HTTP_API_KEY=tenant.key)

    assert response.status_code == 405
    assert response.json() == {"success": False, "message": "Method not allowed."}


# --- rate limits and isolation ----------------------------------------------------------------


def test_rate_limit_answers_429_with_retry_after(
    api_client, tenant, settings, one_window
):
    settings.API_RATE_LIMITS = {**settings.API_RATE_LIMITS, "clicktocall": "2/min"}
    wanted = agent(tenant.account)
    data = body(tenant, user_id=str(wanted.pk))

    statuses = [post(api_client, tenant, data).status_code for _ in range(3)]
    limited = post(api_client, tenant, data)

    assert statuses == [201, 201, 429]
    assert limited.status_code == 429
    assert limited.json() == {
        "success": False,
        "message": "Too many requests. Please slow down.",
    }
    assert limited["Retry-After"] == "20"
    assert Call.objects.count() == 2


def test_rate_limit_counts_each_credential_and_interface_separately(
    api_client, tenant, other_tenant, settings, one_window
):
    settings.API_RATE_LIMITS = {**settings.API_RATE_LIMITS, "clicktocall": "1/min"}
    ours = agent(tenant.account)
    theirs = agent(other_tenant.account)

    assert post(api_client, tenant, body(tenant, user_id=ours.pk)).status_code == 201
    assert post(api_client, tenant, body(tenant, user_id=ours.pk)).status_code == 429
    assert (
        post(
            api_client, other_tenant, body(other_tenant, user_id=theirs.pk)
        ).status_code
        == 201
    )
    users_api = tenant.client().get(
        f"/api/users/find/available-user-code?organizationId={tenant.organization.pk}"
    )
    assert users_api.status_code == 200


def test_two_tenants_with_the_same_codes_each_reach_only_their_own_agent(
    api_client, tenant, other_tenant
):
    ours = agent(tenant.account, code="0001", phone_number="+13035550111")
    theirs = agent(other_tenant.account, code="0001", phone_number="+13035550222")

    mine = post(api_client, tenant, body(tenant, user_id="1"))
    yours = post(api_client, other_tenant, body(other_tenant, user_id="0001"))
    crossed = post(api_client, tenant, body(other_tenant, user_id="1"), key=None)
    crossed_back = post(
        api_client, other_tenant, body(tenant, user_id="1"), key=other_tenant.key
    )

    assert mine.status_code == yours.status_code == 201
    assert (crossed.status_code, crossed.json()) == (403, UNAUTHORIZED)
    assert (crossed_back.status_code, crossed_back.json()) == (403, UNAUTHORIZED)
    calls = {c.pk: c for c in Call.objects.all()}
    assert len(calls) == 2
    assert (
        calls[mine.json()["callId"]].requested_agent,
        calls[mine.json()["callId"]].account,
    ) == (ours, tenant.account)
    assert (
        calls[yours.json()["callId"]].requested_agent,
        calls[yours.json()["callId"]].account,
    ) == (theirs, other_tenant.account)


# --- an agent of the vendor's system -----------------------------------------------------------


@pytest.fixture
def world(monkeypatch, django_capture_on_commit_callbacks):
    """The call pipeline on the simulator, in virtual time (tests/calls/harness.py)."""
    return World(monkeypatch, django_capture_on_commit_callbacks)


def post_and_run(world, api_client, tenant, data):
    """POST the request, then play its call to its end; returns the call."""
    with world.capture(execute=True):
        response = post(api_client, tenant, data)
    call = initiated(response)
    world.run()
    call.refresh_from_db()
    return call


def agent_legs(call):
    return [
        (leg.agent, leg.number, leg.outcome)
        for leg in CallAttempt.objects.filter(call=call, leg=Leg.AGENT).order_by("id")
    ]


def record(api_client, tenant, call, **params):
    key = issue_scored_data_key(tenant.account)
    return api_client.get(
        "/api/scoreddata", {"apikey": key, "callId": call.pk, **params}
    )


def test_a_vendor_agent_id_with_a_phone_number_rings_that_phone_and_is_the_records_agent(
    world, api_client, tenant
):
    # A user of the account on duty: never offered a call meant for the vendor's agent.
    scheduled_agent(tenant.account, phone="+13035550140")

    call = post_and_run(
        world,
        api_client,
        tenant,
        body(tenant, user_id="crm-417", user_phone_number="(303) 555-0142"),
    )

    assert (call.vendor_agent_id, call.agent_number) == ("crm-417", "+13035550142")
    assert call.requested_agent is None
    assert call.agent is None
    assert call.status == CallStatus.ANSWER
    assert agent_legs(call) == [(None, "+13035550142", AttemptOutcome.ACCEPTED)]
    json_record = record(api_client, tenant, call)
    assert json_record.status_code == 200
    assert (json_record.json()["agent"], json_record.json()["status"]) == (
        "crm-417",
        "ANSWER",
    )
    xml_record = record(api_client, tenant, call, returnType="xml").content.decode()
    assert "<agent>crm-417</agent>" in xml_record


@pytest.mark.parametrize("user_phone_number", ["303-555-0143", "+13035550143"])
def test_a_phone_number_alone_that_is_no_users_is_rung_and_shown_as_the_agent(
    world, api_client, tenant, user_phone_number
):
    agent(tenant.account, phone_number="+13035559876")

    call = post_and_run(
        world, api_client, tenant, body(tenant, user_phone_number=user_phone_number)
    )

    assert (call.vendor_agent_id, call.agent_number) == ("", "+13035550143")
    assert call.requested_agent is None
    assert call.status == CallStatus.ANSWER
    assert agent_legs(call) == [(None, "+13035550143", AttemptOutcome.ACCEPTED)]
    assert record(api_client, tenant, call).json()["agent"] == "+13035550143"


def test_a_phone_number_alone_that_is_a_users_makes_that_user_the_agent(
    world, api_client, tenant
):
    user = scheduled_agent(
        tenant.account, phone="+13035550144", first_name="Lee", last_name="Park"
    )

    call = post_and_run(
        world, api_client, tenant, body(tenant, user_phone_number="(303) 555-0144")
    )

    assert call.requested_agent == call.agent == user
    assert (call.vendor_agent_id, call.agent_number) == ("", "")
    assert agent_legs(call) == [(user, "+13035550144", AttemptOutcome.ACCEPTED)]
    assert record(api_client, tenant, call).json()["agent"] == "Lee Park"


def test_a_vendor_agent_id_with_the_phone_of_a_user_makes_that_user_the_agent(
    api_client, tenant
):
    user = agent(tenant.account, phone_number="+13035550145")

    response = post(
        api_client,
        tenant,
        body(tenant, user_id="crm-9", user_phone_number="+13035550145"),
    )

    call = initiated(response)
    assert call.requested_agent == user
    assert (call.vendor_agent_id, call.agent_number) == ("crm-9", "")


@pytest.mark.parametrize("user_id", ["crm-417", "4242424242"])
def test_a_user_id_that_names_no_user_needs_a_phone_number(api_client, tenant, user_id):
    response = post(api_client, tenant, body(tenant, user_id=user_id))

    invalid(response, {"user_id": ["The selected user id is invalid."]})


def test_a_vendor_agents_phone_number_must_be_a_phone_number(api_client, tenant):
    response = post(
        api_client, tenant, body(tenant, user_id="crm-417", user_phone_number="12")
    )

    invalid(response, {"user_phone_number": [BAD_PHONE.format("user phone number")]})
