"""The consent ledger records each consent (a lead, click-to-call, support), revocation
(STOP and a person's confirmed opt-out, a manager's mark) and re-consent (START), with
who and when, for the right accounts: never another organization's."""

import pytest
from django.urls import reverse
from rest_framework.test import APIClient

from calls.models import CallStatus
from consent.models import ConsentEvent, Kind, Source
from consent.selectors import calls_revocation
from consent.services import consent_give, consent_revoke
from leads.models import Lead, Outcome
from tests.accounts.factories import AccountFactory
from tests.consent.conftest import LEAD, SENDER
from tests.scoring.factories import CallFactory
from tests.texting.conftest import texting_on
from tests.users.factories import UserFactory, agent
from texting.inbound import possible_opt_out_confirm, text_receive
from texting.selectors import opted_out

pytestmark = pytest.mark.django_db


def rows(**filters):
    return list(ConsentEvent.objects.filter(**filters).order_by("at", "pk"))


def entry(row):
    """What an audit reads of a row (its moment and id aside)."""
    return (
        row.account_id,
        row.organization_id,
        row.phone,
        row.email,
        row.kind,
        row.calls,
        row.texts,
        row.source,
        row.who,
        row.detail,
    )


@pytest.fixture
def receive(django_capture_on_commit_callbacks, dispatched):
    sids = iter(range(1, 1000))

    def received(body, *, to=SENDER, sender=LEAD):
        with django_capture_on_commit_callbacks(execute=True):
            return text_receive(
                to_number=to,
                from_number=sender,
                body=body,
                provider="twilio",
                provider_id=f"SM{next(sids)}",
            )

    return received


# --- consents ----------------------------------------------------------------------------


def test_a_lead_records_consent_to_calls_with_its_source_and_time(dealer, lead_in):
    lead = lead_in(dealer, "P-1")

    (row,) = rows()
    assert entry(row) == (
        dealer.account.pk,
        dealer.organization.pk,
        LEAD,
        "maria@example.com",
        Kind.CONSENT,
        True,
        False,  # texts need the lead's own START after a STOP: a lead is not one
        Source.LEAD,
        "The person",
        "Lead from Web Form",
    )
    assert (row.at, row.reference) == (lead.received_at, f"lead {lead.pk}")


def test_the_same_lead_again_records_no_second_consent(dealer, lead_in):
    lead_in(dealer, "P-1")
    lead_in(dealer, "P-1")

    assert Lead.objects.latest("id").outcome == Outcome.DUPLICATE
    assert len(rows()) == 1


def test_a_click_to_call_request_records_consent_to_calls(tenant):
    taker = agent(
        tenant.account, phone="+13035551000", first_name="Sam", last_name="Reyes"
    )

    response = APIClient().post(
        "/api/clicktocallv2",
        {
            "account_id": str(tenant.account.pk),
            "customer_phone_number": "+17205550199",
            "user_id": str(taker.pk),
        },
        format="json",
        HTTP_API_KEY=tenant.key,
    )

    assert response.status_code == 201
    (row,) = rows()
    assert entry(row) == (
        tenant.account.pk,
        tenant.organization.pk,
        "+17205550199",
        "",
        Kind.CONSENT,
        True,
        False,
        Source.CLICK_TO_CALL,
        "The person",
        "Click-to-call for agent Sam Reyes",
    )


def test_support_enters_a_consent_or_a_managers_mark_in_the_admin(
    admin_client, admin_user
):
    account = AccountFactory()
    add = reverse("admin:consent_consentevent_add")
    common = {"account": str(account.pk), "at": "2026-12-01 10:00:00"}

    response = admin_client.post(
        add,
        {
            **common,
            "kind": "consent",
            "source": "support",
            "email": "Pat@Example.com",
            "texts": "on",
            "detail": "Signed form at the showroom",
        },
    )
    assert response.status_code == 302, response.context["adminform"].form.errors
    response = admin_client.post(
        add,
        {
            **common,
            "kind": "revocation",
            "source": "manager",
            "phone": LEAD,
            "calls": "on",
            "detail": "Asked not to be called again",
        },
    )
    assert response.status_code == 302

    consent, mark = rows()
    assert (consent.email, consent.calls, consent.texts) == (
        "pat@example.com",
        False,
        True,
    )
    assert (consent.source, consent.by) == (Source.SUPPORT, admin_user)
    assert (mark.kind, mark.source, mark.calls, mark.texts) == (
        Kind.REVOCATION,
        Source.MANAGER,
        True,
        False,
    )
    assert (mark.by, mark.who) == (admin_user, str(admin_user))
    assert calls_revocation(account_id=account.pk, phone=LEAD) == mark


