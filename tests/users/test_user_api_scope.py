"""A credential's reach through the User API: two tenants, and a credential of the first
narrowed to one of its two accounts. The narrowed credential reaches only users assigned
to its account and assigns only its account (and that account's teams); the
organization-wide credential keeps reaching everything of its organization."""

import pytest
from rest_framework.test import APIClient

from tests.accounts.factories import issue_credential
from tests.users.factories import UserFactory
from users.models import User

pytestmark = pytest.mark.django_db

INVALID = "The given data was invalid."
NOT_FOUND = {"success": False, "message": "User not found"}


class World:
    """``tenant`` with a credential narrowed to ``tenant.account``, users inside and outside
    that reach, and a user of ``other_tenant``."""

    def __init__(self, tenant, other_tenant) -> None:
        self.tenant = tenant
        self.other_tenant = other_tenant
        credential, key = issue_credential(
            tenant.organization, accounts=[tenant.account]
        )
        self.narrowed = APIClient()
        self.narrowed.credentials(HTTP_APIUSER=credential.api_user, HTTP_APIKEY=key)
        self.wide = tenant.client()
        self.inside = self.create(
            emailAddress="inside@example.com",
            phoneNumber="+13035550101",
            code="0001",
        )
        self.outside = self.create(
            emailAddress="outside@example.com",
            phoneNumber="+13035550102",
            accountIds=[tenant.other_account.pk],
            code="0050",
        )
        self.both = self.create(
            emailAddress="both@example.com",
            code="0002",
            accountIds=[tenant.account.pk, tenant.other_account.pk],
        )
        self.foreign = UserFactory(
            account=other_tenant.account,
            email="foreign@example.com",
            phone_number="+13035550103",
        )

    def create(self, **members):
        body = {
            "organizationId": self.tenant.organization.pk,
            "firstName": "Pat",
            "lastName": "Lee",
            "accountIds": [self.tenant.account.pk],
            **members,
        }
        response = self.wide.post("/api/users", body, format="json")
        assert response.status_code == 201, response.json()
        return response.json()["user"]

    def find(self, client, kind, **query):
        return client.get(
            f"/api/users/find/{kind}",
            {"organizationId": self.tenant.organization.pk, **query},
        )


@pytest.fixture
def world(tenant, other_tenant) -> World:
    return World(tenant, other_tenant)


def team_out(team):
    return {"id": team.pk, "name": team.name, "accountId": team.account_id}


def assert_not_found(response):
    assert (response.status_code, response.json()) == (404, NOT_FOUND)


# --- get ---------------------------------------------------------------------------------------


def test_get_reaches_only_users_of_the_narrowed_accounts(world):
    inside = world.narrowed.get(f"/api/users/{world.inside['id']}")

    assert inside.status_code == 200
    assert inside.json()["user"] == world.inside
    assert_not_found(world.narrowed.get(f"/api/users/{world.outside['id']}"))
    assert_not_found(world.narrowed.get(f"/api/users/{world.foreign.pk}"))


def test_get_by_the_organization_wide_credential_is_unchanged(world):
    assert world.wide.get(f"/api/users/{world.outside['id']}").json()["user"] == (
        world.outside
    )
    assert_not_found(world.wide.get(f"/api/users/{world.foreign.pk}"))


def test_a_user_of_several_accounts_is_seen_through_the_narrowed_accounts_only(
    world,
):
    tenant = world.tenant

    seen = world.narrowed.get(f"/api/users/{world.both['id']}").json()["user"]

    assert world.both["accountIds"] == sorted(
        [tenant.account.pk, tenant.other_account.pk]
    )
    assert seen == {
        **world.both,
        "accountIds": [tenant.account.pk],
        "teams": [team_out(t) for t in tenant.teams],
    }


def test_get_by_a_narrowed_credential_pins_its_query_count(
    world, django_assert_max_num_queries
):
    world.narrowed.get(
        f"/api/users/{world.inside['id']}"
    )  # a key's first use records it
    with django_assert_max_num_queries(6):
        response = world.narrowed.get(f"/api/users/{world.both['id']}")
    assert response.status_code == 200


# --- update ------------------------------------------------------------------------------------


