"""A lead posted with a key this process knows is counted against its credential's rate
limit in the round trip that reads the cache's versions (accounts/authentication.py), as
a User API request is: no round trip of its own for the counter. A wrong secret, a blank
field or a key the versions show changed is never counted."""

import uuid

import pytest
from django.core.cache import cache
from rest_framework.test import APIClient

from core.throttling import credential_rate_key
from leads.models import Lead
from tests.leads.factories import VendorRegistrationFactory, adf, catch_all_rule

pytestmark = pytest.mark.django_db

URL = "/api/nl"
VENDOR_ID = "DLR-42"
# The window ``one_window`` puts every request in (60 s windows).
WINDOW = 1000
NO_ACCOUNT = "No account found with the given API username/password. Please check your credentials and try again."


@pytest.fixture
def intake(tenant, settings, one_window):
    VendorRegistrationFactory(account=tenant.account, vendor_id=VENDOR_ID)
    catch_all_rule(tenant.account, team=tenant.teams[0])
    settings.API_RATE_LIMITS = {**settings.API_RATE_LIMITS, "leads": "3/min"}
    return tenant


def post(tenant, n, **fields):
    form = {"xml": adf(prospect_id=f"P-{n}", vendor_id=VENDOR_ID), **tenant.headers}
    return APIClient().post(URL, {**form, **fields})


def counter(tenant) -> int | None:
    return cache.get(credential_rate_key("leads", tenant.credential, WINDOW))


def test_a_known_key_is_counted_with_the_versions_in_one_round_trip(
    intake, round_trips
):
    assert post(intake, 1).status_code == 200  # the key read and kept
    assert post(intake, 2).status_code == 200  # the counter's expiry set
    round_trips.clear()

    assert post(intake, 3).status_code == 200

    counting = [sent for sent in round_trips if b"INCR" in sent]
    assert len(counting) == 1
    assert b"MGET" in counting[0]
    assert counter(intake) == 3
    # The limit holds with the count sent along.
    assert post(intake, 4).status_code == 429
    assert Lead.objects.count() == 3


def test_a_wrong_secret_with_a_known_keys_prefix_is_refused_uncounted(intake):
    assert post(intake, 1).status_code == 200
    prefix = intake.key.rsplit("_", 1)[0]
    for n in range(5):
        response = post(intake, 10 + n, apikey=f"{prefix}_{n:040x}")
        assert response.status_code == 403
        assert response.json() == {"reason": NO_ACCOUNT}

    assert counter(intake) == 1
    assert [post(intake, n).status_code for n in (2, 3, 4)] == [200, 200, 429]


def test_a_key_revoked_elsewhere_is_refused_and_its_hit_taken_back(intake):
    assert post(intake, 1).status_code == 200
    intake.credential.keys.update(revoked_at="2020-01-01T00:00:00Z")
    # Another process's change: a new version, this process keeping its copy.
    cache.set("credentials:version", uuid.uuid4().hex, None)

    assert [post(intake, n).status_code for n in (2, 3)] == [403, 403]
    assert counter(intake) == 1
    assert Lead.objects.count() == 1
