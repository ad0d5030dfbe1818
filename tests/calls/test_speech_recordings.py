"""Recordings kept in storage: the simulator's spoken from its conversation script,
Twilio's fetched from (a local fake of) Twilio, played through the call's signed link."""

from __future__ import annotations

import io
import logging
import wave
from collections.abc import Iterator
from datetime import timedelta

import numpy as np
import pytest
from django.core.files.storage import default_storage
from django.utils import timezone
from twilio.request_validator import RequestValidator

from calls import media, services, signals
from calls.audio import MULAW_GRID
from calls.models import (
    AttemptOutcome,
    Call,
    CallAttempt,
    CallStatus,
    Leg,
    Recording,
    RecordingStatus,
)
from calls.tasks import recording_store_task
from calls.telephony import speech
from calls.telephony.conversation import ENDINGS, Facts, conversation_script
from core.models import Effect
from tests.accounts.factories import AccountFactory
from tests.calls.fake_twilio import ACCOUNT_SID, AUTH_TOKEN, FakeTwilio
from tests.calls.fake_twilio import BASE as HOST
from tests.calls.harness import World
from tests.users.factories import agent

pytestmark = pytest.mark.django_db


@pytest.fixture(autouse=True)
def storage(settings, tmp_path):
    settings.MEDIA_ROOT = tmp_path / "media"
    settings.SIMULATOR_SPEECH = True
    return settings.MEDIA_ROOT


@pytest.fixture
def sent(monkeypatch) -> list[int]:
    """The calls whose ``recording_store_task`` was published (recorded, not sent)."""
    published: list[int] = []
    monkeypatch.setattr(
        media, "_store_later", lambda call_id, *hand_over: published.append(call_id)
    )
    return published


@pytest.fixture
def stored_signals() -> Iterator[list[int]]:
    heard: list[int] = []

    def receive(sender, call_id, **kwargs):
        heard.append(call_id)

    signals.recording_stored.connect(receive, dispatch_uid="test-recording-stored")
    yield heard
    signals.recording_stored.disconnect(dispatch_uid="test-recording-stored")


@pytest.fixture
def broker_noted() -> None:
    """The broker's server noted, as a calls worker does when it starts."""
    from calls import workers

    workers.losses_take()


@pytest.fixture
def answered(monkeypatch, django_capture_on_commit_callbacks, sent) -> Call:
    """A simulated call run to its end through the pipeline: the agent took it, the lead
    answered and talked."""
    world = World(monkeypatch, django_capture_on_commit_callbacks)
    account = AccountFactory(name="Red Rock Motors")
    agent(account, phone="+13035550140", first_name="Avery", last_name="Lopez")
    call = world.queue_call(
        account=account,
        phone="+13035550123",
        received_at=timezone.now(),
        first_name="Jane",
        whisper="Sales lead. New 2025 Toyota Camry.",
        called_on_year="2025",
        called_on_make="Toyota",
        called_on_model="Camry",
    )
    world.run()
    call.refresh_from_db()
    assert call.status == CallStatus.ANSWER
    return call


def path(call: Call) -> str:
    return call.recording_url.removeprefix(HOST)


def rms(samples: np.ndarray) -> float:
    return float(np.sqrt(np.mean(samples.astype(np.float64) ** 2)))


def window(pcm: np.ndarray, turn: dict, channel: int, rate: int) -> np.ndarray:
    return pcm[int(turn["start"] * rate) : int(turn["end"] * rate), channel]


# --- the simulator's recordings ------------------------------------------------------------


