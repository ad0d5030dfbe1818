"""An organization's endpoints are read from the shared cache by every event, and every
change to them (create, update, accounts, disable, delete) is seen by the next event."""

import pytest
from django.utils import timezone

from tests.accounts.factories import AccountFactory
from webhooks.emission import webhook_event_emit
from webhooks.endpoints import (
    endpoint_disable,
    webhook_endpoint_create,
    webhook_endpoint_delete,
    webhook_endpoint_update,
)
from webhooks.models import WebhookDelivery

pytestmark = pytest.mark.django_db


def emit(tenant, account=None):
    event = webhook_event_emit(
        type="call_completed",
        organization_id=tenant.organization.pk,
        account=account or tenant.account,
        objects={"call": {"id": 1}},
    )
    return (
        set(
            WebhookDelivery.objects.filter(event=event).values_list(
                "endpoint_id", flat=True
            )
        )
        if event
        else set()
    )


def test_an_organization_without_endpoints_costs_no_query_once_cached(
    tenant, django_assert_num_queries
):
    assert emit(tenant) == set()
    with django_assert_num_queries(0):
        assert emit(tenant) == set()


def test_every_change_to_the_endpoints_reaches_the_next_event(
    tenant, other_tenant, hooks
):
    URL = hooks.url("/hook")
    assert emit(tenant) == set()  # cached: none

    endpoint, _ = webhook_endpoint_create(organization=tenant.organization, url=URL)
    assert emit(tenant) == {endpoint.pk}
    assert emit(other_tenant) == set()  # never another organization's

    webhook_endpoint_update(
        endpoint=endpoint,
        url=URL,
        description="",
        accounts=[tenant.other_account],
        event_types=[],
        is_active=True,
    )
    assert emit(tenant) == set()
    assert emit(tenant, tenant.other_account) == {endpoint.pk}

    endpoint.accounts.set([tenant.account])  # as the admin's form saves it
    assert emit(tenant) == {endpoint.pk}

    endpoint_disable(endpoint.pk, reason="Gone", at=timezone.now())
    assert emit(tenant) == set()

    second, _ = webhook_endpoint_create(
        organization=tenant.organization, url=URL, accounts=[tenant.account]
    )
    assert emit(tenant) == {second.pk}
    webhook_endpoint_delete(endpoint=second)
    assert emit(tenant) == set()


def test_an_account_of_a_new_organization_is_read_fresh(tenant, hooks):
    URL = hooks.url("/hook")
    """Entries are per organization: another organization's first event reads its own."""
    assert emit(tenant) == set()
    account = AccountFactory()
    endpoint, _ = webhook_endpoint_create(organization=account.organization, url=URL)
    event = webhook_event_emit(
        type="call_completed",
        organization_id=account.organization_id,
        account=account,
        objects={},
    )
    assert event is not None
    assert list(
        WebhookDelivery.objects.filter(event=event).values_list(
            "endpoint_id", flat=True
        )
    ) == [endpoint.pk]
