"""Failed keys are throttled per client address on every API; admin sign-ins per address and
per username. Valid keys are never counted or refused."""

import pytest
from django.urls import reverse
from rest_framework.test import APIClient

from calls.models import Call
from leads.models import Lead
from tests.accounts.factories import issue_scored_data_key
from tests.leads.factories import VendorRegistrationFactory, adf, catch_all_rule

pytestmark = pytest.mark.django_db

TOO_MANY = "Too many failed authentication attempts. Please try again later."
INVALID = {"success": False, "message": "Invalid API key"}
NO_ACCOUNT = "No account found with the given API username/password. Please check your credentials and try again."
CODE_URL = "/api/users/find/available-user-code?organizationId={}"
ATTACKER = "198.51.100.7"
BYSTANDER = "198.51.100.8"


@pytest.fixture
def limit(settings, one_window):
    """Three failures a minute; every request of the test in one window, 20 s before its end."""
    settings.AUTH_FAILURE_LIMIT = "3/min"
    settings.ADMIN_LOGIN_FAILURE_LIMIT = "3/min"
    return 3


def user_api(tenant, *, key=None, address=ATTACKER, **extra):
    client = APIClient()
    client.credentials(
        HTTP_APIUSER=tenant.credential.api_user, HTTP_APIKEY=key or tenant.key
    )
    return client.get(
        CODE_URL.format(tenant.organization.pk), REMOTE_ADDR=address, **extra
    )


def wrong_key(tenant) -> str:
    return tenant.key[:-4] + "0000"


def intake(fields, address=ATTACKER):
    return APIClient().post("/api/nl", fields, REMOTE_ADDR=address)


def click_to_call(key, address=ATTACKER):
    return APIClient().post(
        "/api/clicktocallv2",
        {"account_id": "x"},
        format="json",
        HTTP_API_KEY=key,
        REMOTE_ADDR=address,
    )


def assert_throttled(response, body):
    assert response.status_code == 429
    assert response.json() == body
    assert response["Retry-After"] == "20"


# --- the User API ------------------------------------------------------------------------------


def test_user_api_answers_429_after_the_limit_of_invalid_keys(tenant, limit):
    statuses = [user_api(tenant, key=wrong_key(tenant)) for _ in range(limit)]

    assert [r.status_code for r in statuses] == [401] * limit
    assert all(r.json() == INVALID for r in statuses)
    assert_throttled(
        user_api(tenant, key=wrong_key(tenant)),
        {"success": False, "message": TOO_MANY},
    )
    # Missing headers are failures too.
    assert APIClient().get(CODE_URL, REMOTE_ADDR=ATTACKER).status_code == 429


def test_a_valid_key_is_never_refused_by_the_failure_limit(tenant, limit):
    for _ in range(limit + 2):
        user_api(tenant, key=wrong_key(tenant))

    response = user_api(tenant)

    assert response.status_code == 200
    assert response.json()["code"] == "0001"


def test_valid_keys_are_not_counted_as_failures(tenant, limit):
    for _ in range(limit * 3):
        assert user_api(tenant).status_code == 200

    assert [
        user_api(tenant, key=wrong_key(tenant)).status_code for _ in range(limit + 1)
    ] == [401] * limit + [429]


def test_failures_are_counted_per_client_address(tenant, limit):
    for _ in range(limit + 1):
        user_api(tenant, key=wrong_key(tenant), address=ATTACKER)

    assert user_api(tenant, key=wrong_key(tenant), address=BYSTANDER).status_code == 401
    assert user_api(tenant, key=wrong_key(tenant), address=ATTACKER).status_code == 429


def test_failures_on_every_api_add_up_for_one_address(tenant, limit):
    assert user_api(tenant, key=wrong_key(tenant)).status_code == 401
    assert click_to_call(wrong_key(tenant)).status_code == 401
    assert intake({"xml": "<adf/>", **tenant.headers, "apikey": "x"}).status_code == 403

    assert_throttled(
        click_to_call(wrong_key(tenant)), {"success": False, "message": TOO_MANY}
    )


