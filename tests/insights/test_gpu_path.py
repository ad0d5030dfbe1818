"""Issue 38, the GPU path: on ``cuda`` the engine loads the model in half precision and
decodes through faster-whisper's batched pipeline; on the CPU int8 and no batches. The
device itself is not here: the choice is checked against a stand-in model, and the batched
pipeline with the engine's own options against the real library on the CPU."""

from __future__ import annotations

from types import SimpleNamespace

import numpy as np
import pytest

from calls.telephony.speech import RATE, say
from insights import engines


def loaded(monkeypatch) -> list[dict]:
    """The settings each ``whisper_model`` call asked for (a stand-in model answers)."""
    asked: list[dict] = []

    class Model:
        def transcribe(self, audio, **options):
            return iter([]), SimpleNamespace(language="en")

    def model(**settings):
        asked.append(settings)
        return Model()

    monkeypatch.setattr(engines, "whisper_model", model)
    return asked


def test_on_a_gpu_the_model_is_half_precision_and_decoded_in_batches(monkeypatch):
    asked = loaded(monkeypatch)
    batched: list[dict] = []

    class Pipeline:
        def __init__(self, model):
            self.model = model

        def transcribe(self, audio, **options):
            batched.append(options)
            return iter([]), SimpleNamespace(language="en")

    monkeypatch.setattr("faster_whisper.BatchedInferencePipeline", Pipeline)
    engine = engines.FasterWhisperEngine(model="tiny", device="cuda")

    engine.transcribe(np.zeros(RATE, np.float32))

    assert asked[0]["compute_type"] == "float16"
    assert batched[0]["batch_size"] == engines.FasterWhisperEngine.GPU_BATCH_SIZE
    assert batched[0]["temperature"] == engines.FasterWhisperEngine.TEMPERATURES


def test_on_the_cpu_the_model_is_int8_and_not_batched(monkeypatch, settings):
    asked = loaded(monkeypatch)
    settings.TRANSCRIPTION_DEVICE = "cpu"
    settings.TRANSCRIPTION_COMPUTE_TYPE = ""
    settings.TRANSCRIPTION_BATCH_SIZE = ""
    engine = engines.FasterWhisperEngine.from_settings()

    engine.transcribe(np.zeros(RATE, np.float32))

    assert (engine.compute_type, engine.batch_size) == ("int8", 0)
    assert asked[0]["compute_type"] == "int8"


def test_settings_choose_the_precision_and_the_batch(settings):
    settings.TRANSCRIPTION_DEVICE = "cuda"
    settings.TRANSCRIPTION_COMPUTE_TYPE = "int8_float16"
    settings.TRANSCRIPTION_BATCH_SIZE = "0"
    engine = engines.FasterWhisperEngine.from_settings()
    assert (engine.compute_type, engine.batch_size) == ("int8_float16", 0)


@pytest.mark.slow
def test_the_batched_pipeline_takes_the_engines_options_and_hears_speech():
    """faster-whisper's batched pipeline, run for real on the CPU with the shipped tiny
    model: every option the engine passes is one it takes, and it hears the words."""
    speech = say(
        "Hello, this is Siobhan from Lakeside Honda calling about the CR-V.",
        voice="en-us",
        words_per_minute=150,
    )
    audio = np.concatenate([np.zeros(RATE // 2, np.float32), speech])
    engine = engines.FasterWhisperEngine(batch_size=2)

    said = " ".join(segment.text for segment in engine.transcribe(audio)).lower()

    # Sampled fallbacks may vary the end of the sentence; its opening is decoded greedily.
    assert said.startswith("hello, this is")
