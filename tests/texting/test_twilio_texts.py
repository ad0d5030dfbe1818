"""Texting through Twilio Messaging, end to end and offline.

The official library sends its real requests to the local fake of Twilio's REST API
(``tests.calls.fake_twilio``, its Messages resource); Twilio's status callbacks and a
lead's texts are posted back, signed with the auth token as Twilio signs them, to the
real callback URLs (``/texts/twilio/``).
"""

from __future__ import annotations

import socket
from urllib.parse import urlencode

import pytest
import requests
from django.utils import timezone
from twilio.request_validator import RequestValidator

from calls.models import CallOrigin, CallStatus
from providers import twilio
from providers.messaging import (
    OutgoingText,
    TextingUnavailable,
    TextOutcomeUnknown,
    TextRefused,
)
from providers.twilio import TwilioTexts
from tests.accounts.factories import AccountFactory
from tests.calls.fake_twilio import ACCOUNT_SID, AUTH_TOKEN, BASE
from tests.handover import hold_hand_overs
from tests.scoring.factories import CallFactory
from tests.users.factories import agent
from texting import services
from texting.models import (
    Direction,
    OptOut,
    Purpose,
    Text,
    TextingSettings,
    TextStatus,
)

pytestmark = [pytest.mark.django_db, pytest.mark.usefixtures("twilio_settings")]

SENDER = "+13035550188"
SERVICE = "MG" + "0123456789abcdef" * 2
LEAD = "+13035557777"
REPLY = "Hi Sam, the Civic is ready for a test drive on Saturday."
EMPTY_TWIML = b'<?xml version="1.0" encoding="UTF-8"?><Response />'


# --- fixtures and helpers -----------------------------------------------------------------------


@pytest.fixture(autouse=True)
def dispatched(monkeypatch) -> list[int]:
    """The texts handed to a worker, recorded instead of published: no task runs here."""
    recorded: list[int] = []
    hold_hand_overs(
        monkeypatch,
        "texting.tasks.text_send_task",
        then=lambda text_id, countdown: recorded.append(text_id),
    )
    return recorded


def texting_account(sender: str = SENDER, **kwargs):
    account = AccountFactory(**kwargs)
    TextingSettings.objects.create(account=account, enabled=True, sender=sender)
    return account


@pytest.fixture
def account():
    return texting_account()


@pytest.fixture
def call(account):
    return CallFactory(account=account, phone=LEAD)


@pytest.fixture
def reply(call, django_capture_on_commit_callbacks, dispatched):
    """A reply written on the call page: stored, handed to a worker on commit."""

    def write(body: str = REPLY) -> Text:
        user = agent(call.account, phone="+13035551001")
        with django_capture_on_commit_callbacks(execute=True):
            text = services.text_reply_send(call=call, user=user, body=body)
        assert dispatched[-1] == text.pk
        return text

    return write


@pytest.fixture
def queued(reply, fake_twilio):
    """A reply Twilio took (``queued``)."""
    text = reply()
    assert services.text_send(text_id=text.pk) == "sent"
    text.refresh_from_db()
    assert text.status == TextStatus.QUEUED
    return text


def sign(url: str, params: dict[str, str], token: str = AUTH_TOKEN) -> str:
    return RequestValidator(token).compute_signature(url, params)


def callback(client, path: str, params: dict[str, str], *, signature=None):
    """POST a form-encoded callback as Twilio does, signed for the public URL unless a
    signature is given ("" sends none)."""
    if signature is None:
        signature = sign(BASE + path, params)
    headers = {"HTTP_X_TWILIO_SIGNATURE": signature} if signature else {}
    return client.post(
        path,
        urlencode(params),
        content_type="application/x-www-form-urlencoded",
        **headers,
    )


def status_params(text: Text, status: str, **extra: str) -> dict[str, str]:
    """What Twilio posts to a message's StatusCallback."""
    return {
        "AccountSid": ACCOUNT_SID,
        "ApiVersion": "2010-04-01",
        "From": text.from_number,
        "MessageSid": text.provider_id,
        "MessageStatus": status,
        "SmsSid": text.provider_id,
        "SmsStatus": status,
        "To": text.to_number,
        **extra,
    }


def inbound_params(body: str, *, sid: str = "SM" + "a" * 32, **extra: str):
    """What Twilio posts to a number's (or Messaging Service's) inbound webhook."""
    return {
        "AccountSid": ACCOUNT_SID,
        "ApiVersion": "2010-04-01",
        "Body": body,
        "From": LEAD,
        "MessageSid": sid,
        "NumMedia": "0",
        "NumSegments": "1",
        "SmsMessageSid": sid,
        "SmsSid": sid,
        "SmsStatus": "received",
        "To": SENDER,
        **extra,
    }


