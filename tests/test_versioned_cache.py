"""The shared cache's versions (core.versioned): a request reads every family's version in
one round trip and takes entries still current from its own process; whatever another
process changes reaches the next request; a long task reads the versions again."""

import pytest
from django.core.cache import caches
from rest_framework.test import APIClient

from core import versioned
from core.versioned import VersionedCache
from leads.models import Lead, Outcome, VendorRegistration
from tests.leads.factories import VendorRegistrationFactory, adf, catch_all_rule

pytestmark = pytest.mark.django_db

_count = [0]


def post_lead(tenant):
    _count[0] += 1
    xml = adf(vendor_id="V-1", prospect_id=f"P-{_count[0]}")
    APIClient().post("/api/nl", {"xml": xml, **tenant.headers})
    return Lead.objects.latest("id")


@pytest.fixture
def routed(tenant):
    VendorRegistrationFactory(account=tenant.account, vendor_id="V-1")
    catch_all_rule(tenant.account)
    return tenant


def test_a_warm_lead_reads_every_version_at_once_and_no_entry(routed, round_trips):
    post_lead(routed)  # reads and keeps the key, routing, texting settings, endpoints
    post_lead(routed)  # and the rate-limit counter's expiry set
    round_trips.clear()

    lead = post_lead(routed)

    assert lead.outcome == Outcome.ACCEPTED
    # One round trip: every family's version (with the lead's rate-limit count); the
    # entries are this process's copies.
    versions = [family.version_key.encode() for family in versioned._families]
    reading = [batch for batch in round_trips if any(key in batch for key in versions)]
    assert len(reading) == 1
    assert b"MGET" in reading[0]
    assert all(key in reading[0] for key in versions)
    entries = [f"{family.name}:".encode() for family in versioned._families]
    for batch in round_trips:
        for key in entries:
            assert batch.count(key) == batch.count(key + b"version"), batch


def test_a_change_another_process_makes_reaches_the_next_request(routed):
    """Another process's write sends no signal here: only the version it draws in the
    shared cache tells this process that its copies are stale."""
    assert post_lead(routed).outcome == Outcome.ACCEPTED
    VendorRegistration.objects.update(is_active=False)  # no signal sent
    assert post_lead(routed).outcome == Outcome.ACCEPTED  # still the copy kept
    caches["default"].set("lead-routing:version", "drawn-by-another-process", None)

    assert post_lead(routed).outcome == Outcome.NO_VENDOR


def test_a_task_reads_the_versions_again_after_a_while(db, monkeypatch):
    family = VersionedCache("test-scope-family")
    clock = [1000.0]
    monkeypatch.setattr(versioned.time, "monotonic", lambda: clock[0])
    loads = []

    def load():
        loads.append(1)
        return len(loads)

    versioned.scope_begin()
    try:
        assert family.get("k", load)[0] == 1
        caches["default"].set(family.version_key, "drawn elsewhere", None)
        assert family.get("k", load)[0] == 1  # this scope's version still
        clock[0] += versioned.SCOPE_SECONDS + 0.1
        assert family.get("k", load)[0] == 2  # read again: stale, loaded afresh
    finally:
        versioned.scope_end()
        versioned._families.remove(family)


def test_each_read_gets_its_own_copy_and_a_process_keeps_a_bounded_number(
    db, monkeypatch
):
    family = VersionedCache("test-copies-family")
    monkeypatch.setattr(versioned, "LOCAL_ENTRIES", 3)
    versioned.scope_begin()
    try:
        first, _ = family.get("rules", lambda: {"rules": [1, 2]})
        first["rules"].append(3)  # a caller changing what it was given
        again, _ = family.get("rules", lambda: pytest.fail("read from the database"))
        for n in range(10):
            family.get(f"other-{n}", lambda: "other")
    finally:
        versioned.scope_end()
        versioned._families.remove(family)

    assert again == {"rules": [1, 2]}
    assert len(family.local) <= 3


def test_a_change_in_this_request_is_seen_by_its_own_later_reads(db):
    family = VersionedCache("test-own-change")
    versioned.scope_begin()
    try:
        assert family.get("k", lambda: "before")[0] == "before"
        family.changed()  # a service in this request changed the rows
        assert family.get("k", lambda: "after")[0] == "after"
    finally:
        versioned.scope_end()
        versioned._families.remove(family)