def test_update_of_a_user_outside_the_reach_is_not_found_and_changes_nothing(world):
    for user_id in (world.outside["id"], world.foreign.pk):
        response = world.narrowed.put(
            f"/api/users/{user_id}", {"firstName": "Mallory"}, format="json"
        )
        assert_not_found(response)
    assert world.wide.get(f"/api/users/{world.outside['id']}").json()["user"] == (
        world.outside
    )
    world.foreign.refresh_from_db()
    assert world.foreign.first_name != "Mallory"


def test_update_of_a_user_inside_the_reach_works(world):
    response = world.narrowed.put(
        f"/api/users/{world.inside['id']}",
        {"firstName": "Robin", "teams": [world.tenant.teams[1].pk]},
        format="json",
    )

    assert response.status_code == 200
    assert response.json()["user"] == {
        **world.inside,
        "firstName": "Robin",
        "fullName": "Robin Lee",
        "teams": [team_out(world.tenant.teams[1])],
    }


def test_update_may_assign_only_the_narrowed_accounts_and_their_teams(world):
    tenant = world.tenant

    response = world.narrowed.put(
        f"/api/users/{world.inside['id']}",
        {
            "accountIds": [tenant.account.pk, tenant.other_account.pk],
            "teams": [tenant.teams[0].pk, tenant.other_teams[0].pk],
        },
        format="json",
    )
    only_outside = world.narrowed.put(
        f"/api/users/{world.inside['id']}",
        {"accountIds": [tenant.other_account.pk]},
        format="json",
    )
    foreign = world.narrowed.put(
        f"/api/users/{world.inside['id']}",
        {
            "accountIds": [world.other_tenant.account.pk],
            "teams": [world.other_tenant.teams[0].pk],
        },
        format="json",
    )

    assert response.status_code == 422
    assert response.json() == {
        "message": INVALID,
        "errors": {
            "accountIds.1": ["The selected account ids.1 is invalid."],
            "teams.1": ["The selected teams.1 is invalid."],
        },
    }
    assert only_outside.status_code == 422
    assert only_outside.json()["errors"] == {
        "accountIds.0": ["The selected account ids.0 is invalid."]
    }
    assert foreign.status_code == 422
    assert foreign.json()["errors"] == {
        "accountIds.0": ["The selected account ids.0 is invalid."],
        "teams.0": ["The selected teams.0 is invalid."],
    }
    assert world.wide.get(f"/api/users/{world.inside['id']}").json()["user"] == (
        world.inside
    )


def test_update_by_a_narrowed_credential_keeps_the_accounts_and_teams_it_cannot_see(
    world,
):
    tenant = world.tenant

    response = world.narrowed.put(
        f"/api/users/{world.both['id']}",
        {"accountIds": [tenant.account.pk], "teams": [tenant.teams[0].pk]},
        format="json",
    )
    emptied = world.narrowed.put(
        f"/api/users/{world.both['id']}", {"teams": []}, format="json"
    )

    assert response.status_code == 200
    assert response.json()["user"]["accountIds"] == [tenant.account.pk]
    assert response.json()["user"]["teams"] == [team_out(tenant.teams[0])]
    assert emptied.json()["user"]["teams"] == []
    # The organization-wide view still has the other account and its team.
    seen_wide = world.wide.get(f"/api/users/{world.both['id']}").json()["user"]
    assert seen_wide["accountIds"] == sorted(
        [tenant.account.pk, tenant.other_account.pk]
    )
    assert seen_wide["teams"] == [team_out(tenant.other_teams[0])]


def test_update_by_the_organization_wide_credential_still_assigns_every_account(
    world,
):
    tenant = world.tenant

    response = world.wide.put(
        f"/api/users/{world.inside['id']}",
        {"accountIds": [tenant.other_account.pk]},
        format="json",
    )

    assert response.status_code == 200
    assert response.json()["user"]["accountIds"] == [tenant.other_account.pk]
    assert_not_found(world.narrowed.get(f"/api/users/{world.inside['id']}"))


# --- delete ------------------------------------------------------------------------------------


def test_delete_of_a_user_outside_the_reach_is_not_found_and_deletes_nothing(world):
    assert_not_found(world.narrowed.delete(f"/api/users/{world.outside['id']}"))
    assert_not_found(world.narrowed.delete(f"/api/users/{world.foreign.pk}"))

    assert User.objects.filter(pk=world.outside["id"]).exists()
    assert User.objects.filter(pk=world.foreign.pk).exists()


