"""A User API request of a key this process knows is counted against its credential's rate
limit in the round trip that reads the cache's versions (accounts/authentication.py): one
round trip to Redis in all. Only a request that authenticates as the credential stays
counted: a wrong secret is never counted, and a key the versions show changed (rotated
out, revoked) has its hit taken back."""

import uuid
from datetime import timedelta
from types import SimpleNamespace

import pytest
from django.core.cache import cache
from django.utils import timezone
from redis.connection import Connection

from accounts.services import api_credential_revoke, api_key_rotate
from core.throttling import CredentialRateThrottle, credential_rate_key

pytestmark = pytest.mark.django_db

# The window ``one_window`` puts every request in (60 s windows).
WINDOW = 1000


@pytest.fixture
def limit(settings, one_window):
    def set_limit(count: int) -> None:
        settings.API_RATE_LIMITS = {
            **settings.API_RATE_LIMITS,
            "users": f"{count}/min",
        }

    return set_limit


def url(tenant) -> str:
    return (
        f"/api/users/find/available-user-code?organizationId={tenant.organization.pk}"
    )


def counter(tenant) -> int | None:
    return cache.get(credential_rate_key("users", tenant.credential, WINDOW))


def test_a_known_key_is_counted_with_the_versions_in_one_round_trip(
    tenant, limit, round_trips
):
    limit(100)
    client = tenant.client()
    assert client.get(url(tenant)).status_code == 200  # the key read and kept
    assert client.get(url(tenant)).status_code == 200  # the counter's expiry set
    round_trips.clear()

    assert client.get(url(tenant)).status_code == 200

    assert len(round_trips) == 1
    assert b"MGET" in round_trips[0]
    assert b"INCR" in round_trips[0]
    assert counter(tenant) == 3


def test_the_limit_holds_with_the_count_sent_along(tenant, limit):
    limit(3)
    client = tenant.client()

    statuses = [client.get(url(tenant)).status_code for _ in range(5)]

    assert statuses == [200, 200, 200, 429, 429]
    assert counter(tenant) == 5  # refused for the limit: counted, as ever


def test_a_wrong_secret_with_a_known_keys_prefix_is_never_counted(
    api_client, tenant, limit
):
    limit(2)
    assert tenant.client().get(url(tenant)).status_code == 200
    prefix = tenant.key.rsplit("_", 1)[0]
    for n in range(5):
        response = api_client.get(
            url(tenant),
            HTTP_APIUSER=tenant.credential.api_user,
            HTTP_APIKEY=f"{prefix}_{n:040x}",
        )
        assert response.status_code == 401

    assert counter(tenant) == 1
    statuses = [tenant.client().get(url(tenant)).status_code for _ in range(2)]
    assert statuses == [200, 429]


def changed_by_another_process() -> None:
    """What another process's change shows this one: a new version in the shared cache,
    while this process keeps its copies (a change made here would drop them)."""
    cache.set("credentials:version", uuid.uuid4().hex, None)


def test_a_key_rotated_out_elsewhere_is_refused_and_its_hit_taken_back(
    api_client, tenant, limit
):
    limit(3)
    new_key = api_key_rotate(credential=tenant.credential, grace=timedelta(hours=1))
    old = tenant.client()
    assert old.get(url(tenant)).status_code == 200  # the old key kept, usable
    tenant.credential.keys.exclude(prefix=new_key.rsplit("_", 1)[0]).update(
        revoked_at=timezone.now()
    )
    changed_by_another_process()

    # The first request is counted with the versions, which show the kept record
    # stale; refused, its hit is taken back. The record read afresh is refused at once.
    assert [old.get(url(tenant)).status_code for _ in range(3)] == [401] * 3
    assert counter(tenant) == 1

    new = {"HTTP_APIUSER": tenant.credential.api_user, "HTTP_APIKEY": new_key}
    statuses = [api_client.get(url(tenant), **new).status_code for _ in range(3)]
    assert statuses == [200, 200, 429]


def test_a_credential_revoked_elsewhere_stops_at_once_uncounted(tenant, limit):
    limit(5)
    client = tenant.client()
    assert client.get(url(tenant)).status_code == 200
    assert client.get(url(tenant)).status_code == 200
    tenant.credential.keys.update(revoked_at=timezone.now())
    changed_by_another_process()

    assert client.get(url(tenant)).status_code == 401
    assert counter(tenant) == 2


def test_a_revoked_credential_stops_at_once_uncounted(tenant, limit):
    limit(5)
    client = tenant.client()
    assert client.get(url(tenant)).status_code == 200

    api_credential_revoke(credential=tenant.credential)

    assert client.get(url(tenant)).status_code == 401
    assert counter(tenant) == 1


def test_a_count_of_the_window_before_is_taken_back_and_this_one_counted(tenant, limit):
    """Authentication counted just before a window ended and the throttle runs in the
    next one: the hit belongs to the new window only."""
    limit(10)
    before = credential_rate_key("users", tenant.credential, WINDOW - 1)
    cache.set(before, 4, None)
    request = SimpleNamespace(auth=tenant.credential, rate_counted=(before, 4))
    view = SimpleNamespace(throttle_scope="users")

    assert CredentialRateThrottle().allow_request(request, view)

    assert cache.get(before) == 3
    assert counter(tenant) == 1


def test_an_unreachable_cache_still_answers(tenant, limit, monkeypatch):
    """Redis failing in the combined round trip: the request goes the usual way (which
    lets it through uncounted while the cache is down)."""
    from redis.exceptions import ConnectionError

    limit(100)
    client = tenant.client()
    assert client.get(url(tenant)).status_code == 200

    def down(self, *args, **kwargs):
        raise ConnectionError("down")

    monkeypatch.setattr(Connection, "send_packed_command", down)
    assert client.get(url(tenant)).status_code == 200