def test_the_admin_refuses_a_revocation_of_texts_or_one_without_a_number(admin_client):
    account = AccountFactory()
    response = admin_client.post(
        reverse("admin:consent_consentevent_add"),
        {
            "account": str(account.pk),
            "at_0": "2026-12-01",
            "at_1": "10:00:00",
            "kind": "revocation",
            "source": "manager",
            "texts": "on",
        },
    )

    assert response.status_code == 200
    errors = response.context["adminform"].form.errors
    assert errors["phone"] == ["A revocation is of a phone number."]
    assert errors["texts"] == [
        "Texts stop when the lead texts STOP; a revocation entered here is of calls."
    ]
    assert not ConsentEvent.objects.exists()


# --- texts: STOP, a person's confirmed opt-out, START ---------------------------------------


def test_stop_and_start_are_recorded_for_every_account_texting_from_the_number(
    tenant, other_tenant, receive
):
    north, south = tenant.account, tenant.other_account
    elsewhere = other_tenant.account  # another organization, its own number
    texting_on(north)
    texting_on(south)  # the same sending number
    texting_on(elsewhere, sender="+13035550888")
    for account in (north, south, elsewhere):
        CallFactory(account=account, phone=LEAD, status=CallStatus.NOANSWER)

    stop = receive("Stop texting me")
    start = receive("START")

    assert [entry(row) for row in rows()] == [
        (
            account.pk,
            tenant.organization.pk,
            LEAD,
            "",
            kind,
            False,
            True,
            Source.TEXT,
            "The person",
            body,
        )
        for kind, body in [
            (Kind.REVOCATION, "Stop texting me"),
            (Kind.RECONSENT, "START"),
        ]
        for account in sorted((north, south), key=lambda a: a.pk)
    ]
    assert {row.reference for row in rows(kind=Kind.REVOCATION)} == {f"text {stop.pk}"}
    assert {row.reference for row in rows(kind=Kind.RECONSENT)} == {f"text {start.pk}"}
    assert not rows(account=elsewhere)


def test_a_repeated_stop_records_nothing_more(tenant, receive):
    texting_on(tenant.account)
    CallFactory(account=tenant.account, phone=LEAD)

    receive("STOP")
    receive("stop")

    assert len(rows()) == 1


def test_a_reply_read_as_an_opt_out_by_a_person_is_recorded_with_who_decided(
    tenant, receive
):
    texting_on(tenant.account)
    call = CallFactory(account=tenant.account, phone=LEAD)
    receive("Please take me off your list")
    assert not rows()  # only paused: nobody has read it as an opt-out yet
    manager = UserFactory(account=tenant.account, first_name="Dana", last_name="Kim")

    possible_opt_out_confirm(call=call, user=manager)

    (row,) = rows()
    assert (row.kind, row.source, row.texts, row.calls) == (
        Kind.REVOCATION,
        Source.TEXT,
        True,
        False,
    )
    assert (row.by, row.who, row.detail) == (
        manager,
        "Dana Kim",
        "Please take me off your list",
    )


# --- organizations -----------------------------------------------------------------------


def test_a_managers_mark_holds_for_its_account_only(tenant, other_tenant):
    manager = UserFactory(account=tenant.account)
    consent_revoke(
        accounts=[tenant.account],
        source=Source.MANAGER,
        phone=LEAD,
        calls=True,
        texts=False,
        by=manager,
    )

    assert calls_revocation(account_id=tenant.account.pk, phone=LEAD) is not None
    assert calls_revocation(account_id=tenant.other_account.pk, phone=LEAD) is None
    assert calls_revocation(account_id=other_tenant.account.pk, phone=LEAD) is None
    assert calls_revocation(account_id=tenant.account.pk, phone="+13035550124") is None


def test_an_entry_never_crosses_organizations(tenant, other_tenant):
    with pytest.raises(ValueError, match="never crosses organizations"):
        consent_revoke(
            accounts=[tenant.account, other_tenant.account],
            source=Source.TEXT,
            phone=LEAD,
            calls=False,
            texts=True,
        )

    assert not ConsentEvent.objects.exists()


def test_a_consent_needs_an_address(tenant):
    assert (
        consent_give(
            account=tenant.account, source=Source.SUPPORT, at=tenant.account.created_at
        )
        is None
    )
    assert not ConsentEvent.objects.exists()


def test_texting_keeps_its_own_opt_out_beside_the_ledger(tenant, receive):
    texting_on(tenant.account)
    CallFactory(account=tenant.account, phone=LEAD)

    receive("STOP")

    assert opted_out(account_id=tenant.account.pk, phone=LEAD)
