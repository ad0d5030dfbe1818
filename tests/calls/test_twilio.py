"""The Twilio provider and its webhooks, end to end and offline.

The official library sends its real requests to a local fake of Twilio's REST API
(``fake_twilio``); Twilio's callbacks are posted back, signed with the auth token the way
Twilio signs them, to the webhook views, and the TwiML they answer is compared whole.
"""

from __future__ import annotations

import socket
from datetime import timedelta
from typing import Any
from urllib.parse import urlencode

import pytest
from django.test import Client
from django.utils import timezone
from lxml import etree
from twilio.base.exceptions import TwilioRestException
from twilio.http.http_client import TwilioHttpClient
from twilio.request_validator import RequestValidator

from calls import services
from calls.models import (
    AttemptOutcome,
    Call,
    CallAttempt,
    CallStatus,
    DialingSettings,
    Leg,
    RingMode,
)
from calls.pipeline import broker
from calls.recordings import attempt_for_token
from providers import telephony_named
from providers.telephony import AgentDial, EventKind, LegStatus, TelephonyUnavailable
from providers.twilio import RoutedHttpClient, TwilioProvider
from tests.accounts.factories import AccountFactory
from tests.calls.fake_twilio import ACCOUNT_SID, AUTH_TOKEN, BASE
from tests.users.factories import agent

pytestmark = [
    pytest.mark.django_db,
    pytest.mark.urls("tests.calls.twilio_urls"),
    pytest.mark.usefixtures("twilio_settings"),
]

CALLER_ID = "+13035550199"
LEAD = "+13035557777"
FIRST, SECOND = "+13035551001", "+13035551002"
WHISPER = "Sales lead. Jane Doe, new 2025 Honda Civic."
PROMPT = f"{WHISPER} Press 1 to be connected."


# --- fixtures and helpers -----------------------------------------------------------------------


class Tasks:
    """What the pipeline hands to Celery, recorded instead of sent: tests run services directly."""

    def __init__(self) -> None:
        self.dispatched: list[int] = []
        self.dials: list[int] = []


@pytest.fixture
def tasks(monkeypatch) -> Tasks:
    recorded = Tasks()
    monkeypatch.setattr(
        broker,
        "dispatch_setup",
        lambda call_id, at=None, **_: recorded.dispatched.append(call_id),
    )
    monkeypatch.setattr(
        broker,
        "dispatch_dial",
        lambda attempt_id, **_: recorded.dials.append(attempt_id),
    )
    return recorded


@pytest.fixture
def account():
    return AccountFactory(caller_id=CALLER_ID, timezone="America/Denver")


@pytest.fixture
def start(account, tasks, django_capture_on_commit_callbacks):
    """Queue a lead's call (its setup task is captured on commit, not run) and set it up."""

    def start_call(**kwargs: Any) -> Call:
        with django_capture_on_commit_callbacks() as callbacks:
            call = services.call_queue(
                account=account,
                phone=LEAD,
                received_at=timezone.now() - timedelta(seconds=5),
                whisper=WHISPER,
                **kwargs,
            )
        assert len(callbacks) == 1  # call_setup_task, enqueued on commit
        services.call_setup(call_id=call.pk)
        return call

    return start_call


def sign(url: str, params: dict[str, str], token: str = AUTH_TOKEN) -> str:
    return RequestValidator(token).compute_signature(url, params)


def callback(
    client,
    path: str,
    params: dict[str, str],
    *,
    signature: str | None = None,
    signed_params=None,
    signed_url=None,
):
    """POST a form-encoded callback as Twilio does, signed for the public URL unless told otherwise."""
    if signature is None:
        signature = sign(
            signed_url or BASE + path,
            signed_params if signed_params is not None else params,
        )
    headers = {"HTTP_X_TWILIO_SIGNATURE": signature} if signature else {}
    return client.post(
        path,
        urlencode(params),
        content_type="application/x-www-form-urlencoded",
        **headers,
    )


def call_params(attempt: CallAttempt, status: str, **extra: str) -> dict[str, str]:
    """The parameters Twilio posts about a leg."""
    return {
        "AccountSid": ACCOUNT_SID,
        "ApiVersion": "2010-04-01",
        "CallSid": attempt.provider_id or "CA" + "f" * 32,
        "CallStatus": status,
        "Direction": "outbound-api",
        "From": CALLER_ID,
        "To": attempt.number,
        **extra,
    }


# A TwiML element as nested (tag, attributes, text, children).
TwiML = tuple[str, dict[str, str], str | None, list["TwiML"]]


def twiml(response) -> TwiML:
    """A TwiML response as nested (tag, attributes, text, children)."""
    assert response.status_code == 200, response.content
    assert response["Content-Type"] == "text/xml"
    assert response.content.startswith(b'<?xml version="1.0" encoding="UTF-8"?>')
    return _node(etree.fromstring(response.content))


def _node(element: etree._Element) -> TwiML:
    return (
        element.tag,
        dict(element.attrib),
        (element.text or "").strip() or None,
        [_node(child) for child in element],
    )


HANGUP: TwiML = ("Response", {}, None, [("Hangup", {}, None, [])])


