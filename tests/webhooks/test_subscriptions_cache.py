"""An organization's endpoints are read from the shared cache by every event, and every
change to them (create, update, accounts, disable, delete) is seen by the next event."""

import pytest
from django.urls import reverse
from django.utils import timezone
from rest_framework.test import APIClient

from tests.accounts.factories import AccountFactory
from tests.admin_pages import form_data, sign_in_support, typed
from tests.leads.factories import VendorRegistrationFactory, adf, catch_all_rule
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


def test_an_endpoint_added_in_the_admin_hears_of_the_next_lead(client, tenant, hooks):
    """Through the real interfaces: a lead cached "no endpoints" for its organization,
    support adds one on the admin's form, the next lead's event is delivered to it."""
    VendorRegistrationFactory(account=tenant.account, vendor_id="V-1")
    catch_all_rule(tenant.account)

    def post_lead(prospect_id):
        xml = adf(vendor_id="V-1", prospect_id=prospect_id)
        response = APIClient().post("/api/nl", {"xml": xml, **tenant.headers})
        assert response.status_code == 200
        return response.json()["leadId"]

    post_lead("P-1")
    assert not WebhookDelivery.objects.exists()

    sign_in_support(client)
    add = reverse("admin:webhooks_webhookendpoint_add")
    data = typed(
        form_data(client.get(add), "webhookendpoint_form"),
        {"organization": str(tenant.organization.pk), "url": hooks.url("/hook")},
    )
    data["event_types"] = ["lead_received"]
    assert client.post(add, data).status_code == 200

    lead_id = post_lead("P-2")
    [delivery] = WebhookDelivery.objects.select_related("event", "endpoint")
    assert delivery.endpoint.url == hooks.url("/hook")
    assert delivery.event.type == "lead_received"
    assert delivery.event.subject == f"lead:{lead_id}"
