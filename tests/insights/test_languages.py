"""The language a call is in: told per channel by a multilingual model among
``TRANSCRIPTION_LANGUAGES``, each channel transcribed in its language, recorded on the
call and shown on its page; a call in a language the rules do not read gets a summary that
says so and no suggestions (issue 38)."""

import json
import os
import subprocess
import sys
from io import StringIO

import numpy as np
import pytest
from django.core.management import call_command
from django.urls import reverse

from calls.audio import mulaw_wav_bytes, telephone
from calls.telephony.speech import RATE, say
from insights import engines
from insights.models import Transcription, TranscriptionStatus
from insights.services import transcription_run
from scoring.models import CallSuggestions
from tests.insights.conftest import record
from tests.users.factories import UserFactory

pytestmark = pytest.mark.django_db

# A Spanish-speaking lead and an agent who answers in Spanish (espeak-ng's Spanish voices).
SPANISH = (
    ("agent", "Hola, buenas tardes. ¿Hablo con Sam Rivera?"),
    ("lead", "Sí, soy yo. ¿Quién habla?"),
    ("agent", "Le llamo de Demo Motors, por la Toyota RAV4 que usted pidió."),
    ("lead", "Ah, sí, me interesa mucho. ¿Todavía la tienen en color rojo?"),
    ("agent", "Sí, tenemos una roja. ¿Quiere venir a verla mañana a las diez?"),
    ("lead", "Mañana a las diez está bien. Muchas gracias, hasta mañana."),
)
VOICES = {"agent": "es", "lead": "es-419+f2"}


def spanish_call_wav() -> bytes:
    """The conversation as a carrier records it: two channels, 8 kHz µ-law."""
    pieces, at = [], 0.7
    for side, text in SPANISH:
        sound = say(text, voice=VOICES[side], words_per_minute=160)
        pieces.append((0 if side == "agent" else 1, at, sound))
        at += len(sound) / RATE + 0.6
    channels = np.zeros((int((at + 0.5) * RATE), 2), np.float32)
    for channel, start, sound in pieces:
        first = int(start * RATE)
        channels[first : first + len(sound), channel] += sound
    return mulaw_wav_bytes(telephone(channels, RATE), 8000)


@pytest.fixture
def base(whisper):
    """The shipped multilingual model (the tests' default, tiny.en, hears English only)."""
    whisper.TRANSCRIPTION_SHIPPED_MODEL = "base"
    whisper.TRANSCRIPTION_LANGUAGES = ["en", "es"]
    return whisper


def test_a_multilingual_model_tells_each_channels_language(base, call):
    engine = engines.FasterWhisperEngine.from_settings()
    spanish = engines.read_wav(spanish_call_wav())
    english = engines.read_wav(record(call).audio.read())  # the simulator's call
    assert spanish.agent is not None
    assert english.agent is not None

    assert engine.language_of(spanish.lead, languages=["en", "es"]) == "es"
    assert engine.language_of(spanish.agent, languages=["en", "es"]) == "es"
    assert engine.language_of(english.lead, languages=["en", "es"]) == "en"
    assert engine.language_of(english.agent, languages=["en", "es"]) == "en"
    # Told among the configured languages only: Spanish speech with English alone is
    # English (the dealer's language first), and silence is the first language.
    assert engine.language_of(spanish.lead, languages=["en"]) == "en"
    assert engine.language_of(
        np.zeros(RATE * 5, np.float32), languages=["es", "en"]
    ) == ("es")


def test_an_english_only_model_hears_english_without_detecting(whisper, monkeypatch):
    engine = engines.FasterWhisperEngine.from_settings()  # tiny.en

    def never(*args, **kwargs):
        raise AssertionError("an English-only model cannot tell languages")

    model = engines.whisper_model(
        model=engine.model,
        device=engine.device,
        compute_type=engine.compute_type,
        download=False,
    )
    monkeypatch.setattr(type(model), "detect_language", never)
    spanish = engines.read_wav(spanish_call_wav())
    assert engine.language_of(spanish.lead, languages=["en", "es"]) == "en"


def test_a_spanish_call_is_transcribed_in_spanish_and_its_summary_says_so(
    base, call, client, monkeypatch
):
    record(call, wav=spanish_call_wav())
    Transcription.objects.create(call=call)
    asked = []
    transcribe = engines.FasterWhisperEngine.transcribe

    def spied(self, channel_audio, *, context=None, language="en"):
        asked.append(language)
        return transcribe(self, channel_audio, context=context, language=language)

    monkeypatch.setattr(engines.FasterWhisperEngine, "transcribe", spied)

    job = transcription_run(call_id=call.pk)

    assert job is not None
    assert job.status == TranscriptionStatus.DONE
    call.refresh_from_db()
    assert call.transcript_language == "es"
    # Each channel decoded as Spanish (the words of espeak-ng's Spanish at 8 kHz vary
    # too much from run to run, under sampled decoding, to be asserted).
    assert asked == ["es", "es"]
    assert call.transcript_turns
    assert call.summary == (
        "The call was in Spanish. Summaries are written from calls in English only: "
        "read the transcript."
    )
    # The rules read English: nothing is suggested from Spanish words.
    assert not CallSuggestions.objects.filter(call=call).exists()

    client.force_login(UserFactory(is_staff=True, is_superuser=True))
    page = client.get(reverse("pages:call-detail", args=[call.pk]))
    assert page.status_code == 200
    assert "Spoken in Spanish (told by the speech engine;" in page.content.decode()


def test_the_command_reports_the_language_it_heard(base, tmp_path):
    audio = tmp_path / "call.wav"
    audio.write_bytes(spanish_call_wav())
    context = tmp_path / "context.json"
    context.write_text(
        json.dumps(
            {
                "agent_name": "Alex Kim",
                "lead_first_name": "Sam",
                "lead_last_name": "Rivera",
                "dealer": "Demo Motors",
                "called_on": {"year": "2025", "make": "Toyota", "model": "RAV4"},
            }
        )
    )
    out = StringIO()
    call_command(
        "understand_recording", str(audio), "--context", str(context), stdout=out
    )
    understood = json.loads(out.getvalue())

    assert understood["language"] == "es"
    assert understood["conversation"] is True
    assert understood["summary"].startswith("The call was in Spanish.")
    assert understood["suggestions"]["categories"] == []
    assert understood["suggestions"]["appointment"] is None


def test_languages_that_are_not_codes_stop_the_service_at_start():
    started = subprocess.run(
        [sys.executable, "-c", "import django; django.setup()"],
        env={
            **os.environ,
            "DJANGO_SETTINGS_MODULE": "config.settings.test",
            "TRANSCRIPTION_LANGUAGES": "en,spanish",
        },
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert started.returncode != 0
    assert "TRANSCRIPTION_LANGUAGES must list codes such as en,es" in started.stderr
