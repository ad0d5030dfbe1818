"""The User API's read in one query (PostgreSQL) and its portable path (the embedded
SQLite's) give the same user; a read costs at most two queries with authentication, and
the credential cache never lets a changed key or reach work a moment longer."""

import pytest
from django.core.cache import cache

from accounts.models import ApiCredential
from accounts.selectors import api_credential_for_key, credential_narrowed
from accounts.services import api_credential_update
from tests.accounts.factories import issue_credential
from tests.users.test_user_api import week
from tests.users.test_user_api_scope import World
from users import selectors
from users.apis import user_out

pytestmark = pytest.mark.django_db


@pytest.fixture
def world(tenant, other_tenant) -> World:
    world = World(tenant, other_tenant)
    # Every relation the resource shows, on both sides of the narrowed reach.
    response = world.wide.put(
        f"/api/users/{world.both['id']}",
        {
            "teamIds": [t.pk for t in (*tenant.teams, *tenant.other_teams)],
            "schedule": week(
                "07:30",
                "19:45",
                saturday={"active": False, "startTime": "10:00", "endTime": "14:00"},
            ),
            "bio": "Trucks & <vans> \u00e9t\u00e9",
        },
        format="json",
    )
    assert response.status_code == 200, response.json()
    return world


def credentials(world):
    """The organization-wide credential, the narrowed one and the other tenant's."""
    wide = world.tenant.credential
    narrowed = ApiCredential.objects.exclude(pk=wide.pk).get(
        organization=world.tenant.organization
    )
    return wide, narrowed, world.other_tenant.credential


LOOKUPS = [
    ("pk", lambda w, user: user["id"]),
    ("email__iexact", lambda w, user: user["emailAddress"].upper()),
    ("phone_number", lambda w, user: user["phoneNumber"]),
]


@pytest.mark.parametrize(("lookup", "value_of"), LOOKUPS)
def test_the_one_query_read_and_the_portable_read_see_the_same_user(
    world, lookup, value_of
):
    users = [world.inside, world.outside, world.both]
    compared = 0
    for credential in credentials(world):
        for user in users:
            value = value_of(world, user)
            if value is None:
                continue
            fresh = ApiCredential.objects.get(pk=credential.pk)  # reach read anew
            one = selectors._first_user_in_one_query(fresh, lookup, value)
            portable = selectors._first_user_prefetched(credential, lookup, value)
            assert (one is None) == (portable is None)
            if one is not None and portable is not None:
                assert user_out(one) == user_out(portable)
                compared += 1
    # The wide credential sees all three, the narrowed one two, the foreign one none.
    assert compared >= 3


def test_a_narrowed_read_shows_only_what_the_reach_holds(world):
    _, narrowed, _ = credentials(world)
    seen = selectors._first_user_in_one_query(narrowed, "pk", world.both["id"])
    assert seen is not None
    out = user_out(seen)
    assert out["accountIds"] == [world.tenant.account.pk]
    assert [team["accountId"] for team in out["teams"]] == [world.tenant.account.pk] * 2
    assert out["schedule"]["monday"] == {
        "active": True,
        "startTime": "07:30",
        "endTime": "19:45",
    }
    assert out["schedule"]["saturday"] == {
        "active": False,
        "startTime": "10:00",
        "endTime": "14:00",
    }


@pytest.mark.parametrize("cold", [True, False])
def test_a_read_costs_at_most_two_queries_with_authentication(
    world, django_assert_max_num_queries, cold
):
    world.narrowed.get(
        f"/api/users/{world.inside['id']}"
    )  # its key's first use recorded
    world.wide.get(f"/api/users/{world.inside['id']}")
    if cold:
        cache.clear()
    for client in (world.wide, world.narrowed):
        with django_assert_max_num_queries(2):
            response = client.get(f"/api/users/{world.both['id']}")
        assert response.status_code == 200
        with django_assert_max_num_queries(2):
            response = world.find(client, "email", emailAddress="both@example.com")
        assert response.status_code == 200


