"""The User API (interface A) through HTTP: bodies compared whole, state checked after."""

import json
from datetime import time

import pytest
from django.contrib.auth.models import Group

from accounts.services import api_credential_revoke, api_key_rotate
from tests.users.factories import UserFactory
from users.models import Membership, User, UserScheduleDay

pytestmark = pytest.mark.django_db

WEEK = ("monday", "tuesday", "wednesday", "thursday", "friday", "saturday", "sunday")
INVALID = "The given data was invalid."


def week(start="09:00", end="17:00", active=True, **days):
    schedule = {"active": active}
    for day in WEEK:
        schedule[day] = days.get(
            day, {"active": True, "startTime": start, "endTime": end}
        )
    return schedule


def account_schedule():
    """The factory's account schedule: weekdays 08:00-18:00, weekend inactive."""
    return {
        "active": True,
        **{
            day: {"active": i < 5, "startTime": "08:00", "endTime": "18:00"}
            for i, day in enumerate(WEEK)
        },
    }


def create_body(tenant, **overrides):
    body = {
        "organizationId": tenant.organization.pk,
        "firstName": "Jane",
        "lastName": "Doe",
        "emailAddress": "jane.doe@example.com",
        "accountIds": [tenant.account.pk],
    }
    body.update(overrides)
    return body


def post_user(tenant, **overrides):
    return tenant.client().post(
        "/api/users", create_body(tenant, **overrides), format="json"
    )


def send_json(client, method, url, body):
    """Send ``body`` as JSON text the way any client could: a Python infinity goes as the
    literal 1e999, which a JSON parser reads as a number too large for any integer."""
    text = json.dumps(body).replace("Infinity", "1e999")
    return client.generic(method, url, text, content_type="application/json")


def team_out(team):
    return {"id": team.pk, "name": team.name, "accountId": team.account_id}


# --- create ---------------------------------------------------------------------------------


def test_create_with_only_required_members_applies_every_default(tenant):
    response = post_user(tenant)

    assert response.status_code == 201
    assert response["Content-Type"] == "application/json; charset=utf-8"
    user = User.objects.get(email="jane.doe@example.com")
    assert response.json() == {
        "success": True,
        "action": "create_user",
        "message": "User created successfully",
        "user": {
            "id": user.pk,
            "firstName": "Jane",
            "lastName": "Doe",
            "fullName": "Jane Doe",
            "emailAddress": "jane.doe@example.com",
            "username": "jane.doe@example.com",
            "phoneNumber": None,
            "companyRole": None,
            "imageUrl": None,
            "timezone": "America/Denver",
            "country": "United States",
            "bio": None,
            "code": "0001",
            "twelveHourTimeFormat": False,
            "organizationIds": [tenant.organization.pk],
            "accountIds": [tenant.account.pk],
            "teams": [team_out(t) for t in tenant.teams],
            "schedule": account_schedule(),
        },
    }
    assert list(user.groups.values_list("name", flat=True)) == ["Agent"]
    assert not user.has_usable_password()


def test_create_with_every_member(tenant):
    response = post_user(
        tenant,
        accountIds=[tenant.account.pk, tenant.other_account.pk],
        username="jdoe",
        password="Secr3t!pw",
        phoneNumber="+13035550123",
        companyRole="Sales lead",
        permissionTemplate="Manager",
        timezone="Europe/Berlin",
        country="Germany",
        bio="Sells trucks.",
        code="42",
        twelveHourTimeFormat=True,
        teams=[tenant.teams[1].pk, tenant.other_teams[0].pk],
        schedule=week(
            saturday={"active": False, "startTime": "10:00", "endTime": "12:00"}
        ),
    )

    assert response.status_code == 201, response.json()
    body = response.json()["user"]
    assert body == {
        "id": body["id"],
        "firstName": "Jane",
        "lastName": "Doe",
        "fullName": "Jane Doe",
        "emailAddress": "jane.doe@example.com",
        "username": "jdoe",
        "phoneNumber": "+13035550123",
        "companyRole": "Sales lead",
        "imageUrl": None,
        "timezone": "Europe/Berlin",
        "country": "Germany",
        "bio": "Sells trucks.",
        "code": "0042",
        "twelveHourTimeFormat": True,
        "organizationIds": [tenant.organization.pk],
        "accountIds": sorted([tenant.account.pk, tenant.other_account.pk]),
        "teams": [team_out(tenant.teams[1]), team_out(tenant.other_teams[0])],
        "schedule": week(
            saturday={"active": False, "startTime": "10:00", "endTime": "12:00"}
        ),
    }
    user = User.objects.get(pk=body["id"])
    assert user.check_password("Secr3t!pw")
    assert list(user.groups.values_list("name", flat=True)) == ["Manager"]
    assert UserScheduleDay.objects.get(user=user, weekday=5).start_time == time(10)


def test_create_with_null_schedule_stores_no_schedule(tenant):
    response = post_user(tenant, schedule=None)

    assert response.status_code == 201
    assert response.json()["user"]["schedule"] is None
    assert not UserScheduleDay.objects.exists()


