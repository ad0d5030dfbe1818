"""Support's webhook screens, through the admin as a browser uses it."""

import re

import lxml.html
import pytest
from django.http import HttpResponse
from django.urls import reverse

from core.admin import KEPT_AS_HASH
from tests.admin_pages import form_data, sign_in_support, text_of, typed
from tests.test_admin_overview import overview_rows
from tests.webhooks.conftest import guide_verifier
from tests.webhooks.receiver import Answer
from webhooks.models import DeliveryStatus, WebhookDelivery, WebhookEndpoint
from webhooks.services import (
    GONE,
    NOT_ALLOWED,
    webhook_delivery_send,
    webhook_endpoint_create,
    webhook_event_emit,
    webhook_test_send,
)

pytestmark = pytest.mark.django_db

ADD = reverse("admin:webhooks_webhookendpoint_add")
DELIVERIES = reverse("admin:webhooks_webhookdelivery_changelist")


def shown_secret(response: HttpResponse) -> str:
    shown = re.search(
        r'<code class="secret">(whsec_[^<]+)</code>', response.content.decode()
    )
    assert shown is not None, "no secret shown"
    return shown.group(1)


def test_support_adds_an_endpoint_and_sees_its_secret_once(
    client, tenant, hooks, broker, django_capture_on_commit_callbacks
):
    sign_in_support(client)
    page = client.get(ADD)
    data = typed(
        form_data(page, "webhookendpoint_form"),
        {
            "organization": str(tenant.organization.pk),
            "url": hooks.url("/hook"),
            "description": "Dealer CRM",
        },
    )
    data["accounts"] = [str(tenant.account.pk)]
    data["event_types"] = ["call_completed", "lead_received"]

    response = client.post(ADD, data)

    assert response.status_code == 200
    assert "will not be shown again" in text_of(response)
    secret = shown_secret(response)
    endpoint = WebhookEndpoint.objects.get()
    assert endpoint.description == "Dealer CRM"
    assert list(endpoint.accounts.all()) == [tenant.account]
    assert endpoint.event_types == ["call_completed", "lead_received"]
    assert secret not in endpoint.secret_encrypted
    assert (
        secret
        not in client.get(
            reverse("admin:webhooks_webhookendpoint_change", args=[endpoint.pk])
        ).content.decode()
    )
    # The secret shown is the one deliveries are signed with.
    with django_capture_on_commit_callbacks(execute=True):
        webhook_test_send(endpoint=endpoint)
    [delivery_id] = broker.take()
    webhook_delivery_send(delivery_id=delivery_id)
    [received] = hooks.received
    assert guide_verifier()(secret, received.headers, received.body)


def test_the_add_form_refuses_a_private_address(client, tenant, settings):
    sign_in_support(client)
    settings.WEBHOOK_ALLOWED_ADDRESSES = []
    data = typed(
        form_data(client.get(ADD), "webhookendpoint_form"),
        {"organization": str(tenant.organization.pk), "url": "https://127.0.0.1:9/in"},
    )

    response = client.post(ADD, data)

    assert response.status_code == 200
    assert NOT_ALLOWED in text_of(response)
    assert not WebhookEndpoint.objects.exists()


def test_rotate_send_test_and_replay_from_the_change_page(
    client, tenant, hooks, broker, django_capture_on_commit_callbacks
):
    sign_in_support(client)
    endpoint, old = webhook_endpoint_create(
        organization=tenant.organization, url=hooks.url("/hook")
    )
    change = client.get(
        reverse("admin:webhooks_webhookendpoint_change", args=[endpoint.pk])
    )
    tools = {
        label: url
        for url, label in re.findall(
            r'<li><a href="([^"]+)">([^<]+)</a></li>', change.content.decode()
        )
    }
    assert {"Send test event", "Replay since…", "Rotate signing secret"} <= set(tools)

    assert "Send a test event?" in text_of(client.get(tools["Send test event"]))
    with django_capture_on_commit_callbacks(execute=True):
        sent = client.post(tools["Send test event"], follow=True)
    assert "queued for" in text_of(sent)
    [test_delivery] = broker.take()
    webhook_delivery_send(delivery_id=test_delivery)
    with django_capture_on_commit_callbacks(execute=True):
        webhook_event_emit(
            type="call_completed",
            organization_id=tenant.organization.pk,
            account=tenant.account,
            objects={},
        )
    [delivery_id] = broker.take()
    webhook_delivery_send(delivery_id=delivery_id)

    rotated = client.post(tools["Rotate signing secret"])
    new = shown_secret(rotated)
    assert new != old

    assert "Replay events to" in text_of(client.get(tools["Replay since…"]))
    with django_capture_on_commit_callbacks(execute=True):
        replayed = client.post(
            tools["Replay since…"], {"since": "2000-01-01T00:00"}, follow=True
        )
    assert "1 event queued again" in text_of(replayed)
    [again] = broker.take()
    assert again == delivery_id
    webhook_delivery_send(delivery_id=again)
    test, first, second = hooks.received
    assert test.event["type"] == "test_event"  # test events are not replayed
    assert first.event["id"] == second.event["id"]
    verify = guide_verifier()
    assert verify(new, second.headers, second.body)
    assert verify(old, second.headers, second.body)  # the overlap


