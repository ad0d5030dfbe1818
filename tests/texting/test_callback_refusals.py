"""Twilio Messaging's callbacks, correctly signed but holding what Twilio never sends: a
NUL in a number, a sid of the wrong shape or length, no ``MessageSid``. Each is refused
with a plain 400 before anything is read or stored; a lead's text is free text, so its
control characters are stored as sent."""

from __future__ import annotations

import pytest

from tests.handover import hold_hand_overs
from tests.scoring.factories import CallFactory
from tests.texting.test_twilio_texts import (
    EMPTY_TWIML,
    LEAD,
    SENDER,
    SERVICE,
    callback,
    inbound_params,
    snapshot,
    status_params,
    status_path,
    texting_account,
)
from tests.users.factories import agent
from texting import services
from texting.models import Direction, OptOut, Text, TextStatus

pytestmark = [pytest.mark.django_db, pytest.mark.usefixtures("twilio_settings")]

INBOUND = "/texts/twilio/inbound"


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


@pytest.fixture
def call():
    """A lead the account called, so a text from the lead would be matched and stored."""
    return CallFactory(account=texting_account(), phone=LEAD)


def stored() -> list[tuple]:
    """Every text and opt-out there is, as rows."""
    return [
        *Text.objects.order_by("id").values_list(
            "direction", "from_number", "to_number", "body", "provider_id"
        ),
        *OptOut.objects.values_list("phone", "message"),
    ]


@pytest.mark.parametrize(
    "change",
    [
        pytest.param({"From": LEAD + "\x00"}, id="nul-in-from"),
        pytest.param({"To": SENDER + "\x00"}, id="nul-in-to"),
        pytest.param({"From": "\x00" + LEAD}, id="nul-leading-from"),
        pytest.param({"From": "+1" + "3" * 20}, id="from-longer-than-a-phone"),
        pytest.param({"MessagingServiceSid": SERVICE + "\x00"}, id="nul-in-service"),
        pytest.param({"MessageSid": "SM" + "a" * 200}, id="202-character-sid"),
        pytest.param({"MessageSid": "SM" + "a" * 31 + "\x00"}, id="nul-in-sid"),
        pytest.param({"MessageSid": "SM-not-a-twilio-sid"}, id="sid-of-another-shape"),
        pytest.param({"Body": "STOP\x00"}, id="nul-in-body"),
    ],
)
def test_a_signed_leads_text_twilio_would_never_send_is_refused_and_not_stored(
    client, call, change
):
    params = {**inbound_params("STOP"), **change}

    response = callback(client, INBOUND, params)

    assert (response.status_code, response.content) == (400, b"")
    assert stored() == []


def test_a_signed_leads_text_without_a_message_sid_is_refused_every_time(client, call):
    params = inbound_params("Is it still available?")
    del params["MessageSid"], params["SmsMessageSid"], params["SmsSid"]

    first = callback(client, INBOUND, params)
    again = callback(client, INBOUND, params)

    assert (first.status_code, first.content) == (400, b"")
    assert (again.status_code, again.content) == (400, b"")
    assert stored() == []


@pytest.mark.parametrize("missing", ["From", "To"])
def test_a_signed_leads_text_without_its_numbers_is_refused(client, call, missing):
    params = inbound_params("Is it still available?")
    del params[missing]

    response = callback(client, INBOUND, params)

    assert (response.status_code, response.content) == (400, b"")
    assert stored() == []


def test_control_characters_in_a_leads_text_are_stored_as_sent(client, call):
    body = "Call me\x01 after\x0b5\x1b[0m\x7f\ttoday\r\nplease"

    response = callback(client, INBOUND, inbound_params(body))

    assert (response.status_code, response.content) == (200, EMPTY_TWIML)
    (text,) = Text.objects.filter(direction=Direction.IN)
    assert (text.body, text.from_number, text.to_number, text.provider_id) == (
        body,
        LEAD,
        SENDER,
        "SM" + "a" * 32,
    )


# --- delivery statuses


@pytest.fixture
def sent(call, dispatched):
    """A text the account sent to the lead, which Twilio took."""
    user = agent(call.account, phone="+13035551001")
    text = services.text_reply_send(call=call, user=user, body="The Civic is ready.")
    Text.objects.filter(pk=text.pk).update(
        status=TextStatus.QUEUED, provider="twilio", provider_id="SM" + "b" * 32
    )
    text.refresh_from_db()
    return text


@pytest.mark.parametrize(
    "change",
    [
        pytest.param({"ErrorCode": "30003\x00"}, id="nul-in-error-code"),
        pytest.param({"ErrorCode": "30003; drop"}, id="error-code-not-a-number"),
        pytest.param({"ErrorCode": "3" * 40}, id="error-code-too-long"),
        pytest.param({"MessageStatus": "failed\x00"}, id="nul-in-status"),
        pytest.param({"MessageStatus": "failed" * 10}, id="status-too-long"),
    ],
)
def test_a_signed_status_twilio_would_never_send_is_refused_and_changes_nothing(
    client, sent, change
):
    before = snapshot(sent)
    params = {**status_params(sent, "failed", ErrorCode="30003"), **change}

    response = callback(client, status_path(sent), params)

    assert (response.status_code, response.content) == (400, b"")
    assert snapshot(sent) == before