def gather_twiml(attempt_id: int, say: str = PROMPT) -> TwiML:
    return (
        "Response",
        {},
        None,
        [
            (
                "Gather",
                {
                    "numDigits": "1",
                    "action": f"{BASE}/calls/twilio/agent/{attempt_id}/gather",
                    "method": "POST",
                    "timeout": "8",
                },
                None,
                [("Say", {}, say, [])],
            ),
            ("Say", {}, "No key was pressed. Goodbye.", []),
            ("Hangup", {}, None, []),
        ],
    )


def dial_twiml(
    agent_attempt_id: int, lead_attempt_id: int, say: str | None = None
) -> TwiML:
    dial: TwiML = (
        "Dial",
        {
            "callerId": CALLER_ID,
            "record": "record-from-answer-dual",
            "recordingStatusCallback": f"{BASE}/calls/twilio/lead/{lead_attempt_id}/recording",
            "recordingStatusCallbackEvent": "completed",
            "action": f"{BASE}/calls/twilio/agent/{agent_attempt_id}/dial-action",
            "timeout": "30",
        },
        None,
        [
            (
                "Number",
                {
                    "statusCallback": f"{BASE}/calls/twilio/lead/{lead_attempt_id}/status",
                    "statusCallbackEvent": "initiated ringing answered completed",
                },
                LEAD,
                [],
            )
        ],
    )
    return ("Response", {}, None, [*([("Say", {}, say, [])] if say else []), dial])


def legs(call: Call, leg: str) -> list[CallAttempt]:
    return list(CallAttempt.objects.filter(call=call, leg=leg).order_by("id"))


def snapshot(call: Call) -> tuple:
    return (
        Call.objects.filter(pk=call.pk).values().get(),
        list(CallAttempt.objects.filter(call=call).order_by("id").values()),
    )


def connect(client, call: Call) -> tuple[CallAttempt, CallAttempt]:
    """The first agent answers and presses 1; returns the agent's and the lead's legs."""
    (agent_leg,) = legs(call, Leg.AGENT)
    twiml(
        callback(
            client,
            f"/calls/twilio/agent/{agent_leg.pk}/answer",
            call_params(agent_leg, "in-progress"),
        )
    )
    params = call_params(agent_leg, "in-progress", Digits="1", FinishedOnKey="")
    twiml(callback(client, f"/calls/twilio/agent/{agent_leg.pk}/gather", params))
    (lead_leg,) = legs(call, Leg.LEAD)
    return agent_leg, lead_leg


def talk(client, call: Call, lead_leg: CallAttempt, seconds: int = 42) -> None:
    """The lead answers, talks, hangs up; the recording arrives."""
    path = f"/calls/twilio/lead/{lead_leg.pk}/status"
    callback(client, path, call_params(lead_leg, "in-progress", CallDuration="0"))
    callback(
        client, path, call_params(lead_leg, "completed", CallDuration=str(seconds))
    )


# --- the whole flow -----------------------------------------------------------------------------