def test_create_copies_no_schedule_from_an_account_without_one(tenant):
    tenant.account.schedule_days.all().delete()

    response = post_user(tenant)

    assert response.json()["user"]["schedule"] is None


def test_create_reports_every_missing_required_member(tenant):
    response = tenant.client().post(
        "/api/users", {"organizationId": tenant.organization.pk}, format="json"
    )

    assert response.status_code == 422
    assert response.json() == {
        "message": INVALID,
        "errors": {
            "firstName": ["The first name field is required."],
            "lastName": ["The last name field is required."],
            "emailAddress": ["The email address field is required."],
            "accountIds": ["The account ids field is required."],
        },
    }
    assert not User.objects.exists()


@pytest.mark.parametrize(
    ("member", "value", "message"),
    [
        (
            "firstName",
            "x" * 46,
            "The first name may not be greater than 45 characters.",
        ),
        ("lastName", "y" * 46, "The last name may not be greater than 45 characters."),
        (
            "emailAddress",
            "a" * 250 + "@x.com",
            "The email address may not be greater than 255 characters.",
        ),
        (
            "emailAddress",
            "not-an-email",
            "The email address must be a valid email address.",
        ),
        ("username", "u" * 76, "The username may not be greater than 75 characters."),
        ("password", "Ab1!", "The password must be at least 7 characters."),
        (
            "password",
            "A1!" + "b" * 253,
            "The password may not be greater than 255 characters.",
        ),
        (
            "password",
            "alllower1!",
            "The password must contain at least one digit, one lowercase letter, one uppercase letter and one special character.",
        ),
        (
            "password",
            "NoDigits!!",
            "The password must contain at least one digit, one lowercase letter, one uppercase letter and one special character.",
        ),
        (
            "password",
            "NoSpecial12",
            "The password must contain at least one digit, one lowercase letter, one uppercase letter and one special character.",
        ),
        (
            "phoneNumber",
            "303-555",
            "The phone number must be a valid phone number in E.164 format, e.g. +13035550100.",
        ),
        (
            "companyRole",
            "r" * 256,
            "The company role may not be greater than 255 characters.",
        ),
        ("bio", "b" * 256, "The bio may not be greater than 255 characters."),
        (
            "timezone",
            "Mars/Olympus",
            "The timezone must be a valid timezone, e.g. America/Denver.",
        ),
        ("code", "12a", "The code must be a number of at most 10 digits."),
        ("code", "12345678901", "The code may not be greater than 10 characters."),
        (
            "twelveHourTimeFormat",
            "perhaps",
            "The twelve hour time format field must be true or false.",
        ),
        ("accountIds", "1", "The account ids must be an array."),
        ("accountIds", [], "The account ids field is required."),
        ("teams", 5, "The teams must be an array."),
        (
            "permissionTemplate",
            "Astronaut",
            "The selected permission template is invalid.",
        ),
        (
            "profilePicture",
            "http://example.com/a.png",
            "The profile picture must be an HTTPS URL.",
        ),
        ("schedule", "always", "The schedule must be an object."),
        ("firstName", ["Jane"], "The first name must be a string."),
        ("firstName", "", "The first name field is required."),
        ("organizationId", "abc", "The organization id must be an integer."),
    ],
)
def test_create_rejects_invalid_member(tenant, member, value, message):
    response = post_user(tenant, **{member: value})

    assert response.status_code == 422
    assert response.json() == {"message": INVALID, "errors": {member: [message]}}
    assert not User.objects.exists()


def test_create_reports_nested_members_with_dotted_keys(tenant):
    schedule = week()
    del schedule["sunday"]
    schedule["monday"] = {"active": True, "startTime": "17:00", "endTime": "09:00"}
    schedule["tuesday"] = {
        "active": "sometimes",
        "startTime": "9am",
        "endTime": "25:00",
    }
    schedule["wednesday"] = {"active": True, "startTime": "09:00"}

    response = post_user(
        tenant,
        schedule=schedule,
        accountIds=[tenant.account.pk, "x"],
        teams=[tenant.teams[0].pk, "y"],
    )

    assert response.status_code == 422
    assert response.json()["errors"] == {
        "accountIds.1": ["The account ids.1 must be an integer."],
        "teams.1": ["The teams.1 must be an integer."],
        "schedule.monday.endTime": [
            "The schedule.monday.end time must be a time after the start time."
        ],
        "schedule.tuesday.active": [
            "The schedule.tuesday.active field must be true or false."
        ],
        "schedule.tuesday.startTime": [
            "The schedule.tuesday.start time must be a time in HH:MM (24-hour) format."
        ],
        "schedule.tuesday.endTime": [
            "The schedule.tuesday.end time must be a time in HH:MM (24-hour) format."
        ],
        "schedule.wednesday.endTime": [
            "The schedule.wednesday.end time field is required."
        ],
        "schedule.sunday": ["The schedule.sunday field is required."],
    }


