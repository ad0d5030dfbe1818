"""Support uploads an account's do-not-call list in the admin: every number a revocation
of that account's calls (the next lead call ends CANCEL, click-to-call is refused); a
list with a bad line is reported line by line and records nothing; another account's
and another organization's calls are untouched."""

import pytest
from django.core.files.uploadedfile import SimpleUploadedFile
from django.urls import reverse
from rest_framework.test import APIClient

from calls.models import CallStatus
from consent.dnc import MOST_NUMBERS
from consent.models import ConsentEvent, Kind, Source
from consent.selectors import calls_revocation
from tests.consent.conftest import LEAD
from tests.users.factories import agent

pytestmark = pytest.mark.django_db

UPLOAD = reverse("admin:consent_consentevent_do_not_call")
CHANGELIST = reverse("admin:consent_consentevent_changelist")


def upload(admin_client, account, *, text="", name="dnc.csv", note="State list, Dec"):
    data = {"account": str(account.pk), "note": note}
    if name:
        data["file"] = SimpleUploadedFile(name, text.encode(), "text/csv")
    else:
        data["numbers"] = text
    return admin_client.post(UPLOAD, data)


def revoked(account):
    return sorted(
        ConsentEvent.objects.filter(
            account=account, kind=Kind.REVOCATION, source=Source.DO_NOT_CALL
        ).values_list("phone", flat=True)
    )


def test_the_changelist_links_to_the_upload(admin_client):
    page = admin_client.get(CHANGELIST).content.decode()
    assert UPLOAD in page
    assert "Upload a do-not-call list" in admin_client.get(UPLOAD).content.decode()


def test_a_csv_list_stops_the_accounts_next_call_to_each_number(
    admin_client, dealer, lead_in, world
):
    lead = lead_in(dealer, "P-1")  # queued before the list arrives
    csv = (
        "phone,name\n(303) 555-0123,Maria\n+1 720 555 0199,Lee\n303.555.0123,again\n\n"
    )

    response = upload(admin_client, dealer.account, text=csv)

    assert response.status_code == 302
    assert response["Location"] == CHANGELIST
    assert revoked(dealer.account) == ["+13035550123", "+17205550199"]
    row = ConsentEvent.objects.get(phone=LEAD, source=Source.DO_NOT_CALL)
    assert (row.calls, row.texts, row.detail, row.organization) == (
        True,
        False,
        "State list, Dec",
        dealer.organization,
    )
    assert revoked(dealer.other_account) == []

    world.run()
    lead.call.refresh_from_db()
    assert lead.call.status == CallStatus.CANCEL
    assert lead.call.update_notes == row.reason()
    assert "do-not-call list" in row.reason()


def test_click_to_call_is_refused_for_a_listed_number(admin_client, tenant):
    taker = agent(tenant.account, phone="+13035551000")
    upload(admin_client, tenant.account, text="7205550199", name="")

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

    assert response.status_code == 422
    assert response.json()["errors"]["customer_phone_number"] == [
        "The customer phone number has withdrawn consent to calls from this account."
    ]


def test_a_bad_line_is_reported_and_nothing_is_recorded(admin_client, tenant):
    listed = "+13035550123\nnot a number\n555\n+17205550199\n"

    response = upload(admin_client, tenant.account, text=listed)

    assert response.status_code == 200
    body = response.content.decode()
    assert "Nothing was recorded." in body
    assert "Line 2: &quot;not a number&quot; is not a phone number." in body
    assert "Line 3: &quot;555&quot; is not a phone number." in body
    assert not ConsentEvent.objects.exists()


def test_a_list_over_the_cap_is_refused_whole(admin_client, tenant):
    numbers = "\n".join(f"+1303555{n:04d}" for n in range(MOST_NUMBERS + 1))

    response = upload(admin_client, tenant.account, text=numbers)

    assert response.status_code == 200
    assert f"at most {MOST_NUMBERS} at a time" in response.content.decode()
    assert not ConsentEvent.objects.exists()


def test_an_empty_upload_asks_for_numbers(admin_client, tenant):
    response = upload(admin_client, tenant.account, text="", name="")

    assert response.status_code == 200
    assert "Upload a file or paste the numbers." in response.content.decode()


def test_a_list_holds_for_its_account_only(admin_client, tenant, other_tenant):
    upload(admin_client, tenant.account, text=LEAD)

    assert calls_revocation(account_id=tenant.account.pk, phone=LEAD) is not None
    assert calls_revocation(account_id=tenant.other_account.pk, phone=LEAD) is None
    assert calls_revocation(account_id=other_tenant.account.pk, phone=LEAD) is None


def test_only_staff_who_may_add_upload(client, tenant):
    from tests.users.factories import UserFactory

    user = UserFactory(account=tenant.account, is_staff=True)
    client.force_login(user)

    assert client.get(UPLOAD).status_code == 403