def test_a_call_rings_the_agent_through_twilio_whispers_bridges_and_records(
    client, start, account, fake_twilio, tasks
):
    taker = agent(account, phone=FIRST)

    call = start()

    (agent_leg,) = legs(call, Leg.AGENT)
    (request,) = fake_twilio.requests
    assert (request.method, request.path, request.auth) == (
        "POST",
        f"/2010-04-01/Accounts/{ACCOUNT_SID}/Calls.json",
        (ACCOUNT_SID, AUTH_TOKEN),
    )
    assert request.headers["Content-Type"] == "application/x-www-form-urlencoded"
    assert request.headers["User-Agent"].startswith("twilio-python/9.")
    assert request.form == {
        "To": [FIRST],
        "From": [CALLER_ID],
        "Url": [f"{BASE}/calls/twilio/agent/{agent_leg.pk}/answer"],
        "Method": ["POST"],
        "StatusCallback": [f"{BASE}/calls/twilio/agent/{agent_leg.pk}/status"],
        "StatusCallbackEvent": ["initiated", "ringing", "answered", "completed"],
        "StatusCallbackMethod": ["POST"],
        "Timeout": ["20"],
    }
    (sid,) = fake_twilio.calls
    assert sid.startswith("CA")
    assert (agent_leg.provider, agent_leg.provider_id, agent_leg.number) == (
        "twilio",
        sid,
        FIRST,
    )
    call.refresh_from_db()
    assert call.status == CallStatus.DIALING

    status_path = f"/calls/twilio/agent/{agent_leg.pk}/status"
    for status in ("queued", "initiated"):
        assert (
            callback(client, status_path, call_params(agent_leg, status)).status_code
            == 204
        )
    response = callback(client, status_path, call_params(agent_leg, "ringing"))
    assert (response.status_code, response.content) == (204, b"")
    agent_leg.refresh_from_db()
    assert agent_leg.ringing_at is not None
    assert agent_leg.answered_at is None

    response = callback(
        client,
        f"/calls/twilio/agent/{agent_leg.pk}/answer",
        call_params(agent_leg, "in-progress"),
    )
    assert twiml(response) == gather_twiml(agent_leg.pk)
    assert (
        callback(client, status_path, call_params(agent_leg, "in-progress")).status_code
        == 204
    )

    response = callback(
        client,
        f"/calls/twilio/agent/{agent_leg.pk}/gather",
        call_params(agent_leg, "in-progress", Digits="1"),
    )
    (lead_leg,) = legs(call, Leg.LEAD)
    assert twiml(response) == dial_twiml(agent_leg.pk, lead_leg.pk)
    call.refresh_from_db()
    assert (call.agent, call.attempts, call.status) == (taker, 1, CallStatus.DIALING)

    lead_path = f"/calls/twilio/lead/{lead_leg.pk}/status"
    lead_params = {
        **call_params(lead_leg, "initiated"),
        "ParentCallSid": sid,
        "Direction": "outbound-dial",
    }
    assert callback(client, lead_path, lead_params).status_code == 204
    assert (
        callback(
            client, lead_path, {**lead_params, "CallStatus": "ringing"}
        ).status_code
        == 204
    )
    assert (
        callback(
            client, lead_path, {**lead_params, "CallStatus": "in-progress"}
        ).status_code
        == 204
    )
    call.refresh_from_db()
    lead_leg.refresh_from_db()
    assert call.status == CallStatus.ANSWER
    assert lead_leg.ringing_at is not None
    assert lead_leg.answered_at is not None
    assert call.response_time == int(
        (lead_leg.answered_at - call.received_at).total_seconds()
    )
    assert call.response_time >= 5

    completed = {**lead_params, "CallStatus": "completed", "CallDuration": "42"}
    assert callback(client, lead_path, completed).status_code == 204
    call.refresh_from_db()
    lead_leg.refresh_from_db()
    assert (call.status, call.duration) == (CallStatus.ANSWER, 42)
    assert (lead_leg.outcome, lead_leg.duration) == (AttemptOutcome.ANSWERED, 42)
    assert call.ended_at is not None

    dial_action = call_params(
        agent_leg,
        "in-progress",
        DialCallSid="CA" + "1" * 32,
        DialCallStatus="completed",
        DialCallDuration="42",
    )
    assert (
        twiml(
            callback(
                client, f"/calls/twilio/agent/{agent_leg.pk}/dial-action", dial_action
            )
        )
        == HANGUP
    )
    assert (
        callback(
            client, status_path, call_params(agent_leg, "completed", CallDuration="61")
        ).status_code
        == 204
    )
    agent_leg.refresh_from_db()
    assert (agent_leg.outcome, agent_leg.key_pressed, agent_leg.duration) == (
        AttemptOutcome.ACCEPTED,
        "1",
        61,
    )
    assert agent_leg.ended_at is not None

    recording = f"https://api.twilio.com/2010-04-01/Accounts/{ACCOUNT_SID}/Recordings/RE{'a' * 32}"
    recording_params = {
        "AccountSid": ACCOUNT_SID,
        "CallSid": sid,
        "RecordingSid": "RE" + "a" * 32,
        "RecordingUrl": recording,
        "RecordingStatus": "completed",
        "RecordingDuration": "42",
        "RecordingChannels": "2",
        "RecordingSource": "DialVerb",
        "RecordingStartTime": "Mon, 22 Aug 2026 17:55:40 +0000",
    }
    response = callback(
        client, f"/calls/twilio/lead/{lead_leg.pk}/recording", recording_params
    )
    assert (response.status_code, response.content) == (204, b"")
    call.refresh_from_db()
    # The service's own signed link, never Twilio's (which needs the account's key):
    # while the copy is being fetched it answers "being stored", never a stand-in.
    assert call.recording_url.startswith(BASE)
    assert call.recording_url.endswith(".wav")
    token = call.recording_url.removesuffix(".wav").rsplit("/", 1)[-1]
    assert attempt_for_token(token) == lead_leg.pk
    waiting = client.get(call.recording_url.removeprefix(BASE))
    assert (waiting.status_code, waiting["Retry-After"]) == (503, "30")
    assert (call.status, call.duration) == (CallStatus.ANSWER, 42)

    # One agent: nothing else was dialed or hung up, and nothing was handed to a worker.
    assert len(fake_twilio.requests) == 1
    assert tasks.dials == []


def test_without_press_one_answering_says_the_whisper_and_dials_the_lead(
    client, start, account
):
    DialingSettings.objects.create(account=account, press_one_required=False)
    agent(account, phone=FIRST)
    call = start()
    (agent_leg,) = legs(call, Leg.AGENT)

    response = callback(
        client,
        f"/calls/twilio/agent/{agent_leg.pk}/answer",
        call_params(agent_leg, "in-progress"),
    )

    (lead_leg,) = legs(call, Leg.LEAD)
    assert twiml(response) == dial_twiml(agent_leg.pk, lead_leg.pk, say=WHISPER)