def status_path(text: Text) -> str:
    return f"/texts/twilio/{text.pk}/status"


def snapshot(text: Text) -> tuple:
    text.refresh_from_db()
    return (text.status, text.status_at, text.error, text.provider_id)


def outgoing(sender: str = SENDER, body: str = REPLY) -> OutgoingText:
    return OutgoingText(text_id=5, to=LEAD, sender=sender, body=body, to_lead=True)


# --- the provider -----------------------------------------------------------------------------


def test_a_text_from_a_number_is_sent_as_twilio_expects(fake_twilio):
    sid = TwilioTexts().send(outgoing())

    (request,) = fake_twilio.requests
    assert request.method == "POST"
    assert request.path == f"/2010-04-01/Accounts/{ACCOUNT_SID}/Messages.json"
    assert request.auth == (ACCOUNT_SID, AUTH_TOKEN)
    assert request.form == {
        "To": [LEAD],
        "Body": [REPLY],
        "From": [SENDER],
        "StatusCallback": [f"{BASE}/texts/twilio/5/status"],
    }
    assert list(fake_twilio.messages) == [sid]
    message = fake_twilio.messages[sid]
    assert sid.startswith("SM")
    assert len(sid) == 34
    assert (message["status"], message["from"], message["messaging_service_sid"]) == (
        "queued",
        SENDER,
        None,
    )
    assert message["num_segments"] == "1"


def test_a_text_from_a_messaging_service_names_the_service_not_a_number(fake_twilio):
    sid = TwilioTexts().send(outgoing(sender=SERVICE))

    (request,) = fake_twilio.requests
    assert request.form == {
        "To": [LEAD],
        "Body": [REPLY],
        "MessagingServiceSid": [SERVICE],
        "StatusCallback": [f"{BASE}/texts/twilio/5/status"],
    }
    assert fake_twilio.messages[sid]["messaging_service_sid"] == SERVICE
    assert fake_twilio.messages[sid]["from"] is None


def test_a_long_body_is_counted_in_segments_as_twilio_counts_them(fake_twilio):
    sid = TwilioTexts().send(outgoing(body="x" * 161))

    assert fake_twilio.messages[sid]["num_segments"] == "2"


def test_a_rate_limited_text_is_unavailable_so_sent_again(fake_twilio):
    fake_twilio.fail_next(429, code=20429, message="Too Many Requests")

    with pytest.raises(TextingUnavailable, match="rate limiting"):
        TwilioTexts().send(outgoing())


@pytest.mark.parametrize("status", [500, 503])
def test_a_server_error_leaves_the_outcome_unknown(fake_twilio, status):
    fake_twilio.fail_next(status, code=20500, message="Internal Server Error")

    with pytest.raises(TextOutcomeUnknown, match=f"Twilio answered {status}"):
        TwilioTexts().send(outgoing())


def test_an_invalid_number_is_refused_for_good(fake_twilio):
    with pytest.raises(TextRefused, match="21211"):
        TwilioTexts().send(OutgoingText(5, "303-555-7777", SENDER, REPLY, True))

    assert fake_twilio.messages == {}


def test_a_text_without_a_sender_is_refused_with_twilios_error(fake_twilio):
    with pytest.raises(TextRefused, match="21603"):
        TwilioTexts().send(outgoing(sender=""))


def test_an_unreachable_twilio_is_unavailable(settings):
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port = sock.getsockname()[1]
    settings.TWILIO_API_BASE_URL = f"http://127.0.0.1:{port}"

    with pytest.raises(TextingUnavailable, match="could not be reached"):
        TwilioTexts().send(outgoing())


def test_a_twilio_that_does_not_answer_in_time_leaves_the_outcome_unknown(
    fake_twilio, monkeypatch
):
    monkeypatch.setattr(twilio, "REQUEST_TIMEOUT", 0.2)
    fake_twilio.stalls.append(2.0)

    with pytest.raises(TextOutcomeUnknown, match="did not answer in time"):
        TwilioTexts().send(outgoing())

    assert len(fake_twilio.messages) == 1  # Twilio took it: never sent again


def test_a_connection_that_times_out_is_unavailable_so_sent_again(monkeypatch):
    """A connect timeout is also a ``requests.Timeout``, but nothing reached Twilio."""

    def no_connection(*args, **kwargs):
        raise requests.ConnectTimeout("connect timeout=10")

    monkeypatch.setattr(requests.Session, "send", no_connection)

    with pytest.raises(TextingUnavailable, match="could not be reached in time"):
        TwilioTexts().send(outgoing())


# --- text_send, end to end ----------------------------------------------------------------------