def test_an_answered_simulated_call_ends_with_a_stored_recording_its_link_plays(
    client, answered, sent, stored_signals
):
    recording = Recording.objects.get(call=answered)
    assert recording.status == RecordingStatus.PENDING
    assert sent == [answered.pk]  # published once the call's end committed

    assert media.recording_store(call_id=answered.pk) == RecordingStatus.STORED

    recording.refresh_from_db()
    assert stored_signals == [answered.pk]
    # What a carrier records: two channels at 8 kHz (SIMULATOR_RECORDING_RATE).
    assert (recording.channels, recording.sample_rate) == (2, 8000)
    assert recording.seconds == pytest.approx(answered.duration, abs=1)
    assert recording.stored_at is not None
    assert recording.tries == 0
    turns = recording.script["turns"]
    # The whisper was played to the agent before the lead was dialed: not recorded.
    assert [turn["speaker"] for turn in turns[:2]] == ["agent", "lead"]
    assert not any("Sales lead" in turn["text"] for turn in turns)
    assert "Avery Lopez" in turns[0]["text"]
    assert "Red Rock Motors" in turns[0]["text"]
    assert recording.script["ending"] in ENDINGS
    assert recording.script["met"] == sorted(recording.script["met"])

    response = client.get(path(answered))
    assert response.status_code == 200
    assert response.streaming
    body = b"".join(response.streaming_content)
    assert recording.audio.name is not None
    assert body == default_storage.open(recording.audio.name).read()
    assert response["Content-Length"] == str(len(body))
    with wave.open(io.BytesIO(body)) as audio:
        assert (audio.getnchannels(), audio.getframerate(), audio.getsampwidth()) == (
            2,
            8000,
            2,
        )
        assert audio.getnframes() / 8000 == pytest.approx(answered.duration, abs=1)
        pcm = np.frombuffer(audio.readframes(audio.getnframes()), "<i2").reshape(-1, 2)
    agent_turn = next(turn for turn in turns if turn["speaker"] == "agent")
    lead_turn = next(turn for turn in turns if turn["speaker"] == "lead")
    silence = pcm[: int(0.4 * 8000)]  # the lead-in: nobody speaks yet
    assert rms(silence) < 1
    # The agent speaks on the first channel only, the lead on the second only.
    assert rms(window(pcm, agent_turn, 0, 8000)) > 500
    assert rms(window(pcm, agent_turn, 1, 8000)) < 1
    assert rms(window(pcm, lead_turn, 1, 8000)) > 500
    assert rms(window(pcm, lead_turn, 0, 8000)) < 1


def test_the_recording_the_timeline_and_the_duration_tell_one_story(
    admin_client, settings, answered
):
    """The call lasts as long as its conversation takes to say: the recording is the
    call's duration long, carries every turn of the script at the natural pace, and
    the last goodbye ends within seconds of the hang-up (not 0:58 of 3:30)."""
    media.recording_store(call_id=answered.pk)
    recording = Recording.objects.get(call=answered)
    script = conversation_script(
        Facts.of(answered, agent_name="Avery Lopez"), seed=answered.pk
    )
    turns = recording.script["turns"]
    assert [turn["text"] for turn in turns] == [turn.text for turn in script.turns]
    assert recording.seconds == pytest.approx(answered.duration, abs=1)
    assert 0 < answered.duration - turns[-1]["end"] <= 6
    # The timeline says why a call of 40 simulated seconds ended 0.4 s after it was
    # answered: the simulator runs faster than real time here.
    settings.SIMULATOR_TIME_SCALE = 0.1
    page = admin_client.get(f"/calls/{answered.pk}/").content.decode()
    assert f"({answered.duration} s)" in page
    assert "played 10 times faster than real time" in page
    settings.SIMULATOR_TIME_SCALE = 1.0
    page = admin_client.get(f"/calls/{answered.pk}/").content.decode()
    assert "faster than real time" not in page


def test_a_range_request_gets_those_bytes_of_the_stored_file(client, answered):
    media.recording_store(call_id=answered.pk)
    recording = Recording.objects.get(call=answered)
    assert recording.audio.name is not None
    whole = default_storage.open(recording.audio.name).read()

    response = client.get(path(answered), HTTP_RANGE="bytes=1000-70999")
    assert response.status_code == 206
    assert b"".join(response.streaming_content) == whole[1000:71000]
    assert response["Content-Range"] == f"bytes 1000-70999/{len(whole)}"
    assert response["Content-Length"] == "70000"

    tail = client.get(path(answered), HTTP_RANGE="bytes=-100")
    assert b"".join(tail.streaming_content) == whole[-100:]
    refused = client.get(path(answered), HTTP_RANGE=f"bytes={len(whole)}-")
    assert refused.status_code == 416
    assert refused["Content-Range"] == f"bytes */{len(whole)}"


def test_a_revoked_link_no_longer_plays_the_stored_recording(client, answered):
    media.recording_store(call_id=answered.pk)
    old = path(answered)
    assert services.call_recording_reissue(call=answered)
    answered.refresh_from_db()
    assert client.get(old).status_code == 404
    response = client.get(path(answered))
    assert response.status_code == 200
    assert b"".join(response.streaming_content)[:4] == b"RIFF"


def test_the_task_delivered_twice_stores_once(answered, stored_signals, storage):
    recording_store_task(call_id=answered.pk)
    first = Recording.objects.get(call=answered)
    recording_store_task(call_id=answered.pk)

    again = Recording.objects.get(call=answered)
    assert (again.audio.name, again.stored_at) == (first.audio.name, first.stored_at)
    assert stored_signals == [answered.pk]
    assert len(list(storage.rglob("*.wav"))) == 1