def test_delete_of_a_user_inside_the_reach_works(world):
    response = world.narrowed.delete(f"/api/users/{world.inside['id']}")

    assert response.status_code == 200
    assert not User.objects.filter(pk=world.inside["id"]).exists()


# --- create ------------------------------------------------------------------------------------


def test_create_may_assign_only_the_narrowed_accounts_and_their_teams(world):
    tenant = world.tenant
    body = {
        "organizationId": tenant.organization.pk,
        "firstName": "Sam",
        "lastName": "Ray",
        "emailAddress": "sam@example.com",
    }

    refused = world.narrowed.post(
        "/api/users",
        {
            **body,
            "accountIds": [tenant.account.pk, tenant.other_account.pk],
            "teams": [tenant.other_teams[0].pk],
        },
        format="json",
    )
    foreign = world.narrowed.post(
        "/api/users",
        {**body, "accountIds": [world.other_tenant.account.pk]},
        format="json",
    )
    before = User.objects.count()
    allowed = world.narrowed.post(
        "/api/users", {**body, "accountIds": [tenant.account.pk]}, format="json"
    )

    assert refused.status_code == 422
    assert refused.json() == {
        "message": INVALID,
        "errors": {
            "accountIds.1": ["The selected account ids.1 is invalid."],
            "teams.0": ["The selected teams.0 is invalid."],
        },
    }
    assert foreign.json()["errors"] == {
        "accountIds.0": ["The selected account ids.0 is invalid."]
    }
    assert allowed.status_code == 201
    assert User.objects.count() == before + 1
    assert allowed.json()["user"]["accountIds"] == [tenant.account.pk]
    assert allowed.json()["user"]["teams"] == [team_out(t) for t in tenant.teams]


def test_create_in_the_other_tenants_organization_is_unauthorized(world):
    response = world.narrowed.post(
        "/api/users",
        {
            "organizationId": world.other_tenant.organization.pk,
            "firstName": "Sam",
            "lastName": "Ray",
            "emailAddress": "sam@example.com",
            "accountIds": [world.other_tenant.account.pk],
        },
        format="json",
    )

    assert response.status_code == 403
    assert response.json() == {
        "success": False,
        "message": "Unauthorized for this organization",
    }


# --- find ------------------------------------------------------------------------------------


def test_find_by_email_reaches_only_users_of_the_narrowed_accounts(world):
    inside = world.find(world.narrowed, "email", emailAddress="INSIDE@example.com")

    assert inside.status_code == 200
    assert inside.json()["user"] == world.inside
    assert_not_found(
        world.find(world.narrowed, "email", emailAddress="outside@example.com")
    )
    assert_not_found(
        world.find(world.narrowed, "email", emailAddress="foreign@example.com")
    )
    wide = world.find(world.wide, "email", emailAddress="outside@example.com")
    assert wide.json()["user"] == world.outside


def test_find_by_phone_reaches_only_users_of_the_narrowed_accounts(world):
    inside = world.find(world.narrowed, "phone", phoneNumber="+13035550101")

    assert inside.status_code == 200
    assert inside.json()["user"] == world.inside
    assert_not_found(world.find(world.narrowed, "phone", phoneNumber="+13035550102"))
    assert_not_found(world.find(world.narrowed, "phone", phoneNumber="+13035550103"))
    wide = world.find(world.wide, "phone", phoneNumber="+13035550102")
    assert wide.json()["user"] == world.outside


def test_find_by_email_skips_an_older_user_outside_the_reach(world):
    """Two users share an address; the narrowed credential finds the one it reaches."""
    shared = world.create(
        emailAddress="outside@example.com",
        username="second-outside",
        accountIds=[world.tenant.account.pk],
    )

    found = world.find(world.narrowed, "email", emailAddress="outside@example.com")
    oldest = world.find(world.wide, "email", emailAddress="outside@example.com")

    assert found.json()["user"]["id"] == shared["id"]
    assert oldest.json()["user"]["id"] == world.outside["id"]


def test_available_user_code_stays_organization_wide(world):
    """Codes are unique in the organization: a code held outside the reach still counts."""
    response = world.find(world.narrowed, "available-user-code")

    assert response.json() == {
        "success": True,
        "action": "get_available_user_code",
        "message": "Next available user code retrieved successfully",
        "code": "0051",
    }
    assert (
        world.narrowed.get(
            "/api/users/find/available-user-code",
            {"organizationId": world.other_tenant.organization.pk},
        ).status_code
        == 403
    )
