"""The consent endpoint through HTTP: an account's key records a revocation or a consent
in that account's ledger and reads a number's state and history; another account's and
another organization's entries are never read or changed; bad input is a 400 or 422 in
the envelope shape; each entry is delivered as a signed webhook event."""

import pytest
from rest_framework.test import APIClient

from calls.models import CallStatus
from consent.models import ConsentEvent, Kind, Source
from consent.selectors import calls_revocation
from tests.accounts.factories import issue_scored_data_key
from tests.consent.conftest import LEAD
from tests.texting.conftest import texting_on
from tests.webhooks.conftest import guide_examples, keys
from texting.selectors import opted_out
from webhooks.services import webhook_endpoint_create

pytestmark = pytest.mark.django_db

INVALID = "The given data was invalid."


def post(key, body):
    return APIClient().post(f"/api/consent?apikey={key}", body, format="json")


def get(key, **query):
    return APIClient().get("/api/consent", {"apikey": key, **query})


def test_an_integrators_revocation_ends_the_next_call_cancel(dealer, lead_in, world):
    key = issue_scored_data_key(dealer.account)
    lead = lead_in(dealer, "P-1")

    response = post(
        key,
        {
            "phone": "(303) 555-0123",
            "channel": "calls",
            "action": "revoke",
            "note": "Asked our BDC by e-mail",
        },
    )

    assert response.status_code == 201
    (shown,) = response.json()["consent"]
    assert {k: shown[k] for k in ("kind", "phone", "channel", "source", "detail")} == {
        "kind": "revocation",
        "phone": LEAD,
        "channel": "calls",
        "source": "integrator",
        "detail": "Asked our BDC by e-mail",
    }
    row = ConsentEvent.objects.get(pk=shown["id"])
    assert (row.account, row.calls, row.texts) == (dealer.account, True, False)
    world.run()
    lead.call.refresh_from_db()
    assert lead.call.status == CallStatus.CANCEL
    assert lead.call.update_notes == row.reason()
    assert row.reason().endswith("sent by an integrator: Asked our BDC by e-mail")

    state = get(key, phone=LEAD).json()
    assert state["calls"] == {"allowed": False, "reason": row.reason()}
    assert state["texts"] == {"allowed": True, "reason": ""}
    assert [(h["kind"], h["source"]) for h in state["history"]] == [
        ("revocation", "integrator"),
        ("consent", "lead"),
    ]


def test_a_consent_to_calls_lifts_the_revocation(tenant):
    key = issue_scored_data_key(tenant.account)
    post(key, {"phone": LEAD, "channel": "calls", "action": "revoke"})

    response = post(key, {"phone": LEAD, "channel": "calls", "action": "consent"})

    assert response.status_code == 201
    assert calls_revocation(account_id=tenant.account.pk, phone=LEAD) is None
    assert get(key, phone=LEAD).json()["calls"] == {"allowed": True, "reason": ""}


def test_a_revocation_of_texts_stops_the_accounts_texts(tenant):
    texting_on(tenant.account)
    key = issue_scored_data_key(tenant.account)

    response = post(key, {"phone": LEAD, "channel": "all", "action": "revoke"})

    assert response.status_code == 201
    assert response.json()["consent"][0]["channel"] == "all"
    assert opted_out(account_id=tenant.account.pk, phone=LEAD)
    state = get(key, phone=LEAD).json()
    assert state["texts"]["allowed"] is False
    assert state["calls"]["allowed"] is False


def test_an_email_address_is_recorded_and_read(tenant):
    key = issue_scored_data_key(tenant.account)

    response = post(
        key, {"email": "Maria@Example.com", "channel": "texts", "action": "revoke"}
    )

    assert response.status_code == 201
    state = get(key, email="maria@example.com").json()
    assert (state["email"], state["calls"], state["texts"]) == (
        "maria@example.com",
        None,
        None,
    )
    assert [h["email"] for h in state["history"]] == ["maria@example.com"]


