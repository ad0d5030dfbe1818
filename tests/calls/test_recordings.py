"""Simulated recordings: as long as the call, streamed, seekable, behind a revocable signed link."""

import io
import wave

import pytest
from django.utils import timezone

from calls.models import Call, CallAttempt, CallStatus, Leg
from calls.recordings import CHUNK, HEADER_BYTES, recording_link
from tests.accounts.factories import AccountFactory

pytestmark = pytest.mark.django_db

HOST = "https://leads.example.test"


@pytest.fixture
def recorded():
    """An answered call whose lead leg talked for 210 s, with its recording link."""
    call = Call.objects.create(
        account=AccountFactory(),
        status=CallStatus.ANSWER,
        received_at=timezone.now(),
        phone="+13035550123",
        duration=210,
    )
    leg = CallAttempt.objects.create(
        call=call, leg=Leg.LEAD, number=call.phone, provider="simulator", duration=210
    )
    call.recording_url = recording_link(leg.pk)
    call.save(update_fields=["recording_url"])
    return call


def path(call):
    return call.recording_url.removeprefix(HOST)


def test_the_recording_lasts_as_long_as_the_call_and_streams(client, recorded):
    response = client.get(path(recorded))
    assert response.status_code == 200
    assert response.streaming, "generated as it is sent, never held whole"
    chunks = list(response.streaming_content)
    assert max(len(chunk) for chunk in chunks) <= CHUNK
    body = b"".join(chunks)
    assert (
        response["Content-Length"] == str(len(body)) == str(HEADER_BYTES + 210 * 16000)
    )
    assert response["Accept-Ranges"] == "bytes"
    with wave.open(io.BytesIO(body)) as audio:
        assert (audio.getnchannels(), audio.getframerate(), audio.getsampwidth()) == (
            1,
            8000,
            2,
        )
        assert audio.getnframes() / audio.getframerate() == 210


@pytest.mark.parametrize(
    ("header", "start", "end"),
    [
        ("bytes=0-99", 0, 99),
        ("bytes=1600000-", 1600000, None),
        ("bytes=-500", -500, None),
        ("bytes=3359900-9999999", 3359900, None),
    ],
)
def test_a_player_can_seek_with_range_requests(client, recorded, header, start, end):
    whole = b"".join(client.get(path(recorded)).streaming_content)
    response = client.get(path(recorded), HTTP_RANGE=header)
    assert response.status_code == 206
    part = b"".join(response.streaming_content)
    expected = whole[start : None if end is None else end + 1]
    assert part == expected
    first = start if start >= 0 else len(whole) + start
    assert (
        response["Content-Range"]
        == f"bytes {first}-{first + len(part) - 1}/{len(whole)}"
    )
    assert response["Content-Length"] == str(len(part))


@pytest.mark.parametrize("header", ["bytes=99999999-", "bytes=10-5", "bytes=-"])
def test_an_unsatisfiable_range_is_416(client, recorded, header):
    response = client.get(path(recorded), HTTP_RANGE=header)
    assert response.status_code == 416
    assert response["Content-Range"] == f"bytes */{HEADER_BYTES + 210 * 16000}"


def test_a_reissued_link_revokes_the_old_one(client, recorded):
    old = path(recorded)
    leg = recorded.attempts_log.get()
    recorded.recording_url = recording_link(leg.pk)
    recorded.save(update_fields=["recording_url"])
    assert client.get(old).status_code == 404
    assert client.get(path(recorded)).status_code == 200


def test_a_forged_or_foreign_token_is_not_found(client, recorded):
    assert client.get("/calls/recordings/abc.wav").status_code == 404
    token = path(recorded).rsplit("/", 1)[1].removesuffix(".wav")
    assert client.get(f"/calls/recordings/{token[:-2]}xx.wav").status_code == 404


def test_support_revokes_a_recording_link_from_the_call_list(
    admin_client, client, recorded
):
    from django.urls import reverse

    old = path(recorded)
    response = admin_client.post(
        reverse("admin:calls_call_changelist"),
        {"action": "reissue_recording_links", "_selected_action": [recorded.pk]},
        follow=True,
    )
    assert "Issued new recording links for 1 call; the old links no longer play." in (
        response.content.decode()
    )
    recorded.refresh_from_db()
    assert path(recorded) != old
    assert client.get(old).status_code == 404
    assert client.get(path(recorded)).status_code == 200
