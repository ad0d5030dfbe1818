"""Lead to call with real processes: a Celery worker on Redis runs the pipeline and the
simulator's callbacks while the test posts leads through HTTP."""

import json
from zoneinfo import ZoneInfo

import pytest
from django.urls import reverse
from django.utils import timezone

from calls.models import Call, CallStatus, DialingSettings, Leg
from calls.telephony.simulator import talk_seconds
from config.celery import app
from leads.models import Lead
from tests.accounts.factories import issue_scored_data_key
from tests.calls.harness import dials_of
from tests.leads.factories import ParsingRuleFactory, VendorRegistrationFactory, adf
from tests.processes import service_env, start_worker, wait_for
from tests.users.factories import agent

pytestmark = [pytest.mark.slow, pytest.mark.django_db(transaction=True)]

FINAL = {
    CallStatus.ANSWER,
    CallStatus.NOANSWER,
    CallStatus.BUSY,
    CallStatus.FAILED,
    CallStatus.CANCEL,
    CallStatus.NOAGENT,
}


@pytest.fixture
def dealer(tenant):
    VendorRegistrationFactory(account=tenant.account, vendor_id="V-1000")
    ParsingRuleFactory(account=tenant.account)
    return tenant


@pytest.fixture
def worker(tmp_path):
    app.control.purge()
    process = start_worker(tmp_path, env=service_env())
    yield process
    process.stop()


def post_lead(tenant, **kwargs):
    form = {
        "xml": adf(**kwargs),
        "apiuser": tenant.credential.api_user,
        "apikey": tenant.key,
    }
    response = tenant.client().post("/api/nl", form)
    assert response.status_code == 200, response.json()
    return Lead.objects.get(pk=response.json()["leadId"])


def wait_until_final(*calls, timeout=60):
    ids = [c.pk for c in calls]
    try:
        wait_for(
            lambda: (
                Call.objects.filter(
                    pk__in=ids, status__in=FINAL, ended_at__isnull=False
                ).count()
                == len(ids)
            ),
            timeout=timeout,
            what="calls to end",
        )
    except AssertionError as error:
        state = [
            (
                c.pk,
                c.status,
                [
                    (a.leg, a.outcome, a.ended_at is not None)
                    for a in c.attempts_log.all()
                ],
            )
            for c in Call.objects.filter(pk__in=ids)
        ]
        raise AssertionError(f"{error}: {state}") from None


def test_a_posted_lead_becomes_an_answered_recorded_call(dealer, worker, client):
    taker = agent(dealer.account, phone="+13035550140")

    lead = post_lead(dealer, prospect_id="E2E-1")
    wait_until_final(lead.call)
    wait_for(
        lambda: Call.objects.filter(pk=lead.call_id).exclude(recording_url="").exists(),
        timeout=10,
        what="recording",
    )

    call = Call.objects.get(pk=lead.call_id)
    lead_leg = call.attempts_log.get(leg=Leg.LEAD)
    # Read the finished call as an integrator does: through the scored call data API.
    key = issue_scored_data_key(dealer.account)
    record = client.get("/api/scoreddata", {"apikey": key, "callId": call.pk}).json()
    assert record["id"] == str(call.pk)
    assert record["altid"] == "E2E-1"
    assert record["status"] == "ANSWER"
    assert record["agent"] == taker.get_full_name()
    assert record["callAttempts"] == "1"
    assert record["callDuration"] == str(talk_seconds(lead_leg.pk))
    assert 0 <= int(record["responseTime"]) <= 30
    assert record["scoredFname"] is None, "not scored yet"
    local_day = timezone.localdate(call.received_at, ZoneInfo(dealer.account.timezone))
    in_range = client.get(
        "/api/scoreddata",
        {"apikey": key, "fromDate": str(local_day), "toDate": str(local_day)},
    )
    assert [r["id"] for r in json.loads(b"".join(in_range.streaming_content))] == [
        str(call.pk)
    ]
    assert record["date"] == str(local_day)
    assert record["callRecording"] == call.recording_url
    recording = client.get(
        record["callRecording"].removeprefix("https://leads.example.test")
    )
    assert recording.status_code == 200
    assert recording["Content-Type"] == "audio/wav"
    audio = b"".join(recording.streaming_content)
    assert audio[:4] == b"RIFF"
    # As long as the call: 8 kHz, 16-bit mono after the 44-byte header.
    assert call.duration is not None
    assert len(audio) == 44 + max(call.duration, 3) * 16000
    assert all(dials_of(a.pk) == 1 for a in call.attempts_log.all())


def test_retries_and_refusals_end_in_the_right_status_with_a_real_worker(
    dealer, worker
):
    # The simulator scales its own delays; the account's cadence is real time, so make it brisk.
    DialingSettings.objects.create(
        account=dealer.account, retry_cadence=[0, 0, 0], agent_round_pause_seconds=0
    )
    agent(dealer.account, phone="+13035550003")  # answers, never presses 1
    taker = agent(dealer.account, phone="+13035550141")

    answered = post_lead(dealer, prospect_id="E2E-2")
    wait_until_final(answered.call)
    busy = post_lead(dealer, prospect_id="E2E-3", phone="303-555-0001")
    wait_until_final(busy.call)

    answered_call = Call.objects.get(pk=answered.call_id)
    busy_call = Call.objects.get(pk=busy.call_id)
    assert answered_call.status == CallStatus.ANSWER
    assert answered_call.agent == taker
    assert busy_call.status == CallStatus.BUSY
    assert busy_call.attempts == 3


def test_a_setup_task_delivered_many_times_dials_each_leg_once(dealer, worker):
    from calls.tasks import call_setup_task

    agent(dealer.account, phone="+13035550140")
    lead = post_lead(dealer, prospect_id="E2E-4")
    for _ in range(5):
        call_setup_task.delay(call_id=lead.call_id)
    wait_until_final(lead.call)

    call = Call.objects.get(pk=lead.call_id)
    assert call.status == CallStatus.ANSWER
    assert call.attempts_log.filter(leg=Leg.AGENT).count() == 1
    assert [dials_of(a.pk) for a in call.attempts_log.all()] == [1, 1]


def test_the_recording_link_is_signed(client):
    assert (
        client.get(reverse("calls:recording", kwargs={"token": "1"})).status_code == 404
    )