def test_duplicate_and_late_callbacks_change_nothing(client, start, account):
    agent(account, phone=FIRST)
    call = start()
    agent_leg, lead_leg = connect(client, call)
    talk(client, call, lead_leg, seconds=42)
    callback(
        client,
        f"/calls/twilio/agent/{agent_leg.pk}/status",
        call_params(agent_leg, "completed", CallDuration="50"),
    )
    recording = {
        "RecordingUrl": "https://api.twilio.com/rec/RE1",
        "RecordingStatus": "completed",
    }
    callback(client, f"/calls/twilio/lead/{lead_leg.pk}/recording", recording)
    before = snapshot(call)
    first_link = Call.objects.get(pk=call.pk).recording_url

    lead_path = f"/calls/twilio/lead/{lead_leg.pk}/status"
    agent_path = f"/calls/twilio/agent/{agent_leg.pk}/status"
    responses = [
        callback(
            client, lead_path, call_params(lead_leg, "completed", CallDuration="99")
        ),
        callback(
            client, lead_path, call_params(lead_leg, "completed", CallDuration="42")
        ),
        callback(client, lead_path, call_params(lead_leg, "ringing")),
        callback(client, lead_path, call_params(lead_leg, "in-progress")),
        callback(client, lead_path, call_params(lead_leg, "no-answer")),
        callback(
            client, agent_path, call_params(agent_leg, "completed", CallDuration="70")
        ),
        callback(client, agent_path, call_params(agent_leg, "ringing")),
        callback(client, agent_path, call_params(agent_leg, "busy")),
        callback(
            client,
            f"/calls/twilio/lead/{lead_leg.pk}/recording",
            {**recording, "RecordingUrl": "https://api.twilio.com/rec/RE2"},
        ),
    ]

    assert [r.status_code for r in responses] == [204] * len(responses)
    assert snapshot(call) == before
    call.refresh_from_db()
    assert (call.status, call.duration, call.recording_url) == (
        CallStatus.ANSWER,
        42,
        first_link,
    )
    # A late answer or key press on the ended agent leg only hangs it up.
    assert (
        twiml(
            callback(
                client,
                f"/calls/twilio/agent/{agent_leg.pk}/answer",
                call_params(agent_leg, "in-progress"),
            )
        )
        == HANGUP
    )
    gather = call_params(agent_leg, "in-progress", Digits="1")
    assert (
        twiml(callback(client, f"/calls/twilio/agent/{agent_leg.pk}/gather", gather))
        == HANGUP
    )
    assert snapshot(call) == before


def test_a_completed_lead_leg_that_never_reported_its_answer_still_answers_the_call(
    client, start, account
):
    agent(account, phone=FIRST)
    call = start()
    _, lead_leg = connect(client, call)

    callback(
        client,
        f"/calls/twilio/lead/{lead_leg.pk}/status",
        call_params(lead_leg, "completed", CallDuration="42"),
    )

    call.refresh_from_db()
    assert (call.status, call.duration) == (CallStatus.ANSWER, 42)
    assert call.response_time is not None


# --- agents who do not take the call --------------------------------------------------------------


def test_pressing_2_refuses_and_the_next_agent_is_rung(
    client, start, account, fake_twilio, tasks
):
    agent(account, phone=FIRST)
    agent(account, phone=SECOND)
    call = start()
    (first_leg,) = legs(call, Leg.AGENT)
    assert first_leg.number == FIRST  # sequential: one agent at a time
    callback(
        client,
        f"/calls/twilio/agent/{first_leg.pk}/answer",
        call_params(first_leg, "in-progress"),
    )

    response = callback(
        client,
        f"/calls/twilio/agent/{first_leg.pk}/gather",
        call_params(first_leg, "in-progress", Digits="2"),
    )

    assert twiml(response) == HANGUP
    first_leg.refresh_from_db()
    assert (first_leg.outcome, first_leg.ended_at is not None) == (
        AttemptOutcome.REFUSED,
        True,
    )
    _, second_leg = legs(call, Leg.AGENT)
    assert second_leg.number == SECOND
    assert tasks.dials == [second_leg.pk]
    assert legs(call, Leg.LEAD) == []

    services.attempt_dial(attempt_id=second_leg.pk)  # what attempt_dial_task runs

    assert [r.form["To"] for r in fake_twilio.requests] == [[FIRST], [SECOND]]
    assert (
        fake_twilio.requests[1].one("Url")
        == f"{BASE}/calls/twilio/agent/{second_leg.pk}/answer"
    )
    # The refusing agent's hang-up arrives afterwards and changes nothing.
    before = snapshot(call)
    callback(
        client,
        f"/calls/twilio/agent/{first_leg.pk}/status",
        call_params(first_leg, "completed", CallDuration="9"),
    )
    assert snapshot(call) == before


def test_pressing_2_with_nobody_else_ends_the_round(
    client, start, account, tasks, django_capture_on_commit_callbacks
):
    agent(account, phone=FIRST)
    call = start()
    (agent_leg,) = legs(call, Leg.AGENT)
    callback(
        client,
        f"/calls/twilio/agent/{agent_leg.pk}/answer",
        call_params(agent_leg, "in-progress"),
    )

    with django_capture_on_commit_callbacks(execute=True):
        response = callback(
            client,
            f"/calls/twilio/agent/{agent_leg.pk}/gather",
            call_params(agent_leg, "in-progress", Digits="2"),
        )

    assert twiml(response) == HANGUP
    call.refresh_from_db()
    assert (call.status, call.unanswered_rounds, call.agent) == (
        CallStatus.QUEUED,
        1,
        None,
    )
    assert call.next_attempt_at is not None
    assert tasks.dispatched == [call.pk]