def test_a_failing_synthesis_is_tried_three_times_then_failed(
    answered, monkeypatch, stored_signals
):
    def broken(*args, **kwargs):
        raise speech.SpeechUnavailable("espeak-ng is not available: no library")

    monkeypatch.setattr(speech, "conversation_audio", broken)
    for tries in (1, 2):
        with pytest.raises(media.RecordingNotYetStored):
            media.recording_store(call_id=answered.pk)
        recording = Recording.objects.get(call=answered)
        assert (recording.status, recording.tries) == (RecordingStatus.PENDING, tries)

    assert media.recording_store(call_id=answered.pk) == RecordingStatus.FAILED
    recording = Recording.objects.get(call=answered)
    assert (recording.status, recording.tries) == (RecordingStatus.FAILED, 3)
    assert recording.reason == (
        "SpeechUnavailable: espeak-ng is not available: no library"
    )
    assert not recording.audio
    assert stored_signals == []
    # Failed is final: nothing is tried again.
    assert media.recording_store(call_id=answered.pk) == RecordingStatus.FAILED
    assert Recording.objects.get(call=answered).tries == 3


class Killed(BaseException):
    """The worker's process dies here (a crash in the speech library, the OOM killer):
    nothing after this point runs in it, and the broker delivers the task again."""


def test_a_worker_killed_while_making_a_recording_fails_it_after_the_max_tries(
    answered, monkeypatch, stored_signals, caplog
):
    spoken = []

    def dies(*args, **kwargs):
        spoken.append(answered.pk)
        raise Killed

    monkeypatch.setattr(speech, "conversation_audio", dies)
    for runs in (1, 2, 3):
        with pytest.raises(Killed):
            media.recording_store(call_id=answered.pk)
        recording = Recording.objects.get(call=answered)
        assert (recording.status, recording.tries, recording.runs) == (
            RecordingStatus.PENDING,
            0,
            runs,
        )

    with caplog.at_level(logging.WARNING):
        assert media.recording_store(call_id=answered.pk) == RecordingStatus.FAILED

    recording = Recording.objects.get(call=answered)
    assert (recording.status, recording.tries, recording.runs, recording.reason) == (
        RecordingStatus.FAILED,
        1,
        3,
        "gave up after 3 runs: those that did not fail ended with no outcome (the "
        "worker stopped while making it)",
    )
    assert spoken == [answered.pk] * 3
    assert stored_signals == []
    failed = [
        r for r in caplog.records if getattr(r, "event", "") == "call.recording_failed"
    ]
    assert [r.event_fields["then"] for r in failed] == ["given up"]
    # Failed is final: delivered again, nothing runs.
    assert media.recording_store(call_id=answered.pk) == RecordingStatus.FAILED
    assert spoken == [answered.pk] * 3


def test_without_simulator_speech_no_recording_is_made(
    settings, monkeypatch, django_capture_on_commit_callbacks, sent
):
    settings.SIMULATOR_SPEECH = False
    world = World(monkeypatch, django_capture_on_commit_callbacks)
    account = AccountFactory()
    agent(account, phone="+13035550140")
    call = world.queue_call(
        account=account, phone="+13035550123", received_at=timezone.now()
    )
    world.run()
    assert Call.objects.get(pk=call.pk).status == CallStatus.ANSWER
    assert not Recording.objects.exists()
    assert sent == []


# --- the sweep ----------------------------------------------------------------------------


def test_the_sweep_re_drives_a_lost_pending_recording_and_makes_a_missing_one(
    broker_noted, answered, sent, settings
):
    sent.clear()
    now = timezone.now()
    assert services.calls_sweep(now=now)["recordings"] == 0  # just made: its task runs
    # Its task waits in a queue no worker consumes: it is not sent again.
    assert services.calls_sweep(now=now + timedelta(minutes=3))["recordings"] == 0
    assert sent == []

    # No outcome a visibility timeout after it was handed over: it was lost.
    visibility = settings.CELERY_BROKER_TRANSPORT_OPTIONS["visibility_timeout"]
    lost = now + timedelta(seconds=visibility + 1)
    assert services.calls_sweep(now=lost)["recordings"] == 1
    assert sent == [answered.pk]
    assert services.calls_sweep(now=lost + timedelta(minutes=1))["recordings"] == 0

    Recording.objects.filter(call=answered).update(
        tries=media.MAX_TRIES, dispatched_at=None
    )
    sent.clear()
    assert services.calls_sweep(now=lost)["recordings"] == 0
    assert sent == []

    Recording.objects.filter(call=answered).delete()  # its end went another way
    assert services.calls_sweep(now=lost)["recordings"] == 1
    assert Recording.objects.get(call=answered).status == RecordingStatus.PENDING