def test_a_reply_is_handed_to_twilio_once(reply, fake_twilio, call):
    text = reply()
    assert text.provider == "twilio"

    assert services.text_send(text_id=text.pk) == "sent"

    text.refresh_from_db()
    (sid,) = fake_twilio.messages
    assert (text.status, text.provider_id, text.error) == (TextStatus.QUEUED, sid, "")
    assert text.handed_at is not None
    assert text.handed_at <= timezone.now()
    (request,) = fake_twilio.requests
    assert request.form == {
        "To": [LEAD],
        "Body": [REPLY],
        "From": [SENDER],
        "StatusCallback": [f"{BASE}/texts/twilio/{text.pk}/status"],
    }

    # The task delivered twice (or the sweep's copy): nothing is sent again.
    assert services.text_send(text_id=text.pk) == "done"
    assert len(fake_twilio.requests) == 1
    assert snapshot(text)[0] == TextStatus.QUEUED


def test_a_server_error_fails_the_text_and_it_is_never_sent_again(reply, fake_twilio):
    text = reply()
    fake_twilio.fail_next(500, code=20500, message="Internal Server Error")

    assert services.text_send(text_id=text.pk) == "failed"

    text.refresh_from_db()
    assert text.status == TextStatus.FAILED
    assert text.error == (
        "Twilio answered 500: Unable to create record: Internal Server Error"
    )
    assert text.provider_id == ""
    assert services.text_send(text_id=text.pk) == "done"
    assert len(fake_twilio.requests) == 1  # the failed one only
    assert fake_twilio.messages == {}


def test_a_rate_limited_text_stays_scheduled_for_the_retry(reply, fake_twilio):
    text = reply()
    fake_twilio.fail_next(429, code=20429, message="Too Many Requests")

    with pytest.raises(TextingUnavailable):
        services.text_send(text_id=text.pk)

    text.refresh_from_db()
    assert (text.status, text.provider_id) == (TextStatus.SCHEDULED, "")
    # The task's retry sends it.
    assert services.text_send(text_id=text.pk) == "sent"
    text.refresh_from_db()
    assert text.status == TextStatus.QUEUED
    assert list(fake_twilio.messages) == [text.provider_id]


def test_a_refused_text_fails_with_twilios_reason(reply, fake_twilio):
    text = reply()
    Text.objects.filter(pk=text.pk).update(to_number="303-555-7777")  # not E.164

    assert services.text_send(text_id=text.pk) == "failed"

    text.refresh_from_db()
    assert text.status == TextStatus.FAILED
    assert text.error.startswith("Twilio refused it (21211): ")


# --- status callbacks ---------------------------------------------------------------------------


def test_statuses_move_the_text_forward_and_never_back(client, queued):
    sent = callback(client, status_path(queued), status_params(queued, "sent"))
    assert (sent.status_code, sent.content) == (204, b"")
    assert snapshot(queued)[0] == TextStatus.SENT

    delivered = callback(
        client, status_path(queued), status_params(queued, "delivered")
    )
    assert delivered.status_code == 204
    assert snapshot(queued)[0] == TextStatus.DELIVERED
    before = snapshot(queued)

    late = callback(client, status_path(queued), status_params(queued, "sent"))
    assert late.status_code == 204
    assert snapshot(queued) == before


@pytest.mark.parametrize(
    ("status", "ours"),
    [
        # Every MessageStatus Twilio gives an outgoing message (issue 36, part 5).
        ("accepted", TextStatus.QUEUED),
        ("scheduled", TextStatus.QUEUED),
        ("sending", TextStatus.QUEUED),
        ("partially_delivered", TextStatus.DELIVERED),
        ("canceled", TextStatus.CANCELED),
        # An incoming message's statuses change nothing of an outgoing one.
        ("receiving", TextStatus.QUEUED),
        ("received", TextStatus.QUEUED),
    ],
)
def test_every_twilio_message_status_is_read(client, queued, status, ours):
    response = callback(client, status_path(queued), status_params(queued, status))

    assert response.status_code == 204
    assert snapshot(queued)[0] == ours


def test_a_text_twilio_called_off_ends_not_sent_whatever_it_showed_before(
    client, queued
):
    callback(client, status_path(queued), status_params(queued, "sent"))

    callback(client, status_path(queued), status_params(queued, "canceled"))

    assert snapshot(queued)[0] == TextStatus.CANCELED


@pytest.mark.parametrize("status", ["failed", "undelivered"])
def test_a_text_not_delivered_shows_twilios_error_code(client, queued, status):
    response = callback(
        client,
        status_path(queued),
        status_params(queued, status, ErrorCode="30003"),
    )

    assert response.status_code == 204
    queued.refresh_from_db()
    assert (queued.status, queued.error) == (status, "Twilio error 30003")