def test_no_key_pressed_refuses_when_the_agent_hangs_up(client, start, account, tasks):
    agent(account, phone=FIRST)
    agent(account, phone=SECOND)
    call = start()
    (first_leg,) = legs(call, Leg.AGENT)
    callback(
        client,
        f"/calls/twilio/agent/{first_leg.pk}/answer",
        call_params(first_leg, "in-progress"),
    )

    callback(
        client,
        f"/calls/twilio/agent/{first_leg.pk}/status",
        call_params(first_leg, "completed", CallDuration="14"),
    )

    first_leg.refresh_from_db()
    assert (first_leg.outcome, first_leg.duration) == (AttemptOutcome.REFUSED, 14)
    _, second_leg = legs(call, Leg.AGENT)
    assert tasks.dials == [second_leg.pk]


@pytest.mark.parametrize(
    ("status", "outcome"),
    [
        ("busy", AttemptOutcome.BUSY),
        ("no-answer", AttemptOutcome.NOANSWER),
        ("failed", AttemptOutcome.FAILED),
        ("canceled", AttemptOutcome.NOANSWER),
    ],
)
def test_an_agent_leg_that_is_not_answered_moves_on_to_the_next_agent(
    client, start, account, fake_twilio, tasks, status, outcome
):
    agent(account, phone=FIRST)
    agent(account, phone=SECOND)
    call = start()
    (first_leg,) = legs(call, Leg.AGENT)
    callback(
        client,
        f"/calls/twilio/agent/{first_leg.pk}/status",
        call_params(first_leg, "ringing"),
    )

    response = callback(
        client,
        f"/calls/twilio/agent/{first_leg.pk}/status",
        call_params(first_leg, status, CallDuration="0"),
    )

    assert response.status_code == 204
    first_leg.refresh_from_db()
    assert first_leg.outcome == outcome
    assert first_leg.ended_at is not None
    _, second_leg = legs(call, Leg.AGENT)
    assert tasks.dials == [second_leg.pk]
    services.attempt_dial(attempt_id=second_leg.pk)
    assert fake_twilio.requests[-1].one("To") == SECOND
    call.refresh_from_db()
    assert call.status == CallStatus.DIALING


def test_simultaneous_ringing_hangs_up_the_other_agents_through_twilio(
    client, start, account, fake_twilio
):
    DialingSettings.objects.create(account=account, ring_mode=RingMode.SIMULTANEOUS)
    agent(account, phone=FIRST)
    agent(account, phone=SECOND)
    call = start()
    first_leg, second_leg = legs(call, Leg.AGENT)
    assert [r.one("To") for r in fake_twilio.requests] == [
        first_leg.number,
        second_leg.number,
    ]

    callback(
        client,
        f"/calls/twilio/agent/{first_leg.pk}/answer",
        call_params(first_leg, "in-progress"),
    )
    response = callback(
        client,
        f"/calls/twilio/agent/{first_leg.pk}/gather",
        call_params(first_leg, "in-progress", Digits="1"),
    )

    (lead_leg,) = legs(call, Leg.LEAD)
    assert twiml(response) == dial_twiml(first_leg.pk, lead_leg.pk)
    hangup = fake_twilio.requests[-1]
    assert (hangup.method, hangup.path, hangup.auth, hangup.form) == (
        "POST",
        f"/2010-04-01/Accounts/{ACCOUNT_SID}/Calls/{second_leg.provider_id}.json",
        (ACCOUNT_SID, AUTH_TOKEN),
        {"Status": ["completed"]},
    )
    second_leg.refresh_from_db()
    assert second_leg.outcome == AttemptOutcome.CANCELED
    # If the other agent picks up before Twilio drops the leg, they are told and hung up.
    response = callback(
        client,
        f"/calls/twilio/agent/{second_leg.pk}/answer",
        call_params(second_leg, "in-progress"),
    )
    assert twiml(response) == HANGUP


@pytest.mark.parametrize(
    ("status", "outcome"),
    [
        ("no-answer", "noanswer"),
        ("busy", "busy"),
        ("failed", "failed"),
        ("canceled", "noanswer"),
    ],
)
def test_a_lead_who_does_not_answer_ends_the_agent_leg_and_requeues(
    client,
    start,
    account,
    fake_twilio,
    tasks,
    django_capture_on_commit_callbacks,
    status,
    outcome,
):
    agent(account, phone=FIRST)
    call = start()
    agent_leg, lead_leg = connect(client, call)
    callback(
        client,
        f"/calls/twilio/lead/{lead_leg.pk}/status",
        call_params(lead_leg, "ringing"),
    )

    with django_capture_on_commit_callbacks(execute=True):
        response = callback(
            client,
            f"/calls/twilio/lead/{lead_leg.pk}/status",
            call_params(lead_leg, status, CallDuration="0"),
        )

    assert response.status_code == 204
    lead_leg.refresh_from_db()
    assert lead_leg.outcome == outcome
    assert fake_twilio.requests[-1].path.endswith(
        f"/Calls/{agent_leg.provider_id}.json"
    )
    assert fake_twilio.requests[-1].form == {"Status": ["completed"]}
    call.refresh_from_db()
    assert (call.status, call.attempts, call.agent) == (CallStatus.QUEUED, 1, None)
    assert tasks.dispatched == [call.pk]