def test_create_rejects_accounts_and_teams_outside_the_organization(
    tenant, other_tenant
):
    response = post_user(
        tenant,
        accountIds=[tenant.account.pk, other_tenant.account.pk],
        teams=[tenant.teams[0].pk, other_tenant.teams[0].pk, tenant.other_teams[0].pk],
    )

    assert response.status_code == 422
    assert response.json()["errors"] == {
        "accountIds.1": ["The selected account ids.1 is invalid."],
        "teams.1": ["The selected teams.1 is invalid."],
        "teams.2": ["The selected teams.2 is invalid."],
    }
    assert not User.objects.exists()


def test_create_rejects_a_taken_username_case_sensitively(tenant, other_tenant):
    UserFactory(username="Jane@Example.com", account=other_tenant.account)

    taken = post_user(tenant, username="Jane@Example.com")
    different_case = post_user(tenant, username="jane@example.com")

    assert taken.status_code == 422
    assert taken.json()["errors"] == {
        "username": ["The username has already been taken."]
    }
    assert different_case.status_code == 201


def test_create_defaults_username_to_email_and_refuses_a_taken_one(tenant):
    assert post_user(tenant).status_code == 201

    again = post_user(tenant, firstName="Other")

    assert again.status_code == 422
    assert again.json()["errors"] == {
        "username": ["The username has already been taken."]
    }


def test_a_username_defaulted_to_an_email_over_75_characters_is_refused(tenant):
    """The username keeps part 8's limit when it defaults to the (255-character) email."""
    long_email = "a" * 70 + "@example.com"  # 82 characters

    defaulted = post_user(tenant, emailAddress=long_email)
    chosen = post_user(tenant, emailAddress=long_email, username="jane.lee")

    assert defaulted.status_code == 422
    assert defaulted.json() == {
        "message": "The given data was invalid.",
        "errors": {"username": ["The username may not be greater than 75 characters."]},
    }
    assert chosen.status_code == 201
    assert User.objects.get().username == "jane.lee"


def test_a_null_character_is_refused_in_the_documented_style(tenant):
    response = post_user(tenant, firstName="Ja\x00ne", emailAddress="ja\x00ne@x.com")

    assert response.status_code == 422
    assert response.json()["errors"] == {
        "firstName": ["The first name may not contain null characters."],
        "emailAddress": [
            "The email address may not contain null characters.",
            "The email address must be a valid email address.",
        ],
    }
    assert not User.objects.exists()


def test_create_rejects_a_code_taken_in_the_organization_but_not_elsewhere(
    tenant, other_tenant
):
    UserFactory(account=tenant.account, account__code="0007")
    UserFactory(account=other_tenant.account, account__code="0008")

    taken = post_user(tenant, code="7")
    free = post_user(tenant, code="0008", emailAddress="free@example.com")

    assert taken.status_code == 422
    assert taken.json()["errors"] == {"code": ["The code has already been taken."]}
    assert free.status_code == 201
    assert free.json()["user"]["code"] == "0008"


def test_create_auto_assigns_one_more_than_the_highest_code(tenant):
    UserFactory(account=tenant.account, account__code="0041")
    UserFactory(account=tenant.account, account__code="0009")

    response = post_user(tenant)

    assert response.json()["user"]["code"] == "0042"


def test_create_in_an_organization_of_another_tenant_is_unauthorized(
    tenant, other_tenant
):
    response = post_user(
        tenant,
        organizationId=other_tenant.organization.pk,
        accountIds=[other_tenant.account.pk],
    )

    assert response.status_code == 403
    assert response.json() == {
        "success": False,
        "message": "Unauthorized for this organization",
    }
    assert not User.objects.exists()


def test_create_in_an_unknown_organization_is_unauthorized(tenant):
    response = post_user(tenant, organizationId=999999)

    assert response.status_code == 403
    assert response.json() == {
        "success": False,
        "message": "Unauthorized for this organization",
    }


@pytest.mark.parametrize(
    ("body", "content_type"),
    [
        (b"{not json", "application/json"),
        (b"[1, 2]", "application/json"),
        (b'"text"', "application/json"),
    ],
)
def test_create_rejects_a_body_that_is_not_a_json_object(tenant, body, content_type):
    response = tenant.client().generic(
        "POST", "/api/users", body, content_type=content_type
    )

    assert response.status_code == 422
    assert response.json()["message"] == INVALID
    assert list(response.json()["errors"]) == ["body"]


