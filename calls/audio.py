"""PCM audio as the recordings carry it: float samples in -1..1, resampled by linear
interpolation (plenty for speech) and written as 16-bit WAV. Used by the simulator's speech
and by speech-to-text (insights), so both agree on the format."""

from __future__ import annotations

import io
import wave

import numpy as np


def resample(samples: np.ndarray, source: int, target: int) -> np.ndarray:
    """``samples`` at ``source`` Hz, as float32 at ``target`` Hz."""
    if source == target or not len(samples):
        return np.ascontiguousarray(samples, dtype=np.float32)
    length = round(len(samples) * target / source)
    positions = np.linspace(0, len(samples) - 1, length)
    return np.interp(positions, np.arange(len(samples)), samples).astype(np.float32)


def wav_bytes(samples: np.ndarray, rate: int) -> bytes:
    """A 16-bit PCM WAV file of ``samples``: one channel (a 1-d array) or one column per
    channel."""
    frames = samples if samples.ndim == 2 else samples.reshape(-1, 1)
    out = io.BytesIO()
    with wave.open(out, "wb") as wav:
        wav.setnchannels(frames.shape[1])
        wav.setsampwidth(2)
        wav.setframerate(rate)
        wav.writeframes((np.clip(frames, -1, 1) * 32767).astype("<i2").tobytes())
    return out.getvalue()