# --- signatures -------------------------------------------------------------------------------------


@pytest.fixture
def ringing(start, account):
    agent(account, phone=FIRST)
    call = start()
    (agent_leg,) = legs(call, Leg.AGENT)
    return call, agent_leg


def test_an_unsigned_callback_is_refused_and_changes_nothing(client, ringing):
    call, agent_leg = ringing
    before = snapshot(call)

    status = callback(
        client,
        f"/calls/twilio/agent/{agent_leg.pk}/status",
        call_params(agent_leg, "busy"),
        signature="",
    )
    answer = callback(
        client,
        f"/calls/twilio/agent/{agent_leg.pk}/answer",
        call_params(agent_leg, "in-progress"),
        signature="",
    )

    assert (status.status_code, answer.status_code) == (403, 403)
    assert snapshot(call) == before


def test_a_callback_with_tampered_parameters_is_refused(client, ringing):
    call, agent_leg = ringing
    before = snapshot(call)
    path = f"/calls/twilio/agent/{agent_leg.pk}/status"

    response = callback(
        client,
        path,
        call_params(agent_leg, "busy"),
        signed_params=call_params(agent_leg, "ringing"),
    )
    added = callback(
        client,
        path,
        {**call_params(agent_leg, "ringing"), "CallDuration": "5"},
        signed_params=call_params(agent_leg, "ringing"),
    )

    assert (response.status_code, added.status_code) == (403, 403)
    assert snapshot(call) == before


def test_a_signature_for_another_url_is_refused(client, ringing, account):
    call, agent_leg = ringing
    before = snapshot(call)
    path = f"/calls/twilio/agent/{agent_leg.pk}/status"
    params = call_params(agent_leg, "busy")

    other_attempt = callback(
        client,
        path,
        params,
        signed_url=f"{BASE}/calls/twilio/agent/{agent_leg.pk + 1}/status",
    )
    other_hook = callback(
        client,
        path,
        params,
        signed_url=f"{BASE}/calls/twilio/lead/{agent_leg.pk}/status",
    )
    internal_host = callback(
        client, path, params, signed_url=f"http://testserver{path}"
    )

    assert [r.status_code for r in (other_attempt, other_hook, internal_host)] == [
        403,
        403,
        403,
    ]
    assert snapshot(call) == before


def test_a_signature_made_with_another_token_is_refused(client, ringing):
    call, agent_leg = ringing
    before = snapshot(call)
    path = f"/calls/twilio/agent/{agent_leg.pk}/status"
    params = call_params(agent_leg, "busy")

    response = callback(
        client,
        path,
        params,
        signature=sign(BASE + path, params, token="another-accounts-auth-token"),
    )

    assert response.status_code == 403
    assert snapshot(call) == before


def test_a_signature_is_refused_when_no_auth_token_is_configured(
    client, ringing, settings
):
    _, agent_leg = ringing
    path = f"/calls/twilio/agent/{agent_leg.pk}/status"
    params = call_params(agent_leg, "busy")
    settings.TWILIO_AUTH_TOKEN = ""

    response = callback(
        client, path, params, signature=sign(BASE + path, params, token="")
    )

    assert response.status_code == 403


def test_a_signed_callback_with_the_port_twilio_may_add_is_accepted(client, ringing):
    _, agent_leg = ringing
    path = f"/calls/twilio/agent/{agent_leg.pk}/status"

    response = callback(
        client, path, call_params(agent_leg, "ringing"), signed_url=f"{BASE}:443{path}"
    )

    assert response.status_code == 204


def test_unknown_attempts_are_not_found_but_only_once_signed(client, ringing):
    _, agent_leg = ringing
    missing = agent_leg.pk + 1000
    paths = [
        f"/calls/twilio/agent/{missing}/answer",
        f"/calls/twilio/agent/{missing}/gather",
        f"/calls/twilio/agent/{missing}/status",
        f"/calls/twilio/agent/{missing}/dial-action",
        f"/calls/twilio/lead/{missing}/status",
        f"/calls/twilio/lead/{missing}/recording",
        f"/calls/twilio/lead/{agent_leg.pk}/status",  # an agent's leg is no lead's leg
    ]
    params = call_params(agent_leg, "ringing")

    assert [
        callback(client, path, params, signature="").status_code for path in paths
    ] == [403] * len(paths)
    assert [callback(client, path, params).status_code for path in paths] == [
        404
    ] * len(paths)


def test_callbacks_need_no_csrf_token(ringing):
    _, agent_leg = ringing
    twilio = Client(enforce_csrf_checks=True)

    response = callback(
        twilio,
        f"/calls/twilio/agent/{agent_leg.pk}/status",
        call_params(agent_leg, "ringing"),
    )

    assert response.status_code == 204
    agent_leg.refresh_from_db()
    assert agent_leg.ringing_at is not None


def test_webhooks_accept_post_only(client, ringing):
    _, agent_leg = ringing
    path = f"/calls/twilio/agent/{agent_leg.pk}/answer"

    response = client.get(path, HTTP_X_TWILIO_SIGNATURE=sign(BASE + path, {}))

    assert response.status_code == 405