@pytest.mark.parametrize(
    ("member", "value", "message"),
    [
        ("emailAddress", True, "The email address must be a string."),
        ("emailAddress", [], "The email address must be a string."),
        ("emailAddress", {}, "The email address must be a string."),
        ("emailAddress", [1], "The email address must be a string."),
        ("firstName", {"a": 1}, "The first name must be a string."),
        ("username", False, "The username must be a string."),
        ("password", [], "The password must be a string."),
        ("phoneNumber", {}, "The phone number must be a string."),
        ("profilePicture", [], "The profile picture must be a string."),
        ("timezone", True, "The timezone must be a string."),
        ("code", {}, "The code must be a string."),
        ("organizationId", 1e999, "The organization id must be an integer."),
        ("organizationId", -1e999, "The organization id must be an integer."),
        ("organizationId", [1], "The organization id must be an integer."),
        ("organizationId", True, "The organization id must be an integer."),
        ("organizationId", 1.5, "The organization id must be an integer."),
        (
            "twelveHourTimeFormat",
            [],
            "The twelve hour time format field must be true or false.",
        ),
        ("accountIds", {}, "The account ids must be an array."),
        ("teams", {"0": 1}, "The teams must be an array."),
        ("schedule", [], "The schedule must be an object."),
        ("schedule", True, "The schedule must be an object."),
    ],
)
def test_create_answers_a_member_of_the_wrong_type_with_the_validation_shape(
    tenant, member, value, message
):
    response = send_json(
        tenant.client(), "POST", "/api/users", create_body(tenant, **{member: value})
    )

    assert response.status_code == 422
    assert response.json() == {"message": INVALID, "errors": {member: [message]}}
    assert not User.objects.exists()


def test_an_organization_id_beyond_any_stored_one_is_unauthorized(tenant):
    """Any whole number names an organization; one that does not exist is a 403."""
    huge = 10**30

    create = post_user(tenant, organizationId=huge)
    find = tenant.client().get(
        "/api/users/find/email",
        {"organizationId": str(huge), "emailAddress": "a@example.com"},
    )

    unauthorized = {"success": False, "message": "Unauthorized for this organization"}
    assert (create.status_code, create.json()) == (403, unauthorized)
    assert (find.status_code, find.json()) == (403, unauthorized)
    assert not User.objects.exists()


def test_create_reports_wrong_types_inside_lists_and_the_schedule_with_dotted_keys(
    tenant,
):
    schedule = week()
    schedule["monday"] = []
    schedule["tuesday"] = {"active": [], "startTime": 9, "endTime": {}}

    response = send_json(
        tenant.client(),
        "POST",
        "/api/users",
        create_body(
            tenant,
            accountIds=[tenant.account.pk, 1e999, [2], 10**30],
            teams=[None, True],
            schedule=schedule,
        ),
    )

    assert response.status_code == 422
    assert response.json()["errors"] == {
        "accountIds.1": ["The account ids.1 must be an integer."],
        "accountIds.2": ["The account ids.2 must be an integer."],
        "accountIds.3": [
            "The account ids.3 may not be greater than 9223372036854775807."
        ],
        "teams.0": ["The teams.0 field is required."],
        "teams.1": ["The teams.1 must be an integer."],
        "schedule.monday": ["The schedule.monday must be an object."],
        "schedule.tuesday.active": [
            "The schedule.tuesday.active field must be true or false."
        ],
        "schedule.tuesday.startTime": [
            "The schedule.tuesday.start time must be a time in HH:MM (24-hour) format."
        ],
        "schedule.tuesday.endTime": ["The schedule.tuesday.end time must be a string."],
    }
    assert not User.objects.exists()


def test_create_refuses_text_that_cannot_be_stored(tenant):
    response = tenant.client().generic(
        "POST",
        "/api/users",
        b'{"organizationId": %d, "firstName": "Jane\\ud800", "lastName": "Doe",'
        b' "emailAddress": "jane@example.com", "accountIds": [%d]}'
        % (tenant.organization.pk, tenant.account.pk),
        content_type="application/json",
    )

    assert response.status_code == 422
    assert response.json() == {
        "message": INVALID,
        "errors": {"firstName": ["The first name must be valid UTF-8 text."]},
    }
    assert not User.objects.exists()


@pytest.mark.parametrize(
    "payload",
    [
        b"[" * 5000 + b"]" * 5000,
        b'{"a":' * 5000 + b"1" + b"}" * 5000,
        b'{"schedule": ' + b"[" * 100_000,
    ],
)
def test_create_refuses_a_deeply_nested_body_with_the_validation_shape(tenant, payload):
    response = tenant.client().generic(
        "POST", "/api/users", payload, content_type="application/json"
    )

    assert response.status_code == 422
    assert response.json() == {
        "message": INVALID,
        "errors": {
            "body": ["The request body may not be nested more than 32 levels deep."]
        },
    }
    assert not User.objects.exists()


def test_a_body_nested_to_the_limit_is_parsed_as_usual(tenant):
    """Nesting up to the limit is validation's business, not the parser's."""
    payload = create_body(tenant)
    nested: int | list[object] = 1
    for _ in range(31):  # the body object is the 32nd level
        nested = [nested]
    payload["bio"] = nested
    response = tenant.client().post("/api/users", payload, format="json")

    assert response.status_code == 422
    assert response.json()["errors"] == {"bio": ["The bio must be a string."]}