def test_a_known_key_authenticates_from_the_cache(world, django_assert_num_queries):
    world.wide.get(f"/api/users/{world.inside['id']}")
    with django_assert_num_queries(1):  # the user, nothing for the key
        assert world.wide.get(f"/api/users/{world.inside['id']}").status_code == 200


def test_narrowing_a_credential_takes_effect_on_the_next_request(world):
    wide = world.tenant.credential
    url = f"/api/users/{world.outside['id']}"
    assert world.wide.get(url).status_code == 200  # cached with its reach

    api_credential_update(credential=wide, name="CRM", accounts=[world.tenant.account])
    assert world.wide.get(url).status_code == 404

    api_credential_update(credential=wide, name="CRM", accounts=[])
    assert world.wide.get(url).status_code == 200


def test_a_credential_deleted_in_the_admin_stops_at_once(world, admin_client):
    wide = world.tenant.credential
    url = f"/api/users/{world.inside['id']}"
    assert world.wide.get(url).status_code == 200
    ApiCredential.objects.filter(pk=wide.pk).delete()  # as the admin's delete does
    assert world.wide.get(url).status_code == 401


def test_a_lost_version_never_revives_a_stale_entry(world):
    """The cache may lose the version key (eviction, restart): the next one is a fresh
    token, so entries cached under any earlier one are never read again."""
    credential, key = issue_credential(world.tenant.organization)
    assert api_credential_for_key(key=key) is not None
    cache.delete("credentials:version")  # core.versioned: the name, then :version
    credential.keys.update(revoked_at=credential.created_at)  # a raw write, not told
    assert api_credential_for_key(key=key) is None


def test_the_reach_is_read_once_and_kept_on_the_credential(
    world, django_assert_num_queries
):
    _, narrowed, _ = credentials(world)
    fresh = ApiCredential.objects.get(pk=narrowed.pk)
    with django_assert_num_queries(1):
        assert credential_narrowed(fresh) == (world.tenant.account.pk,)
        assert credential_narrowed(fresh) == (world.tenant.account.pk,)
    wide = ApiCredential.objects.get(pk=world.tenant.credential.pk)
    assert credential_narrowed(wide) is None


def test_writes_to_users_leave_the_cached_keys_alone(world, django_assert_num_queries):
    """Only key and reach changes draw a new version: creating and updating users through
    the API does not, and the key is still read from the cache afterwards."""
    world.wide.get(f"/api/users/{world.inside['id']}")
    version = cache.get("credentials:version")

    created = world.create(emailAddress="new@example.com")
    response = world.wide.put(
        f"/api/users/{created['id']}", {"bio": "Vans"}, format="json"
    )
    assert response.status_code == 200

    assert cache.get("credentials:version") == version
    with django_assert_num_queries(1):  # the user, nothing for the key
        assert world.wide.get(f"/api/users/{created['id']}").status_code == 200


def test_the_read_is_prepared_once_per_connection_and_then_only_run(
    world, prepared_statements
):
    """psycopg prepares nothing under Django's settings (a threshold of None), explicit
    requests included, unless core.db.prepared_cursor enables it: the read's statement
    is prepared at its first use and run as prepared after; nothing else is prepared."""

    def by_id():
        return {
            s: runs
            for s, runs in prepared_statements().items()
            if "WHERE u.id = $" in s
        }

    before = by_id()  # the fixture's writes may have read the user back already
    for _ in range(3):
        assert world.wide.get(f"/api/users/{world.both['id']}").status_code == 200

    after = by_id()
    assert len(after) == 1  # one statement, prepared once
    ((statement, runs),) = after.items()
    assert runs == before.get(statement, 0) + 3
    # Only the User API's reads are prepared: the ORM's statements never are.
    assert {s.lstrip()[:16] for s in prepared_statements()} == {'SELECT u."id", u'}
