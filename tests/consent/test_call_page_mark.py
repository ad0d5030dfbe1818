"""A manager marks on the call page that the lead asked not to be called again: a
revocation of the account's calls in the consent ledger, with who, when and why. Only a
manager of the call's account may; another organization's call is not found."""

import pytest
from django.urls import reverse

from consent.models import ConsentEvent, Kind, Source
from consent.selectors import calls_revocation
from tests.accounts.factories import AccountFactory
from tests.scoring.factories import CallFactory, in_role

pytestmark = pytest.mark.django_db

LEAD = "+13035550177"


@pytest.fixture
def call(db):
    return CallFactory(account=AccountFactory(name="North Motors"), phone=LEAD)


def mark(client, call, reason="Said on the phone: never call me again"):
    return client.post(
        reverse("pages:call-do-not-call", args=[call.pk]), {"reason": reason}
    )


def test_a_manager_marks_the_number_and_its_calls_stop(client, call):
    manager = in_role(
        "Manager", accounts=[call.account], first_name="Dana", last_name="Kim"
    )
    client.force_login(manager)
    page = client.get(reverse("pages:call-detail", args=[call.pk])).content.decode()
    assert "Don't call this number again" in page

    response = mark(client, call, "Said on the phone:\nnever call me again")

    assert response.status_code == 302
    assert response["Location"] == reverse("pages:call-detail", args=[call.pk])
    (row,) = ConsentEvent.objects.all()
    assert (row.account, row.phone, row.kind, row.source, row.calls, row.texts) == (
        call.account,
        LEAD,
        Kind.REVOCATION,
        Source.MANAGER,
        True,
        False,
    )
    assert (row.by, row.who, row.detail, row.reference) == (
        manager,
        "Dana Kim",
        "Said on the phone: never call me again",
        f"call {call.pk}",
    )
    assert calls_revocation(account_id=call.account_id, phone=LEAD) == row


def test_the_calls_agent_may_not_mark_and_sees_no_form(client, call):
    call.agent = in_role("Agent", accounts=[call.account])
    call.save(update_fields=["agent"])
    client.force_login(call.agent)
    page = client.get(reverse("pages:call-detail", args=[call.pk]))
    assert page.status_code == 200
    assert "Don't call this number again" not in page.content.decode()

    assert mark(client, call).status_code == 403
    assert not ConsentEvent.objects.exists()


def test_another_organizations_manager_finds_no_call(client, call):
    client.force_login(in_role("Manager", accounts=[AccountFactory()]))

    assert mark(client, call).status_code == 404
    assert not ConsentEvent.objects.exists()


def test_marking_needs_a_post(client, call):
    client.force_login(in_role("Manager", accounts=[call.account]))

    assert (
        client.get(reverse("pages:call-do-not-call", args=[call.pk])).status_code == 405
    )