def test_create_refuses_a_body_over_one_mebibyte_before_reading_it(tenant):
    response = tenant.client().generic(
        "POST",
        "/api/users",
        b'{"bio": "' + b"x" * (1024 * 1024) + b'"}',
        content_type="application/json",
    )

    assert response.status_code == 413
    assert response.json() == {
        "success": False,
        "message": "The request body is larger than 1 MiB.",
    }


@pytest.mark.django_db(transaction=True)
def test_concurrent_creates_never_share_a_code(tenant):
    """Creates race from several threads; each gets its own auto-assigned code."""
    from concurrent.futures import ThreadPoolExecutor

    from django.db import connection

    def create(n):
        try:
            return post_user(tenant, emailAddress=f"agent{n}@example.com").status_code
        finally:
            connection.close()

    with ThreadPoolExecutor(max_workers=8) as pool:
        statuses = list(pool.map(create, range(16)))

    assert statuses == [201] * 16
    codes = list(
        Membership.objects.filter(organization=tenant.organization).values_list(
            "code", flat=True
        )
    )
    assert sorted(codes, key=str) == [f"{n:04d}" for n in range(1, 17)]


@pytest.mark.django_db(transaction=True)
def test_concurrent_creates_with_the_same_code_let_one_win(tenant):
    from concurrent.futures import ThreadPoolExecutor

    from django.db import connection

    def create(n):
        try:
            return post_user(
                tenant, emailAddress=f"same{n}@example.com", code="77"
            ).status_code
        finally:
            connection.close()

    with ThreadPoolExecutor(max_workers=6) as pool:
        statuses = sorted(pool.map(create, range(6)))

    assert statuses == [201] + [422] * 5


# --- authentication and rate limits -----------------------------------------------------------


@pytest.mark.parametrize(
    "headers",
    [
        {},
        {"HTTP_APIUSER": "nobody"},
        {"HTTP_APIKEY": "lc_abcdefgh_0123"},
        {"HTTP_APIUSER": "nobody", "HTTP_APIKEY": "lc_abcdefgh_0123"},
        {"HTTP_APIUSER": "nobody", "HTTP_APIKEY": "garbage"},
    ],
)
def test_missing_or_invalid_credentials_are_refused(api_client, tenant, headers):
    response = api_client.get(
        f"/api/users/find/available-user-code?organizationId={tenant.organization.pk}",
        **headers,
    )

    assert response.status_code == 401
    assert response.json() == {"success": False, "message": "Invalid API key"}


def test_a_key_with_another_credentials_apiuser_is_refused(
    api_client, tenant, other_tenant
):
    response = api_client.get(
        f"/api/users/find/available-user-code?organizationId={tenant.organization.pk}",
        HTTP_APIUSER=other_tenant.credential.api_user,
        HTTP_APIKEY=tenant.key,
    )

    assert response.status_code == 401


def test_a_rotated_key_works_until_its_grace_ends_and_a_revoked_one_stops_at_once(
    api_client, tenant
):
    url = f"/api/users/find/available-user-code?organizationId={tenant.organization.pk}"
    new_key = api_key_rotate(credential=tenant.credential)

    assert tenant.client().get(url).status_code == 200
    assert (
        api_client.get(
            url, HTTP_APIUSER=tenant.credential.api_user, HTTP_APIKEY=new_key
        ).status_code
        == 200
    )

    api_key_rotate(
        credential=tenant.credential, grace=__import__("datetime").timedelta(0)
    )
    assert tenant.client().get(url).status_code == 401

    api_credential_revoke(credential=tenant.credential)
    assert (
        api_client.get(
            url, HTTP_APIUSER=tenant.credential.api_user, HTTP_APIKEY=new_key
        ).status_code
        == 401
    )


def test_rate_limit_answers_429_with_retry_after(tenant, settings, one_window):
    settings.API_RATE_LIMITS = {**settings.API_RATE_LIMITS, "users": "3/min"}
    url = f"/api/users/find/available-user-code?organizationId={tenant.organization.pk}"
    client = tenant.client()

    statuses = [client.get(url).status_code for _ in range(4)]
    limited = client.get(url)

    assert statuses == [200, 200, 200, 429]
    assert limited.status_code == 429
    assert limited.json() == {
        "success": False,
        "message": "Too many requests. Please slow down.",
    }
    assert 1 <= int(limited["Retry-After"]) <= 60


def test_rate_limit_counts_each_credential_separately(
    tenant, other_tenant, settings, one_window
):
    settings.API_RATE_LIMITS = {**settings.API_RATE_LIMITS, "users": "1/min"}
    url = "/api/users/find/available-user-code?organizationId={}"

    assert tenant.client().get(url.format(tenant.organization.pk)).status_code == 200
    assert tenant.client().get(url.format(tenant.organization.pk)).status_code == 429
    assert (
        other_tenant.client().get(url.format(other_tenant.organization.pk)).status_code
        == 200
    )


# --- retrieve, update, delete ------------------------------------------------------------------


