"""A card number silenced in a recording kept on an S3-compatible store (moto's server on
loopback): the transcription reads the recording back from the bucket, and the object is
rewritten through the storage API, one object under the same name, silenced."""

from __future__ import annotations

import io
import wave

import numpy as np
import pytest

from calls.models import Recording
from core.models import Effect
from core.outbox import effect_run
from insights.models import Transcription
from insights.services import transcription_run
from tests.insights.conftest import stored, wav_of
from tests.insights.test_redaction import card_engine  # noqa: F401 (a fixture)

pytestmark = pytest.mark.django_db


def lead_side(wav: bytes) -> tuple[np.ndarray, int]:
    with wave.open(io.BytesIO(wav)) as audio:
        rate = audio.getframerate()
        pcm = np.frombuffer(audio.readframes(audio.getnframes()), "<i2")
    return pcm.reshape(-1, 2)[:, 1], rate


@pytest.mark.usefixtures("card_engine")  # the agent asks, the lead reads a card out
def test_the_card_number_is_silenced_in_the_object_in_the_bucket(
    whisper, call, bucket, django_capture_on_commit_callbacks
):
    recording = stored(call, seconds=10, wav=wav_of(10, agent=0.3, lead=0.3))
    [key] = bucket.keys()
    assert key == f"{bucket.prefix}/{recording.audio.name}"
    Transcription.objects.create(call=call)
    with django_capture_on_commit_callbacks():
        transcription_run(call_id=call.pk)  # reads the recording back from the bucket

    (effect,) = Effect.objects.filter(kind="calls.recording_silence")
    effect_run(effect_id=effect.pk)

    assert bucket.keys() == [key]  # rewritten under its name, nothing left beside it
    assert Recording.objects.get(pk=recording.pk).audio.name == recording.audio.name
    lead, rate = lead_side(bucket.read(key))
    assert not lead[int(4.5 * rate) : int(7.5 * rate)].any()  # silenced
    assert lead[int(1 * rate) : int(4 * rate)].any()  # the rest kept
    assert lead[int(8 * rate) :].any()