def test_nothing_crosses_accounts_or_organizations(tenant, other_tenant):
    mine = issue_scored_data_key(tenant.account)
    sibling = issue_scored_data_key(tenant.other_account)
    theirs = issue_scored_data_key(other_tenant.account)

    post(mine, {"phone": LEAD, "channel": "calls", "action": "revoke"})

    assert calls_revocation(account_id=tenant.account.pk, phone=LEAD) is not None
    for account in (tenant.other_account, other_tenant.account):
        assert calls_revocation(account_id=account.pk, phone=LEAD) is None
    for key in (sibling, theirs):
        state = get(key, phone=LEAD).json()
        assert state["history"] == []
        assert state["calls"]["allowed"] is True
    assert set(ConsentEvent.objects.values_list("account", flat=True)) == {
        tenant.account.pk
    }


@pytest.mark.parametrize(
    ("body", "errors"),
    [
        (
            {"channel": "calls", "action": "revoke"},
            {"phone": ["The phone field is required when email is not present."]},
        ),
        (
            {"phone": "555", "channel": "calls", "action": "revoke"},
            {
                "phone": [
                    "The phone must be a valid phone number, in E.164 or the account "
                    "country's national format."
                ]
            },
        ),
        (
            {"email": "not-an-address", "channel": "calls", "action": "revoke"},
            {"email": ["The email must be a valid email address."]},
        ),
        (
            {"phone": LEAD, "channel": "fax", "action": "maybe"},
            {
                "channel": ['"fax" is not a valid choice.'],
                "action": ['"maybe" is not a valid choice.'],
            },
        ),
        (
            {"phone": LEAD, "channel": "texts", "action": "consent"},
            {
                "channel": [
                    "Texts resume only when the person texts START to the account's "
                    "number; send channel calls."
                ]
            },
        ),
        (["not", "an", "object"], None),
    ],
)
def test_bad_input_is_a_422_that_records_nothing(tenant, body, errors):
    key = issue_scored_data_key(tenant.account)

    response = post(key, body)

    assert response.status_code == 422
    assert response.json()["message"] == INVALID
    if errors is not None:
        assert response.json()["errors"] == errors
    assert not ConsentEvent.objects.exists()


@pytest.mark.parametrize(
    ("query", "message"),
    [
        ({}, "The phone or email parameter is required."),
        (
            {"phone": "12"},
            "The phone parameter must be a valid phone number, in E.164 or the "
            "account country's national format.",
        ),
        ({"email": "nope"}, "The email parameter must be a valid email address."),
    ],
)
def test_a_bad_query_is_a_400(tenant, query, message):
    response = get(issue_scored_data_key(tenant.account), **query)

    assert response.status_code == 400
    assert response.json() == {"success": False, "message": message}


def test_a_wrong_key_is_a_401(tenant):
    response = post("nope", {"phone": LEAD, "channel": "calls", "action": "revoke"})

    assert response.status_code == 401
    assert response.json() == {"success": False, "message": "Invalid API key"}
    assert not ConsentEvent.objects.exists()


def test_each_entry_is_delivered_as_its_event_to_its_organization_only(
    tenant, other_tenant, hooks, broker, django_capture_on_commit_callbacks
):
    webhook_endpoint_create(organization=tenant.organization, url=hooks.url("/mine"))
    webhook_endpoint_create(
        organization=other_tenant.organization, url=hooks.url("/theirs")
    )
    key = issue_scored_data_key(tenant.account)

    with django_capture_on_commit_callbacks(execute=True):
        post(
            key, {"phone": LEAD, "channel": "calls", "action": "revoke", "note": "BDC"}
        )
        post(key, {"phone": LEAD, "channel": "calls", "action": "consent"})
    broker.deliver(django_capture_on_commit_callbacks)

    events = hooks.events("/mine")
    assert [e["type"] for e in events] == ["consent_revoked", "consent_given"]
    documented = guide_examples()
    for event in events:
        assert keys(event) == keys(documented[event["type"]])
        assert event["account"] == {
            "id": tenant.account.pk,
            "name": tenant.account.name,
        }
    revoked = events[0]["consent"]
    assert (revoked["phone"], revoked["channel"], revoked["source"]) == (
        LEAD,
        "calls",
        "integrator",
    )
    assert (revoked["detail"], revoked["kind"]) == ("BDC", "revocation")
    assert revoked["id"] == ConsentEvent.objects.get(kind=Kind.REVOCATION).pk
    assert events[1]["consent"]["source"] == Source.INTEGRATOR
    assert hooks.events("/theirs") == []