def test_unknown_statuses_and_unfinished_recordings_change_nothing(
    client, start, account
):
    agent(account, phone=FIRST)
    call = start()
    agent_leg, lead_leg = connect(client, call)
    before = snapshot(call)
    recording = f"/calls/twilio/lead/{lead_leg.pk}/recording"

    responses = [
        callback(
            client,
            f"/calls/twilio/agent/{agent_leg.pk}/status",
            call_params(agent_leg, "paused"),
        ),
        callback(
            client,
            f"/calls/twilio/agent/{agent_leg.pk}/status",
            {"AccountSid": ACCOUNT_SID},
        ),
        callback(
            client,
            f"/calls/twilio/lead/{lead_leg.pk}/status",
            call_params(lead_leg, "queued"),
        ),
        callback(
            client,
            recording,
            {
                "RecordingUrl": "https://api.twilio.com/rec/RE1",
                "RecordingStatus": "in-progress",
            },
        ),
        callback(
            client,
            recording,
            {
                "RecordingUrl": "https://api.twilio.com/rec/RE1",
                "RecordingStatus": "absent",
            },
        ),
        callback(client, recording, {"RecordingStatus": "completed"}),
    ]

    assert [r.status_code for r in responses] == [204] * len(responses)
    assert snapshot(call) == before


# --- the provider ---------------------------------------------------------------------------------


def test_the_twilio_provider_is_registered_as_twilio():
    provider = telephony_named("twilio")

    assert isinstance(provider, TwilioProvider)
    assert provider.name == "twilio"


def dial(number: str = FIRST) -> AgentDial:
    return AgentDial(attempt_id=7, number=number, caller_id=CALLER_ID, ring_seconds=25)


def test_an_invalid_number_is_refused_with_twilios_error(fake_twilio):
    with pytest.raises(TwilioRestException) as refused:
        TwilioProvider().dial_agent(dial("555-0100"))

    assert (refused.value.status, refused.value.code) == (400, 21211)
    assert fake_twilio.requests[0].form["Timeout"] == ["25"]


def test_a_refused_dial_ends_the_agent_leg_as_failed(
    client, start, account, fake_twilio, tasks
):
    agent(account, phone="3035551001")  # not E.164: Twilio answers 400, code 21211
    agent(account, phone=SECOND)

    call = start()

    first_leg, second_leg = legs(call, Leg.AGENT)
    assert (first_leg.outcome, first_leg.provider_id) == (AttemptOutcome.FAILED, "")
    assert tasks.dials == [second_leg.pk]


@pytest.mark.parametrize("status", [500, 503, 429])
def test_a_twilio_outage_is_telephony_unavailable(fake_twilio, status):
    fake_twilio.fail_next(status, code=20500 if status != 429 else 20429)

    with pytest.raises(TelephonyUnavailable):
        TwilioProvider().dial_agent(dial())


def test_an_unreachable_twilio_is_telephony_unavailable(settings):
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port = sock.getsockname()[1]
    settings.TWILIO_API_BASE_URL = f"http://127.0.0.1:{port}"

    with pytest.raises(TelephonyUnavailable):
        TwilioProvider().dial_agent(dial())


def test_a_dial_during_an_outage_is_retried_later_and_never_marked(
    start, account, fake_twilio, tasks
):
    agent(account, phone=FIRST)
    fake_twilio.fail_next(503)

    call = start()

    (agent_leg,) = legs(call, Leg.AGENT)
    assert (agent_leg.dial_requested_at, agent_leg.provider_id, agent_leg.outcome) == (
        None,
        "",
        "",
    )
    assert tasks.dials == [agent_leg.pk]

    services.attempt_dial(
        attempt_id=agent_leg.pk
    )  # the task's retry, once Twilio is back

    agent_leg.refresh_from_db()
    assert agent_leg.provider_id in fake_twilio.calls
    assert [r.one("To") for r in fake_twilio.requests] == [FIRST, FIRST]


def test_hangup_ends_the_leg_and_tolerates_one_that_already_ended(fake_twilio):
    provider = TwilioProvider()
    sid = provider.dial_agent(dial())

    provider.hangup(provider_id=sid, attempt_id=7)
    provider.hangup(provider_id="CA" + "0" * 32, attempt_id=8)  # unknown to Twilio: 404
    provider.hangup(provider_id="", attempt_id=9)  # never got a sid: nothing to ask

    assert fake_twilio.calls[sid]["status"] == "completed"
    assert [(r.path, r.form) for r in fake_twilio.requests[1:]] == [
        (
            f"/2010-04-01/Accounts/{ACCOUNT_SID}/Calls/{sid}.json",
            {"Status": ["completed"]},
        ),
        (
            f"/2010-04-01/Accounts/{ACCOUNT_SID}/Calls/CA{'0' * 32}.json",
            {"Status": ["completed"]},
        ),
    ]


def test_hangup_during_an_outage_does_not_raise(fake_twilio):
    fake_twilio.fail_next(503)

    TwilioProvider().hangup(provider_id="CA" + "1" * 32, attempt_id=7)

    assert len(fake_twilio.requests) == 1