# --- lead intake and click-to-call -------------------------------------------------------------


def test_intake_answers_429_in_its_reason_shape_and_stores_nothing(tenant, limit):
    VendorRegistrationFactory(account=tenant.account, vendor_id="V-1", vendor_name="D")
    catch_all_rule(tenant.account)
    xml = adf(vendor_id="V-1", vendor_name="D")
    attempts = [
        {"xml": xml, "apiuser": "", "apikey": tenant.key},  # blank apiuser
        {"xml": xml, "apiuser": tenant.credential.api_user, "apikey": ""},  # blank key
        {
            "xml": xml,
            "apiuser": tenant.credential.api_user,
            "apikey": wrong_key(tenant),
        },
    ]

    answers = [intake(fields) for fields in attempts]

    assert [r.status_code for r in answers] == [403, 403, 403]
    assert answers[2].json() == {"reason": NO_ACCOUNT}
    assert_throttled(intake(attempts[2]), {"reason": TOO_MANY})
    assert Lead.objects.count() == 0
    # The integrator's own key still goes through from that address.
    accepted = intake({"xml": xml, **tenant.headers})
    assert accepted.status_code == 200
    assert accepted.json()["result"] == "Success"


def test_click_to_call_answers_429_after_the_limit(tenant, limit):
    for _ in range(limit):
        assert click_to_call(wrong_key(tenant)).status_code == 401
    assert click_to_call("").status_code == 429  # a missing key counts too

    assert_throttled(
        click_to_call(wrong_key(tenant)), {"success": False, "message": TOO_MANY}
    )
    assert Call.objects.count() == 0
    # A valid key is answered on its merits: here, invalid input.
    assert click_to_call(tenant.key).status_code == 422


def scored_data(key, address=ATTACKER, **params):
    return APIClient().get(
        "/api/scoreddata",
        {"apikey": key, "fromDate": "2026-01-01", "toDate": "2026-01-02", **params},
        REMOTE_ADDR=address,
    )


def test_scored_data_answers_429_after_the_limit_in_json_and_xml(tenant, limit):
    good = issue_scored_data_key(tenant.account)

    refused = [scored_data("sd_nothing_0000") for _ in range(limit - 1)]
    refused.append(scored_data(""))  # a missing key counts too
    json_429 = scored_data("sd_nothing_0000")
    xml_429 = scored_data("sd_nothing_0000", returnType="xml")

    assert [r.status_code for r in refused] == [401] * limit
    assert refused[0].json() == INVALID
    assert_throttled(json_429, {"success": False, "message": TOO_MANY})
    assert xml_429.status_code == 429
    assert xml_429["Retry-After"] == "20"
    assert xml_429.content.decode().endswith(
        f"<error><success>false</success><message>{TOO_MANY}</message></error>"
    )
    # The account's own key is answered as usual from that address.
    assert scored_data(good).status_code == 200


# --- client address behind proxies -------------------------------------------------------------


def test_behind_a_trusted_proxy_the_forwarded_address_is_counted(
    tenant, limit, settings
):
    settings.TRUSTED_PROXY_COUNT = 1
    for n in range(limit):
        # The proxy (REMOTE_ADDR) appends the address it saw; what the client put before is ignored.
        forwarded = f"10.0.0.{n}, {ATTACKER}"
        user_api(
            tenant,
            key=wrong_key(tenant),
            address="127.0.0.1",
            HTTP_X_FORWARDED_FOR=forwarded,
        )

    over = user_api(
        tenant,
        key=wrong_key(tenant),
        address="127.0.0.1",
        HTTP_X_FORWARDED_FOR=f"spoofed, {ATTACKER}",
    )
    other = user_api(
        tenant,
        key=wrong_key(tenant),
        address="127.0.0.1",
        HTTP_X_FORWARDED_FOR=BYSTANDER,
    )

    assert over.status_code == 429
    assert other.status_code == 401


