"""Twilio's voice callbacks, correctly signed but holding what Twilio never sends: a NUL
in a status, a duration no column holds, a recording URL with a NUL or longer than its
column. Each is refused with a plain 400 before anything is read or written: the call,
its legs and its recording stay as they were."""

from __future__ import annotations

import pytest

from calls.models import Call, CallAttempt, Recording
from calls.recordings import attempt_for_token
from tests.calls.fake_twilio import ACCOUNT_SID
from tests.calls.legs import connected_call
from tests.calls.test_twilio import call_params, callback

pytestmark = [pytest.mark.django_db, pytest.mark.usefixtures("twilio_settings")]

RECORDING_URL = (
    f"https://api.twilio.com/2010-04-01/Accounts/{ACCOUNT_SID}/Recordings/RE{'a' * 32}"
)


def state(call: Call) -> tuple:
    """The call, its legs and its recording, as rows."""
    return (
        Call.objects.filter(pk=call.pk).values().get(),
        list(CallAttempt.objects.filter(call=call).order_by("id").values()),
        list(Recording.objects.filter(call=call).values()),
    )


def recording_params(url: str) -> dict[str, str]:
    return {
        "AccountSid": ACCOUNT_SID,
        "CallSid": "CA" + "f" * 32,
        "RecordingSid": "RE" + "a" * 32,
        "RecordingUrl": url,
        "RecordingStatus": "completed",
        "RecordingDuration": "42",
        "RecordingChannels": "2",
    }


@pytest.mark.parametrize(
    "extra",
    [
        pytest.param({"CallStatus": "completed\x00"}, id="nul-in-status"),
        pytest.param({"CallStatus": "completed" * 5}, id="status-too-long"),
        pytest.param({"CallDuration": "9" * 20}, id="duration-no-column-holds"),
        pytest.param({"CallDuration": "42\x00"}, id="nul-in-duration"),
        pytest.param({"CallDuration": "-42"}, id="negative-duration"),
    ],
)
def test_a_signed_leg_status_twilio_would_never_send_is_refused_and_changes_nothing(
    client, extra
):
    call, _, lead_leg = connected_call()
    before = state(call)
    params = {**call_params(lead_leg, "completed", CallDuration="42"), **extra}

    response = callback(client, f"/calls/twilio/lead/{lead_leg.pk}/status", params)

    assert (response.status_code, response.content) == (400, b"")
    assert state(call) == before


@pytest.mark.parametrize(
    "url",
    [
        pytest.param(RECORDING_URL + "\x00", id="nul-in-url"),
        pytest.param(RECORDING_URL + "/" + "a" * 500, id="longer-than-its-column"),
        pytest.param("file:///etc/passwd", id="not-a-web-address"),
    ],
)
def test_a_signed_recording_twilio_would_never_send_is_refused_and_stores_nothing(
    client, url
):
    call, _, lead_leg = connected_call()
    before = state(call)

    response = callback(
        client,
        f"/calls/twilio/lead/{lead_leg.pk}/recording",
        recording_params(url),
    )

    assert (response.status_code, response.content) == (400, b"")
    assert state(call) == before


def test_a_signed_key_press_twilio_would_never_send_is_refused(client):
    call, agent_leg, _ = connected_call()
    CallAttempt.objects.filter(pk=agent_leg.pk).update(outcome="")
    before = state(call)
    params = call_params(agent_leg, "in-progress", Digits="1\x00")

    response = callback(client, f"/calls/twilio/agent/{agent_leg.pk}/gather", params)

    assert (response.status_code, response.content) == (400, b"")
    assert state(call) == before


def test_a_recording_twilio_sends_is_still_stored(client):
    call, _, lead_leg = connected_call()

    response = callback(
        client,
        f"/calls/twilio/lead/{lead_leg.pk}/recording",
        recording_params(RECORDING_URL),
    )

    assert (response.status_code, response.content) == (204, b"")
    call.refresh_from_db()
    assert call.recording_url.endswith(".wav")  # the service's own signed link
    token = call.recording_url.removesuffix(".wav").rsplit("/", 1)[-1]
    assert attempt_for_token(token) == lead_leg.pk
    assert Recording.objects.get(call=call).source_url == RECORDING_URL + ".wav"
