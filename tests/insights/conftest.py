from functools import cache

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