def created(tenant, **overrides):
    response = post_user(tenant, **overrides)
    assert response.status_code == 201, response.json()
    return response.json()["user"]


def test_get_returns_the_user_as_created(tenant):
    user = created(tenant, phoneNumber="+13035550123")

    response = tenant.client().get(f"/api/users/{user['id']}")

    assert response.status_code == 200
    assert response.json() == {
        "success": True,
        "action": "get_user",
        "message": "User retrieved successfully",
        "user": user,
    }


def test_get_pins_its_query_count(tenant, django_assert_max_num_queries):
    user = created(tenant)

    with django_assert_max_num_queries(6):
        assert tenant.client().get(f"/api/users/{user['id']}").status_code == 200


@pytest.mark.parametrize("method", ["get", "put", "delete"])
def test_a_user_of_another_organization_is_not_found(tenant, other_tenant, method):
    foreign = created(other_tenant)

    response = getattr(tenant.client(), method)(
        f"/api/users/{foreign['id']}", {"firstName": "X"}, format="json"
    )

    assert response.status_code == 404
    assert response.json() == {"success": False, "message": "User not found"}
    assert User.objects.get(pk=foreign["id"]).first_name == "Jane"


@pytest.mark.parametrize("method", ["get", "put", "delete"])
def test_an_unknown_user_is_not_found(tenant, method):
    response = getattr(tenant.client(), method)("/api/users/987654", {}, format="json")

    assert response.status_code == 404
    assert response.json() == {"success": False, "message": "User not found"}


def test_update_changes_only_the_supplied_members(tenant):
    user = created(tenant, bio="Old bio", phoneNumber="+13035550123")

    response = tenant.client().put(
        f"/api/users/{user['id']}", {"firstName": "Janet", "bio": None}, format="json"
    )

    assert response.status_code == 200
    assert response.json() == {
        "success": True,
        "action": "update_user",
        "message": "User updated successfully",
        "user": {**user, "firstName": "Janet", "fullName": "Janet Doe", "bio": None},
    }


def test_update_replaces_accounts_teams_and_schedule(tenant):
    user = created(tenant)

    response = tenant.client().put(
        f"/api/users/{user['id']}",
        {
            "accountIds": [tenant.other_account.pk],
            "teams": [tenant.other_teams[0].pk],
            "schedule": week("07:00", "15:30"),
        },
        format="json",
    )

    body = response.json()["user"]
    assert response.status_code == 200
    assert body["accountIds"] == [tenant.other_account.pk]
    assert body["teams"] == [team_out(tenant.other_teams[0])]
    assert body["schedule"] == week("07:00", "15:30")
    assert UserScheduleDay.objects.filter(user_id=user["id"]).count() == 7


def test_update_with_empty_teams_removes_every_team(tenant):
    user = created(tenant)

    response = tenant.client().put(
        f"/api/users/{user['id']}", {"teams": []}, format="json"
    )

    assert response.json()["user"]["teams"] == []


def test_update_of_accounts_drops_teams_of_removed_accounts(tenant):
    user = created(tenant, accountIds=[tenant.account.pk, tenant.other_account.pk])

    response = tenant.client().put(
        f"/api/users/{user['id']}",
        {"accountIds": [tenant.other_account.pk]},
        format="json",
    )

    assert response.json()["user"]["teams"] == [team_out(tenant.other_teams[0])]


def test_update_with_null_schedule_removes_it(tenant):
    user = created(tenant)

    response = tenant.client().put(
        f"/api/users/{user['id']}", {"schedule": None}, format="json"
    )

    assert response.json()["user"]["schedule"] is None
    assert not UserScheduleDay.objects.filter(user_id=user["id"]).exists()


def test_update_of_password_code_username_and_template(tenant):
    user = created(tenant)

    response = tenant.client().put(
        f"/api/users/{user['id']}",
        {
            "password": "N3w!passw",
            "code": "9",
            "username": "janet",
            "permissionTemplate": "Global Manager",
        },
        format="json",
    )

    assert response.status_code == 200
    assert response.json()["user"]["code"] == "0009"
    assert response.json()["user"]["username"] == "janet"
    stored = User.objects.get(pk=user["id"])
    assert stored.check_password("N3w!passw")
    assert list(stored.groups.values_list("name", flat=True)) == ["Global Manager"]


def test_update_keeping_its_own_code_and_username_is_allowed(tenant):
    user = created(tenant)

    response = tenant.client().put(
        f"/api/users/{user['id']}",
        {"code": user["code"], "username": user["username"]},
        format="json",
    )

    assert response.status_code == 200


def test_update_validates_like_create_and_changes_nothing(tenant):
    user = created(tenant)
    other = created(tenant, emailAddress="other@example.com", code="0050")

    response = tenant.client().put(
        f"/api/users/{user['id']}",
        {
            "firstName": "z" * 46,
            "username": other["username"],
            "code": "50",
            "timezone": "Nowhere/City",
            "accountIds": [],
        },
        format="json",
    )

    assert response.status_code == 422
    assert response.json() == {
        "message": INVALID,
        "errors": {
            "firstName": ["The first name may not be greater than 45 characters."],
            "timezone": ["The timezone must be a valid timezone, e.g. America/Denver."],
            "accountIds": ["The account ids field is required."],
        },
    }
    assert tenant.client().get(f"/api/users/{user['id']}").json()["user"] == user