@pytest.mark.parametrize("signature", ["", "wrong"])
def test_an_unsigned_or_wrongly_signed_status_is_refused(client, queued, signature):
    before = snapshot(queued)
    params = status_params(queued, "delivered")
    if signature == "wrong":
        signature = sign(BASE + status_path(queued), params, token="another-token")

    response = callback(client, status_path(queued), params, signature=signature)

    assert response.status_code == 403
    assert snapshot(queued) == before


def test_a_status_signed_for_another_text_is_refused(client, queued, reply):
    other = reply("Another reply.")
    before = snapshot(queued)
    params = status_params(queued, "delivered")

    response = callback(
        client,
        status_path(queued),
        params,
        signature=sign(BASE + status_path(other), params),
    )

    assert response.status_code == 403
    assert snapshot(queued) == before


# --- a lead's texts -----------------------------------------------------------------------------


def test_a_leads_text_is_stored_in_the_accounts_thread(client, account, call):
    # The same number in the same organization, but it never reached this lead.
    other = texting_account(organization=account.organization)
    CallFactory(account=other, phone="+13035550000")

    response = callback(client, "/texts/twilio/inbound", inbound_params("Thanks!"))

    assert response.status_code == 200
    assert response["Content-Type"] == "text/xml"
    assert response.content == EMPTY_TWIML
    (text,) = Text.objects.filter(direction=Direction.IN)
    assert (
        text.account,
        text.call,
        text.lead_phone,
        text.from_number,
        text.to_number,
        text.body,
        text.status,
        text.purpose,
        text.provider,
        text.provider_id,
    ) == (
        account,
        call,
        LEAD,
        LEAD,
        SENDER,
        "Thanks!",
        TextStatus.RECEIVED,
        Purpose.INBOUND,
        "twilio",
        "SM" + "a" * 32,
    )


def test_stop_through_twilio_opts_the_lead_out_and_confirms_once(
    client, account, call, dispatched, django_capture_on_commit_callbacks
):
    with django_capture_on_commit_callbacks(execute=True):
        response = callback(client, "/texts/twilio/inbound", inbound_params("Stop"))

    assert response.status_code == 200
    opt_out = OptOut.objects.get(account=account, phone=LEAD)
    assert (opt_out.message, opt_out.opted_in_at) == ("Stop", None)
    (confirmation,) = Text.objects.filter(purpose=Purpose.OPT_OUT)
    assert (confirmation.to_number, confirmation.from_number) == (LEAD, SENDER)
    assert dispatched == [confirmation.pk]
    assert (
        Text.objects.filter(purpose=Purpose.FORWARD).count() == 0
    )  # no agent, no manager


def test_call_me_through_twilio_queues_a_call_to_the_lead(client, account, call):
    call.status = CallStatus.BUSY
    call.save(update_fields=["status"])

    response = callback(
        client, "/texts/twilio/inbound", inbound_params("Yes please call me")
    )

    assert response.status_code == 200
    (text,) = Text.objects.filter(direction=Direction.IN)
    assert text.queued_call is not None
    assert (
        text.queued_call.phone,
        text.queued_call.origin,
        text.queued_call.status,
    ) == (
        LEAD,
        CallOrigin.TEXT_REPLY,
        CallStatus.QUEUED,
    )


def test_a_leads_text_posted_twice_is_stored_once(client, call):
    params = inbound_params("Is it still available?")

    first = callback(client, "/texts/twilio/inbound", params)
    again = callback(client, "/texts/twilio/inbound", params)

    assert (first.status_code, again.status_code) == (200, 200)
    assert again.content == EMPTY_TWIML
    assert Text.objects.filter(direction=Direction.IN).count() == 1


@pytest.mark.parametrize("signature", ["", "wrong"])
def test_an_unsigned_or_wrongly_signed_leads_text_is_refused(client, call, signature):
    params = inbound_params("STOP")
    if signature == "wrong":
        signature = sign(BASE + "/texts/twilio/inbound", params, token="another")

    response = callback(client, "/texts/twilio/inbound", params, signature=signature)

    assert response.status_code == 403
    assert not Text.objects.exists()
    assert not call.account.text_opt_outs.exists()


def test_a_leads_text_through_a_messaging_service_finds_the_services_account(client):
    through_service = texting_account(sender=SERVICE)
    by_number = texting_account(sender=SENDER)
    CallFactory(account=through_service, phone=LEAD)
    # The number's account called the lead last: the service still wins, as Twilio
    # names the service the lead's text came through.
    CallFactory(account=by_number, phone=LEAD, received_at=timezone.now())
    params = inbound_params("Saturday works", MessagingServiceSid=SERVICE)

    response = callback(client, "/texts/twilio/inbound", params)

    assert response.status_code == 200
    (text,) = Text.objects.filter(direction=Direction.IN)
    assert text.account == through_service
    assert text.to_number == SENDER