def test_deliveries_list_their_outcome_and_body_and_can_be_sent_again(
    client, tenant, hooks, broker, django_capture_on_commit_callbacks
):
    sign_in_support(client)
    endpoint, _ = webhook_endpoint_create(
        organization=tenant.organization, url=hooks.url("/hook")
    )
    hooks.script("/hook", Answer(503))
    with django_capture_on_commit_callbacks(execute=True):
        event = webhook_test_send(endpoint=endpoint)
    [delivery_id] = broker.take()
    webhook_delivery_send(delivery_id=delivery_id)

    listing = text_of(client.get(f"{DELIVERIES}?endpoint__id__exact={endpoint.pk}"))
    assert "test_event" in listing
    assert "503 in " in listing
    assert "Pending" in listing
    assert "1, next at " in listing  # when it is tried again
    # The event id an integrator quotes finds its deliveries.
    found = text_of(client.get(f"{DELIVERIES}?q={event.public_id}"))
    assert "1 webhook delivery" in found
    assert "test_event" in found
    detail = text_of(
        client.get(reverse("admin:webhooks_webhookdelivery_change", args=[delivery_id]))
    )
    assert '"type": "test_event"' in detail
    assert event.public_id in detail

    with django_capture_on_commit_callbacks(execute=True):
        response = client.post(
            DELIVERIES,
            {"action": "send_again", "_selected_action": [str(delivery_id)]},
            follow=True,
        )
    assert "1 delivery queued again" in text_of(response)
    assert broker.take() == [delivery_id]
    assert webhook_delivery_send(delivery_id=delivery_id) == "succeeded"
    assert WebhookDelivery.objects.get().status == DeliveryStatus.SUCCEEDED


def test_the_overview_tells_support_an_endpoint_was_disabled(
    client, tenant, hooks, broker, django_capture_on_commit_callbacks
):
    sign_in_support(client)
    endpoint, _ = webhook_endpoint_create(
        organization=tenant.organization, url=hooks.url("/gone")
    )
    hooks.script("/gone", 410)
    with django_capture_on_commit_callbacks(execute=True):
        webhook_test_send(endpoint=endpoint)
    [delivery_id] = broker.take()
    webhook_delivery_send(delivery_id=delivery_id)

    rows = overview_rows(client.get(reverse("admin:index")), "overview-webhooks")

    label, count, link = rows[0]
    assert (label, count) == ("Endpoints disabled", 1)
    assert {label: count for label, count, _ in rows}[
        "Deliveries failed, last 24 hours"
    ] == 1
    listed = text_of(client.get(link))
    assert endpoint.url in listed
    assert GONE in listed


def account_choices(response) -> dict[str, str]:
    """The accounts picker's options: value → label."""
    page = lxml.html.fromstring(response.content.decode())
    return {
        option.get("value"): option.text_content()
        for option in page.xpath("//select[@name='accounts']/option")
    }


def test_the_secret_page_says_the_secret_is_kept_encrypted_not_hashed(
    client, tenant, hooks
):
    sign_in_support(client)
    data = typed(
        form_data(client.get(ADD), "webhookendpoint_form"),
        {"organization": str(tenant.organization.pk), "url": hooks.url("/hook")},
    )

    page = text_of(client.post(ADD, data))

    assert "The service keeps it encrypted, to sign deliveries with" in page
    assert "hash" not in page.lower()
    # API keys are still said to be kept as a hash (only a hash of them is stored).
    assert "Only a hash is kept" in KEPT_AS_HASH


def test_the_account_picker_offers_only_the_endpoints_organization(
    client, tenant, other_tenant, hooks
):
    sign_in_support(client)
    endpoint, _ = webhook_endpoint_create(
        organization=tenant.organization, url=hooks.url("/hook")
    )
    change = reverse("admin:webhooks_webhookendpoint_change", args=[endpoint.pk])
    ours = {str(tenant.account.pk), str(tenant.other_account.pk)}

    assert set(account_choices(client.get(change))) == ours
    assert (
        set(account_choices(client.get(f"{ADD}?organization={tenant.organization.pk}")))
        == ours
    )
    # Before an organization is chosen every account is offered, named with its organization.
    offered = account_choices(client.get(ADD))
    assert offered[str(other_tenant.account.pk)] == (
        f"{other_tenant.organization.name} · {other_tenant.account.name}"
    )

    # Another organization's account is refused on the server, on add and on change.
    data = typed(
        form_data(client.get(ADD), "webhookendpoint_form"),
        {"organization": str(tenant.organization.pk), "url": hooks.url("/other")},
    )
    data["accounts"] = [str(other_tenant.account.pk)]
    response = client.post(ADD, data)
    assert response.status_code == 200
    assert "is not one of the available choices" in text_of(response)
    assert WebhookEndpoint.objects.count() == 1
    data = form_data(client.get(change), "webhookendpoint_form")
    data["accounts"] = [str(tenant.account.pk), str(other_tenant.account.pk)]
    response = client.post(change, data)
    assert response.status_code == 200
    assert "is not one of the available choices" in text_of(response)
    assert list(endpoint.accounts.all()) == []


def test_support_deletes_an_endpoint_with_its_deliveries_and_the_events_stay(
    client, tenant, hooks, broker, django_capture_on_commit_callbacks
):
    from webhooks.models import WebhookEvent

    sign_in_support(client)
    endpoint, _ = webhook_endpoint_create(
        organization=tenant.organization, url=hooks.url("/hook")
    )
    with django_capture_on_commit_callbacks(execute=True):
        webhook_event_emit(
            type="call_completed",
            organization_id=tenant.organization.pk,
            account=tenant.account,
            objects={},
        )
    assert WebhookDelivery.objects.filter(endpoint=endpoint).count() == 1
    delete = reverse("admin:webhooks_webhookendpoint_delete", args=[endpoint.pk])

    page = client.get(delete)
    assert page.status_code == 200
    assert "Are you sure" in text_of(page)  # not "no permission to delete deliveries"
    assert client.post(delete, {"post": "yes"}).status_code == 302

    assert not WebhookEndpoint.objects.filter(pk=endpoint.pk).exists()
    assert not WebhookDelivery.objects.exists()
    assert WebhookEvent.objects.filter(type="call_completed").exists()
