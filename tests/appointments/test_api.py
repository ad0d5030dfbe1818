"""The appointments endpoint through HTTP: an account's key reads its appointments and
marks one; another account's appointment is not found; a change the life refuses is a 422
that changes nothing; each mark is kept as the integrator's and sent as its event."""

import datetime as dt
from zoneinfo import ZoneInfo

import pytest
from rest_framework.test import APIClient

from appointments.models import Actor, AppointmentChange, Status
from appointments.services import appointment_set_for_call
from tests.accounts.factories import issue_scored_data_key
from tests.scoring.factories import CallFactory
from webhooks.models import WebhookEvent
from webhooks.services import webhook_endpoint_create

pytestmark = pytest.mark.django_db


@pytest.fixture
def booked(tenant):
    tenant.account.timezone = "America/Denver"
    tenant.account.save()
    call = CallFactory(account=tenant.account, phone="+13035550147")
    return appointment_set_for_call(
        call=call,
        starts_at=dt.datetime(2026, 11, 28, 10, 30, tzinfo=ZoneInfo("America/Denver")),
        by=Actor.AGENT,
    )


def test_an_integrator_reads_and_marks_an_appointment_kept(tenant, booked, settings):
    settings.WEBHOOK_ALLOWED_ADDRESSES = ["127.0.0.1"]
    webhook_endpoint_create(
        organization=tenant.organization, url="https://127.0.0.1:9/hook"
    )
    key = issue_scored_data_key(tenant.account)
    client = APIClient()

    listed = client.get(f"/api/appointments?apikey={key}&date=2026-11-28")
    assert listed.status_code == 200
    (shown,) = listed.json()["appointments"]
    assert shown["id"] == booked.pk
    assert (shown["date"], shown["time"], shown["status"]) == (
        "2026-11-28",
        "10:30",
        "set",
    )
    by_call = client.get(f"/api/appointments?apikey={key}&callId={booked.call_id}")
    assert [a["id"] for a in by_call.json()["appointments"]] == [booked.pk]
    # The day is the account's: 10:30 in Denver is not on the 29th anywhere it counts.
    other_day = client.get(f"/api/appointments?apikey={key}&date=2026-11-29")
    assert other_day.json()["appointments"] == []

    marked = client.post(
        f"/api/appointments/{booked.pk}?apikey={key}",
        {"status": "kept", "note": "Came with his wife."},
        format="json",
    )

    assert marked.status_code == 200, marked.content
    assert marked.json() == {
        "success": True,
        "appointment": {**shown, "status": "kept"},
    }
    change = AppointmentChange.objects.filter(appointment=booked).last()
    assert change is not None
    assert (change.status_to, change.by, change.note) == (
        "kept",
        Actor.INTEGRATOR,
        "Came with his wife.",
    )
    assert WebhookEvent.objects.filter(type="appointment_kept").count() == 1


def test_a_refused_change_is_a_422_and_changes_nothing(tenant, booked):
    key = issue_scored_data_key(tenant.account)
    client = APIClient()
    url = f"/api/appointments/{booked.pk}?apikey={key}"
    client.post(url, {"status": "cancelled"}, format="json")

    refused = client.post(url, {"status": "kept"}, format="json")
    unknown = client.post(url, {"status": "rescheduled"}, format="json")

    assert refused.status_code == 422
    assert refused.json() == {
        "message": "The given data was invalid.",
        "errors": {"status": ["An appointment cancelled cannot become kept."]},
    }
    assert unknown.status_code == 422
    assert list(unknown.json()["errors"]) == ["status"]
    booked.refresh_from_db()
    assert booked.status == Status.CANCELLED
    assert AppointmentChange.objects.filter(appointment=booked).count() == 2


def test_another_accounts_key_finds_nothing_and_a_bad_key_is_refused(
    tenant, other_tenant, booked
):
    foreign = issue_scored_data_key(other_tenant.account)
    sibling = issue_scored_data_key(tenant.other_account)  # same organization
    client = APIClient()

    for key in (foreign, sibling):
        one = client.get(f"/api/appointments/{booked.pk}?apikey={key}")
        assert one.status_code == 404
        assert one.json() == {"success": False, "message": "Appointment not found"}
        mark = client.post(
            f"/api/appointments/{booked.pk}?apikey={key}", {"status": "kept"}
        )
        assert mark.status_code == 404
        listed = client.get(f"/api/appointments?apikey={key}&callId={booked.call_id}")
        assert listed.json()["appointments"] == []
    assert client.get(f"/api/appointments/{booked.pk}?apikey=nope").status_code == 401
    booked.refresh_from_db()
    assert booked.status == Status.SET


def test_a_list_needs_a_call_or_a_day(tenant, booked):
    key = issue_scored_data_key(tenant.account)
    client = APIClient()
    assert client.get(f"/api/appointments?apikey={key}").json() == {
        "success": False,
        "message": "The callId or date parameter is required.",
    }
    bad = client.get(f"/api/appointments?apikey={key}&date=28/11/2026")
    assert bad.status_code == 400
    assert client.get(f"/api/appointments?apikey={key}&callId=x").status_code == 400