def test_without_trusted_proxies_x_forwarded_for_is_ignored(tenant, limit):
    for n in range(limit):
        user_api(
            tenant,
            key=wrong_key(tenant),
            address=ATTACKER,
            HTTP_X_FORWARDED_FOR=f"203.0.113.{n}",
        )

    assert (
        user_api(
            tenant,
            key=wrong_key(tenant),
            address=ATTACKER,
            HTTP_X_FORWARDED_FOR="203.0.113.99",
        ).status_code
        == 429
    )


# --- admin sign-in -----------------------------------------------------------------------------

THROTTLED_LOGIN = (
    "Too many failed sign-in attempts. Please wait 20 seconds and try again."
)
LOGIN_URL = "/admin/login/?next=/admin/"


def sign_in(client, username, password, address):
    return client.post(
        LOGIN_URL,
        {"username": username, "password": password, "next": "/admin/"},
        REMOTE_ADDR=address,
    )


def errors(response) -> list[str]:
    return list(response.context["form"].non_field_errors())


def test_admin_sign_in_is_refused_after_failures_from_one_address(
    client, admin_user, limit
):
    for _ in range(limit):
        response = sign_in(client, "admin", "wrong", ATTACKER)
        assert response.status_code == 200
        assert "Please enter the correct username and password" in errors(response)[0]

    refused = sign_in(client, "admin", "password", ATTACKER)  # even the right password

    assert refused.status_code == 200
    assert errors(refused) == [THROTTLED_LOGIN]
    assert THROTTLED_LOGIN in refused.content.decode()
    assert "_auth_user_id" not in client.session
    # The owner, from another address, signs in.
    owner = sign_in(client.__class__(), "admin", "password", BYSTANDER)
    assert owner.status_code == 302
    assert owner["Location"] == "/admin/"


def test_admin_sign_in_is_refused_after_failures_against_one_username(
    client, admin_user, limit
):
    addresses = [f"203.0.113.{n}" for n in range(limit)]
    for address in addresses:  # one guess from each of many addresses
        sign_in(client, "ADMIN", "wrong", address)

    again = sign_in(client, "admin", "guess", addresses[0])
    fresh_wrong = sign_in(client, "admin", "guess", "203.0.113.200")
    after_that = sign_in(client, "admin", "password", "203.0.113.200")
    owner = sign_in(client.__class__(), "admin", "password", BYSTANDER)

    assert errors(again) == [THROTTLED_LOGIN]
    # An address with no failure yet gets its one try; once it fails, it is refused too.
    assert "Please enter the correct username" in errors(fresh_wrong)[0]
    assert errors(after_that) == [THROTTLED_LOGIN]
    assert owner.status_code == 302


def test_admin_sign_in_within_the_limit_works(client, admin_user, limit):
    for _ in range(limit - 1):
        sign_in(client, "admin", "wrong", ATTACKER)

    response = sign_in(client, "admin", "password", ATTACKER)

    assert response.status_code == 302
    assert client.get(reverse("admin:index")).status_code == 200


def test_successful_admin_sign_ins_are_not_counted(client, admin_user, limit):
    for _ in range(limit + 2):
        assert (
            sign_in(client.__class__(), "admin", "password", ATTACKER).status_code
            == 302
        )

    wrong = [sign_in(client, "admin", "wrong", ATTACKER) for _ in range(limit + 1)]

    assert ["Please enter the correct username" in errors(r)[0] for r in wrong] == [
        True
    ] * limit + [False]
    assert errors(wrong[-1]) == [THROTTLED_LOGIN]


def test_sign_ins_refused_untried_do_not_count_against_the_username(
    client, admin_user, limit
):
    for _ in range(limit):
        sign_in(client, "someone", "wrong", ATTACKER)
    refused = [sign_in(client, "admin", "guess", ATTACKER) for _ in range(limit + 2)]
    sign_in(client, "admin", "typo", BYSTANDER)  # the owner's one failure

    owner = sign_in(client.__class__(), "admin", "password", BYSTANDER)

    assert all(errors(r) == [THROTTLED_LOGIN] for r in refused)
    assert owner.status_code == 302
