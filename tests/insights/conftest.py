import io
import wave
from functools import cache

import numpy as np
import pytest
from django.core.files.base import ContentFile
from django.utils import timezone

from calls.models import AttemptOutcome, CallAttempt, Leg, Recording, RecordingStatus
from calls.telephony.conversation import Facts, conversation_script
from calls.telephony.speech import conversation_audio
from tests.accounts.factories import AccountFactory
from tests.scoring.factories import CallFactory
from tests.users.factories import UserFactory

SECONDS = 75


@cache
def spoken(facts: Facts, seed: int):
    """A script and its real speech (espeak-ng), made once per test session."""
    script = conversation_script(facts, seed=seed)
    return script, conversation_audio(script, seconds=SECONDS)


def record(call, *, seed: int = 7, wav: bytes | None = None) -> Recording:
    """A stored recording of the call's conversation, in the service's storage."""
    facts = Facts.of(call, agent_name=call.agent.get_full_name())
    script, audio = spoken(facts, seed)
    leg = CallAttempt.objects.create(
        call=call,
        leg=Leg.LEAD,
        number=call.phone,
        provider="simulator",
        outcome=AttemptOutcome.ANSWERED,
        duration=SECONDS,
    )
    recording = Recording(
        call=call,
        attempt=leg,
        status=RecordingStatus.STORED,
        seconds=audio.seconds,
        channels=2,
        sample_rate=16_000,
        script={
            "turns": [s.as_dict() for s in audio.spoken],
            "ending": script.ending,
            "appointment": script.appointment,
            "met": sorted(script.met),
        },
        stored_at=timezone.now(),
    )
    recording.audio.save(
        f"call-{call.pk}.wav", ContentFile(wav or audio.wav), save=False
    )
    recording.save()
    return recording


def wav_of(
    seconds: float, *, agent: float = 0.0, lead: float = 0.0, rate: int = 16_000
) -> bytes:
    """A real two-channel 16-bit WAV: on each side a 300 Hz tone at that amplitude (0 is
    digital silence). ``seconds`` 0 is a header with no audio."""
    frames = int(seconds * rate)
    tone = np.sin(2 * np.pi * 300 * np.arange(frames) / rate)
    pcm = np.zeros((frames, 2), "<i2")
    pcm[:, 0] = (32767 * agent * tone).astype("<i2")
    pcm[:, 1] = (32767 * lead * tone).astype("<i2")
    out = io.BytesIO()
    with wave.open(out, "wb") as audio:
        audio.setnchannels(2)
        audio.setsampwidth(2)
        audio.setframerate(rate)
        audio.writeframes(pcm.tobytes())
    return out.getvalue()


def stored(call, *, seconds: float, wav: bytes = b"") -> Recording:
    """The call's recording, stored (with ``wav`` as its file when given), as the media
    worker leaves it."""
    leg = CallAttempt.objects.create(
        call=call,
        leg=Leg.LEAD,
        number=call.phone,
        provider="simulator",
        outcome=AttemptOutcome.ANSWERED,
        duration=round(seconds),
    )
    recording = Recording(
        call=call,
        attempt=leg,
        status=RecordingStatus.STORED,
        seconds=seconds,
        channels=2,
        sample_rate=16_000,
        stored_at=timezone.now(),
    )
    if wav:
        recording.audio.save(f"call-{call.pk}.wav", ContentFile(wav), save=False)
    recording.save()
    return recording


@pytest.fixture
def account():
    return AccountFactory(name="Demo Motors North", timezone="America/Denver")


@pytest.fixture
def call(account):
    agent = UserFactory(account=account, first_name="Alex", last_name="Kim")
    return CallFactory(
        account=account,
        agent=agent,
        first_name="Sam",
        last_name="Rivera",
        called_on_year="2025",
        called_on_make="Toyota",
        called_on_model="RAV4",
        current_year="2016",
        current_make="Honda",
        current_model="Civic",
        recording_url="",
        transcription="",
        summary="",
    )


@pytest.fixture
def whisper(settings):
    settings.TRANSCRIPTION_BACKEND = "faster_whisper"
    settings.TRANSCRIPTION_MODEL = ""
    settings.TRANSCRIPTION_DEVICE = "cpu"
    settings.TRANSCRIPTION_COMPUTE_TYPE = "int8"
    settings.TRANSCRIPTION_MAX_TRIES = 3
    settings.SUMMARY_BACKEND = "builtin"
    return settings