@pytest.mark.parametrize(
    ("body", "errors"),
    [
        (
            {"emailAddress": True},
            {"emailAddress": ["The email address must be a string."]},
        ),
        (
            {"emailAddress": [1]},
            {"emailAddress": ["The email address must be a string."]},
        ),
        (
            {"schedule": {}},
            {
                "schedule.active": ["The schedule.active field is required."],
                **{
                    f"schedule.{day}": [f"The schedule.{day} field is required."]
                    for day in WEEK
                },
            },
        ),
        (
            {"schedule": {**week(), "friday": {}}},
            {
                "schedule.friday.active": [
                    "The schedule.friday.active field is required."
                ],
                "schedule.friday.startTime": [
                    "The schedule.friday.start time field is required."
                ],
                "schedule.friday.endTime": [
                    "The schedule.friday.end time field is required."
                ],
            },
        ),
        (
            {"schedule": {**week(), "friday": {"active": True, "startTime": "09:00"}}},
            {
                "schedule.friday.endTime": [
                    "The schedule.friday.end time field is required."
                ]
            },
        ),
        (
            {"organizationId": 1e999},
            {"organizationId": ["The organization id must be an integer."]},
        ),
        (
            {"accountIds": [1e999]},
            {"accountIds.0": ["The account ids.0 must be an integer."]},
        ),
        (
            {"twelveHourTimeFormat": {}},
            {
                "twelveHourTimeFormat": [
                    "The twelve hour time format field must be true or false."
                ]
            },
        ),
    ],
)
def test_update_answers_wrong_types_and_partial_schedules_with_the_validation_shape(
    tenant, body, errors
):
    user = created(tenant)

    response = send_json(tenant.client(), "PUT", f"/api/users/{user['id']}", body)

    assert response.status_code == 422
    assert response.json() == {"message": INVALID, "errors": errors}
    assert tenant.client().get(f"/api/users/{user['id']}").json()["user"] == user


def test_update_refuses_a_deeply_nested_body(tenant):
    user = created(tenant)

    response = tenant.client().generic(
        "PUT",
        f"/api/users/{user['id']}",
        b'{"schedule":' * 3000 + b"{}" + b"}" * 3000,
        content_type="application/json",
    )

    assert response.status_code == 422
    assert list(response.json()["errors"]) == ["body"]
    assert tenant.client().get(f"/api/users/{user['id']}").json()["user"] == user


def test_an_id_beyond_any_stored_one_is_not_found(tenant):
    response = tenant.client().get(f"/api/users/{10**30}")

    assert response.status_code == 404
    assert response.json() == {"success": False, "message": "User not found"}


@pytest.mark.parametrize(
    ("query", "errors"),
    [
        (
            {"organizationId": "1e999", "emailAddress": "a@example.com"},
            {"organizationId": ["The organization id must be an integer."]},
        ),
        (
            {"organizationId": "inf", "emailAddress": "a@example.com"},
            {"organizationId": ["The organization id must be an integer."]},
        ),
        (
            {"organizationId": "nan", "emailAddress": "a@example.com"},
            {"organizationId": ["The organization id must be an integer."]},
        ),
    ],
)
def test_find_answers_malformed_queries_with_the_validation_shape(
    tenant, query, errors
):
    response = tenant.client().get("/api/users/find/email", query)

    assert response.status_code == 422
    assert response.json() == {"message": INVALID, "errors": errors}


def test_update_reports_taken_username_and_code(tenant):
    user = created(tenant)
    other = created(tenant, emailAddress="other@example.com", code="0050")

    username = tenant.client().put(
        f"/api/users/{user['id']}", {"username": other["username"]}, format="json"
    )
    code = tenant.client().put(
        f"/api/users/{user['id']}", {"code": "50"}, format="json"
    )

    assert username.json()["errors"] == {
        "username": ["The username has already been taken."]
    }
    assert code.json()["errors"] == {"code": ["The code has already been taken."]}


def test_update_naming_another_organization_is_unauthorized(tenant, other_tenant):
    user = created(tenant)

    response = tenant.client().put(
        f"/api/users/{user['id']}",
        {"organizationId": other_tenant.organization.pk, "firstName": "X"},
        format="json",
    )

    assert response.status_code == 403
    assert response.json() == {
        "success": False,
        "message": "Unauthorized for this organization",
    }
    assert User.objects.get(pk=user["id"]).first_name == "Jane"


def test_delete_removes_the_user_and_schedule(tenant):
    user = created(tenant)

    response = tenant.client().delete(f"/api/users/{user['id']}")

    assert response.status_code == 200
    assert response.json() == {
        "success": True,
        "action": "delete_user",
        "message": "User deleted successfully",
    }
    assert not User.objects.filter(pk=user["id"]).exists()
    assert not UserScheduleDay.objects.exists()
    assert tenant.client().get(f"/api/users/{user['id']}").status_code == 404