# --- Twilio's recordings ------------------------------------------------------------------


def two_channel_wav(seconds: float = 2.0, rate: int = 8000) -> bytes:
    frames = int(seconds * rate)
    pcm = np.zeros((frames, 2), "<i2")
    pcm[:, 0] = (3000 * np.sin(np.arange(frames) * 0.3)).astype("<i2")
    out = io.BytesIO()
    with wave.open(out, "wb") as wav:
        wav.setnchannels(2)
        wav.setsampwidth(2)
        wav.setframerate(rate)
        wav.writeframes(pcm.tobytes())
    return out.getvalue()


@pytest.fixture
def fake_twilio(settings):
    fake = FakeTwilio(account_sid=ACCOUNT_SID, auth_token=AUTH_TOKEN).start()
    settings.TWILIO_ACCOUNT_SID = ACCOUNT_SID
    settings.TWILIO_AUTH_TOKEN = AUTH_TOKEN
    settings.TWILIO_API_BASE_URL = fake.url
    settings.PUBLIC_BASE_URL = HOST
    yield fake
    fake.stop()


@pytest.fixture
def twilio_leg() -> CallAttempt:
    call = Call.objects.create(
        account=AccountFactory(),
        status=CallStatus.ANSWER,
        received_at=timezone.now(),
        phone="+13035550123",
        duration=2,
        ended_at=timezone.now(),
    )
    return CallAttempt.objects.create(
        call=call,
        leg=Leg.LEAD,
        number=call.phone,
        provider="twilio",
        outcome=AttemptOutcome.ANSWERED,
        duration=2,
    )


def recording_callback(client, leg: CallAttempt, url: str):
    route = f"/calls/twilio/lead/{leg.pk}/recording"
    params = {
        "AccountSid": ACCOUNT_SID,
        "RecordingSid": "RE" + "b" * 32,
        "RecordingUrl": url,
        "RecordingStatus": "completed",
        "RecordingChannels": "2",
    }
    signature = RequestValidator(AUTH_TOKEN).compute_signature(HOST + route, params)
    return client.post(route, params, HTTP_X_TWILIO_SIGNATURE=signature)


@pytest.mark.urls("tests.calls.twilio_urls")
def test_a_twilio_recording_is_fetched_with_the_accounts_credentials_retried_after_a_500(
    client,
    fake_twilio,
    twilio_leg,
    sent,
    stored_signals,
    django_capture_on_commit_callbacks,
):
    sid = "RE" + "b" * 32
    fake_twilio.recordings[sid] = two_channel_wav()
    url = f"{fake_twilio.url}/2010-04-01/Accounts/{ACCOUNT_SID}/Recordings/{sid}"
    with django_capture_on_commit_callbacks(execute=True):
        assert recording_callback(client, twilio_leg, url).status_code == 204
    call_id = twilio_leg.call_id
    assert sent == [call_id]
    link = Call.objects.get(pk=call_id).recording_url
    assert link.endswith(".wav")  # the service's own link, playing the copy once stored
    assert client.get(link.removeprefix(HOST)).status_code == 503  # being stored
    assert Recording.objects.get(call_id=call_id).source_url == f"{url}.wav"

    fake_twilio.fail_next(500, message="Internal Server Error")
    with pytest.raises(media.RecordingNotYetStored):
        media.recording_store(call_id=call_id)
    recording = Recording.objects.get(call_id=call_id)
    assert (recording.status, recording.tries) == (RecordingStatus.PENDING, 1)
    assert recording.reason == "RecordingNotYetStored: Twilio answered 500"

    assert media.recording_store(call_id=call_id) == RecordingStatus.STORED
    recording.refresh_from_db()
    assert (recording.channels, recording.sample_rate, recording.seconds) == (
        2,
        8000,
        2.0,
    )
    # Ours is kept: Twilio's copy is to be deleted (the account redacts by default).
    (deletion,) = Effect.objects.filter(kind="calls.provider_recording_delete")
    assert deletion.params["source_url"] == f"{url}.wav"
    assert recording.audio.read() == fake_twilio.recordings[sid]
    played = client.get(link.removeprefix(HOST))
    assert played.status_code == 200
    assert b"".join(played.streaming_content) == fake_twilio.recordings[sid]
    assert stored_signals == [call_id]
    fetches = [r for r in fake_twilio.requests if r.method == "GET"]
    # Both channels asked for explicitly, whatever the account's default download is.
    media_path = (
        f"/2010-04-01/Accounts/{ACCOUNT_SID}/Recordings/{sid}.wav?RequestedChannels=2"
    )
    assert [(r.path, r.auth) for r in fetches] == [
        (media_path, (ACCOUNT_SID, AUTH_TOKEN))
    ] * 2