@pytest.mark.parametrize(
    ("base_url", "sent_to"),
    [
        ("", "https://api.twilio.com/2010-04-01/Accounts/AC1/Calls.json"),
        (
            "http://127.0.0.1:9/",
            "http://127.0.0.1:9/2010-04-01/Accounts/AC1/Calls.json",
        ),
    ],
)
def test_only_the_host_of_twilios_api_is_swapped(monkeypatch, base_url, sent_to):
    sent = []
    monkeypatch.setattr(
        TwilioHttpClient,
        "request",
        lambda self, method, url, *a, **kw: sent.append(url),
    )

    RoutedHttpClient(base_url=base_url, timeout=1).request(
        "POST", "https://api.twilio.com/2010-04-01/Accounts/AC1/Calls.json"
    )
    RoutedHttpClient(base_url=base_url, timeout=1).request(
        "GET", "https://api.twilio.com.example.org/x"
    )

    assert sent == [sent_to, "https://api.twilio.com.example.org/x"]


# --- legs settled from Twilio's call records ---------------------------------------------------


@pytest.mark.parametrize(
    ("status", "duration", "expected"),
    [
        ("ringing", None, LegStatus(live=True)),
        ("in-progress", None, LegStatus(live=True, answered=True)),
        (
            "completed",
            "42",
            LegStatus(
                live=False, answered=True, ended_by=EventKind.COMPLETED, duration=42
            ),
        ),
        ("no-answer", "0", LegStatus(live=False, ended_by=EventKind.NO_ANSWER)),
        ("busy", "0", LegStatus(live=False, ended_by=EventKind.BUSY)),
    ],
)
def test_twilio_reports_a_legs_status_from_its_call_resource(
    start, account, fake_twilio, status, duration, expected
):
    agent(account, phone=FIRST)
    start()
    (sid,) = fake_twilio.calls
    fake_twilio.calls[sid].update(status=status, duration=duration)

    found = TwilioProvider().leg_status(provider_id=sid, attempt_id=1)

    assert found == expected
    assert fake_twilio.requests[-1].method == "GET"


def test_twilio_has_no_record_of_a_leg_it_never_placed():
    missing = "CA" + "0" * 32
    assert TwilioProvider().leg_status(provider_id=missing, attempt_id=1) is None
    assert TwilioProvider().leg_status(provider_id="", attempt_id=1) is None


def test_a_silent_lead_leg_is_found_as_the_child_of_the_agents_call_and_settled(
    client, start, account, fake_twilio, tasks
):
    """A lead's leg is placed by Twilio from the agent's <Dial>: we never learn its sid if
    its callbacks are lost, so the sweep finds it as the child call of the agent's leg."""
    agent(account, phone=FIRST)
    call = start()
    agent_leg, lead_leg = connect(client, call)
    assert lead_leg.provider_id == ""  # no callback of the lead's leg ever came
    other = fake_twilio.add_child("CA" + "e" * 32, to=LEAD, status="in-progress")
    child = fake_twilio.add_child(
        agent_leg.provider_id, to=LEAD, status="completed", duration="42"
    )

    services.calls_sweep(now=timezone.now() + timedelta(minutes=5))

    listed = [r for r in fake_twilio.requests if r.method == "GET" and "?" in r.path]
    assert [r.path for r in listed] == [
        f"/2010-04-01/Accounts/{ACCOUNT_SID}/Calls.json"
        f"?ParentCallSid={agent_leg.provider_id}&PageSize=1"
    ]
    assert child != other
    call.refresh_from_db()
    lead_leg.refresh_from_db()
    assert (call.status, call.duration) == (CallStatus.ANSWER, 42)
    assert lead_leg.outcome == AttemptOutcome.ANSWERED
    assert lead_leg.ended_at


def test_a_silent_lead_leg_twilio_never_placed_is_hung_up_with_its_agent_and_given_up(
    client, start, account, fake_twilio, tasks
):
    agent(account, phone=FIRST)
    call = start()
    agent_leg, lead_leg = connect(client, call)
    sent_before = len(fake_twilio.requests)

    services.calls_sweep(now=timezone.now() + timedelta(minutes=5))

    lead_leg.refresh_from_db()
    assert lead_leg.ended_at is not None
    assert lead_leg.answered_at is None
    # No child call: the agent's leg (the one the lead would be dialed from) is hung up
    # before the lead's leg is given up, so the lead is never rung by a leg we forgot.
    hangups = [
        r
        for r in fake_twilio.requests[sent_before:]
        if r.method == "POST" and r.form.get("Status") == ["completed"]
    ]
    assert hangups
    assert {r.path.rsplit("/", 1)[-1] for r in hangups} == {
        f"{agent_leg.provider_id}.json"
    }
    call.refresh_from_db()
    assert (
        call.status == CallStatus.QUEUED
    )  # the lead's retry, on the account's cadence


def test_a_silent_agent_leg_is_ended_as_twilios_record_says(
    start, account, fake_twilio, tasks
):
    agent(account, phone=FIRST)
    call = start()
    (sid,) = fake_twilio.calls
    fake_twilio.calls[sid].update(status="no-answer", duration="0")
    leg = CallAttempt.objects.get(call=call, leg=Leg.AGENT)

    services.calls_sweep(now=timezone.now() + timedelta(minutes=5))

    leg.refresh_from_db()
    assert leg.outcome == AttemptOutcome.NOANSWER
    assert leg.ended_at is not None