# --- find ----------------------------------------------------------------------------------------


def test_find_by_email_is_case_insensitive(tenant):
    user = created(tenant, emailAddress="Jane.Doe@Example.com")

    response = tenant.client().get(
        "/api/users/find/email",
        {
            "organizationId": tenant.organization.pk,
            "emailAddress": "jane.doe@EXAMPLE.COM",
        },
    )

    assert response.status_code == 200
    assert response.json() == {
        "success": True,
        "action": "get_user_by_email_address",
        "message": "User retrieved successfully",
        "user": user,
    }


def test_find_by_email_does_not_see_other_organizations(tenant, other_tenant):
    created(other_tenant, emailAddress="shared@example.com")

    response = tenant.client().get(
        "/api/users/find/email",
        {
            "organizationId": tenant.organization.pk,
            "emailAddress": "shared@example.com",
        },
    )

    assert response.status_code == 404
    assert response.json() == {"success": False, "message": "User not found"}


def test_find_by_email_in_another_organization_is_unauthorized(tenant, other_tenant):
    created(other_tenant, emailAddress="shared@example.com")

    response = tenant.client().get(
        "/api/users/find/email",
        {
            "organizationId": other_tenant.organization.pk,
            "emailAddress": "shared@example.com",
        },
    )

    assert response.status_code == 403
    assert response.json() == {
        "success": False,
        "message": "Unauthorized for this organization",
    }


def test_find_by_email_requires_its_parameters(tenant):
    response = tenant.client().get("/api/users/find/email")

    assert response.status_code == 422
    assert response.json() == {
        "message": INVALID,
        "errors": {
            "organizationId": ["The organization id field is required."],
            "emailAddress": ["The email address field is required."],
        },
    }


@pytest.mark.parametrize(
    "raw", ["%2B13035550123", "+13035550123", "%2B1%20303%20555%200123"]
)
def test_find_by_phone_accepts_encoded_and_unencoded_plus(tenant, raw):
    user = created(tenant, phoneNumber="+13035550123")

    response = tenant.client().get(
        f"/api/users/find/phone?organizationId={tenant.organization.pk}&phoneNumber={raw}"
    )

    assert response.status_code == 200
    assert response.json() == {
        "success": True,
        "action": "get_user_by_phone_number",
        "message": "User retrieved successfully",
        "user": user,
    }


def test_find_by_phone_not_found_and_invalid(tenant, other_tenant):
    created(other_tenant, phoneNumber="+13035550123")
    url = f"/api/users/find/phone?organizationId={tenant.organization.pk}&phoneNumber="

    missing = tenant.client().get(url + "%2B13035550123")
    invalid = tenant.client().get(url + "12")

    assert missing.status_code == 404
    assert missing.json() == {"success": False, "message": "User not found"}
    assert invalid.status_code == 422
    assert invalid.json()["errors"] == {
        "phoneNumber": [
            "The phone number must be a valid phone number in E.164 format, e.g. +13035550100."
        ]
    }


def test_find_by_phone_in_another_organization_is_unauthorized(tenant, other_tenant):
    response = tenant.client().get(
        f"/api/users/find/phone?organizationId={other_tenant.organization.pk}&phoneNumber=%2B13035550123"
    )

    assert response.status_code == 403


def test_find_pins_its_query_count(tenant, django_assert_max_num_queries):
    created(tenant, phoneNumber="+13035550123")

    with django_assert_max_num_queries(6):
        response = tenant.client().get(
            f"/api/users/find/phone?organizationId={tenant.organization.pk}&phoneNumber=%2B13035550123"
        )
    assert response.status_code == 200


def test_available_code_is_one_more_than_the_highest(tenant, other_tenant):
    url = "/api/users/find/available-user-code?organizationId={}"
    first = tenant.client().get(url.format(tenant.organization.pk))
    UserFactory(account=tenant.account, account__code="0099")
    UserFactory(account=other_tenant.account, account__code="0500")

    second = tenant.client().get(url.format(tenant.organization.pk))

    assert first.json() == {
        "success": True,
        "action": "get_available_user_code",
        "message": "Next available user code retrieved successfully",
        "code": "0001",
    }
    assert second.json()["code"] == "0100"


def test_available_code_checks_the_organization(tenant, other_tenant):
    url = "/api/users/find/available-user-code?organizationId={}"

    assert (
        tenant.client().get(url.format(other_tenant.organization.pk)).status_code == 403
    )
    assert tenant.client().get(url.format("x")).json() == {
        "message": INVALID,
        "errors": {"organizationId": ["The organization id must be an integer."]},
    }


def test_permission_templates_exist():
    assert set(Group.objects.values_list("name", flat=True)) >= {
        "Agent",
        "Manager",
        "Global Manager",
    }