@pytest.mark.urls("tests.calls.twilio_urls")
def test_a_twilio_download_refused_for_its_credentials_fails_at_once(
    client, fake_twilio, twilio_leg, sent, settings
):
    sid = "RE" + "b" * 32
    fake_twilio.recordings[sid] = two_channel_wav()
    url = f"{fake_twilio.url}/2010-04-01/Accounts/{ACCOUNT_SID}/Recordings/{sid}"
    assert recording_callback(client, twilio_leg, url).status_code == 204
    settings.TWILIO_AUTH_TOKEN = "not-the-token"

    assert media.recording_store(call_id=twilio_leg.call_id) == RecordingStatus.FAILED
    recording = Recording.objects.get(call_id=twilio_leg.call_id)
    assert (recording.tries, recording.reason) == (
        1,
        "Twilio refused the download: 401",
    )


# --- speech ---------------------------------------------------------------------------------


def test_conversation_audio_is_two_channels_fitted_to_the_call_and_leaves_out_what_did_not_fit():
    script = conversation_script(
        Facts(agent_name="Avery Lopez", dealer="Red Rock Motors", first_name="Jane"),
        seed=7,
    )
    whole = speech.conversation_audio(script, seconds=90)
    with wave.open(io.BytesIO(whole.wav)) as audio:
        assert (audio.getnchannels(), audio.getframerate(), audio.getnframes()) == (
            2,
            8000,
            90 * 8000,
        )
    assert whole.seconds == 90
    assert [s.speaker for s in whole.spoken] == [turn.speaker for turn in script.turns]

    short = speech.conversation_audio(script, seconds=6)
    assert short.seconds == 6
    assert 0 < len(short.spoken) < len(script.turns)
    assert [s.text for s in short.spoken] == [
        t.text for t in script.turns[: len(short.spoken)]
    ]
    assert all(s.end <= 6 for s in short.spoken)


def test_the_simulators_recording_is_what_a_phone_line_carries(settings):
    """Two channels at 8 kHz, nothing above the phone band's 3.4 kHz, every sample one
    that G.711 µ-law can carry: what Twilio's WAV recordings hold."""
    script = conversation_script(
        Facts(agent_name="Avery Lopez", dealer="Red Rock Motors", first_name="Jane"),
        seed=3,
    )
    recorded = speech.conversation_audio(script, seconds=30)
    with wave.open(io.BytesIO(recorded.wav)) as audio:
        assert (audio.getnchannels(), audio.getframerate(), audio.getsampwidth()) == (
            2,
            8000,
            2,
        )
        pcm = np.frombuffer(audio.readframes(audio.getnframes()), "<i2").reshape(-1, 2)
    assert np.isin(pcm, MULAW_GRID).all()
    for channel in (0, 1):
        power = np.abs(np.fft.rfft(pcm[:, channel].astype(np.float64))) ** 2
        frequencies = np.fft.rfftfreq(len(pcm), 1 / 8000)
        # µ-law's quantisation noise is white, about 40 dB under the speech; the speech
        # itself stops at 3.4 kHz.
        assert power[frequencies > 3500].sum() < 1e-3 * power.sum()
        assert power[frequencies < 200].sum() < 1e-3 * power.sum()
    # Speech on both sides, not noise.
    assert rms(pcm[:, 0]) > 100
    assert rms(pcm[:, 1]) > 100


def test_the_simulator_records_16_khz_speech_when_asked(settings):
    settings.SIMULATOR_RECORDING_RATE = 16000
    script = conversation_script(
        Facts(agent_name="Avery Lopez", dealer="Red Rock Motors", first_name="Jane"),
        seed=3,
    )
    recorded = speech.conversation_audio(script, seconds=30)
    with wave.open(io.BytesIO(recorded.wav)) as audio:
        assert (audio.getnchannels(), audio.getframerate()) == (2, 16000)
        pcm = np.frombuffer(audio.readframes(audio.getnframes()), "<i2").reshape(-1, 2)
    power = np.abs(np.fft.rfft(pcm[:, 0].astype(np.float64))) ** 2
    frequencies = np.fft.rfftfreq(len(pcm), 1 / 16000)
    assert power[frequencies > 4000].sum() > 1e-3 * power.sum()  # the whole band
