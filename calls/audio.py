"""Audio as the recordings carry it: float samples in -1..1, resampled, written as 16-bit
PCM WAV, and read back from a WAV of any form a recording comes in. Used by the
simulator's speech and by speech-to-text (insights), so both agree on the format.

A carrier records a call as a phone line carries it (``telephone``): 8 kHz, only the
300-3400 Hz band, through G.711 µ-law. Twilio's WAV recordings are that audio decoded to
16-bit PCM at 8 kHz; other carriers keep the µ-law codes themselves (WAVE format 7, which
Python's ``wave`` module refuses), so the reader here parses the RIFF header itself.
"""

from __future__ import annotations

import io
import struct
import wave
from dataclasses import dataclass
from typing import IO

import numpy as np

TELEPHONE_RATE = 8_000
TELEPHONE_BAND = (300.0, 3400.0)  # Hz: what a phone line carries
_PCM, _MULAW, _EXTENSIBLE = 1, 7, 0xFFFE
_MULAW_BIAS, _MULAW_CLIP = 0x84, 32635


class WavError(ValueError):
    """The bytes are not a WAV this reader understands."""


def resample(samples: np.ndarray, source: int, target: int) -> np.ndarray:
    """``samples`` at ``source`` Hz, as float32 at ``target`` Hz, by linear interpolation:
    plenty to bring espeak's 22,050 Hz down to 16 kHz, which loses nothing of speech."""
    if source == target or not len(samples):
        return np.ascontiguousarray(samples, dtype=np.float32)
    length = round(len(samples) * target / source)
    positions = np.linspace(0, len(samples) - 1, length)
    return np.interp(positions, np.arange(len(samples)), samples).astype(np.float32)


def resample_band_limited(samples: np.ndarray, source: int, target: int) -> np.ndarray:
    """``samples`` (one channel) at ``source`` Hz as float32 at ``target`` Hz through
    libswresample (PyAV, a faster-whisper dependency): a windowed-sinc filter, streamed,
    so an hour-long channel is not held in memory twice over. Linear interpolation
    mirrors an 8 kHz line's band into 4-8 kHz when it upsamples; this does not. Not what
    transcription uses (``insights.engines.upsample`` says why): kept for bench/eval's
    comparison."""
    if source == target or not len(samples):
        return np.ascontiguousarray(samples, dtype=np.float32)
    import av

    resampler = av.AudioResampler(format="flt", layout="mono", rate=target)
    frame = av.AudioFrame.from_ndarray(
        np.ascontiguousarray(samples, dtype=np.float32).reshape(1, -1),
        format="flt",
        layout="mono",
    )
    frame.sample_rate = source
    pieces = resampler.resample(frame) + resampler.resample(None)
    out = np.concatenate([p.to_ndarray().reshape(-1) for p in pieces])
    length = round(len(samples) * target / source)
    return np.pad(out[:length], (0, max(0, length - len(out)))).astype(np.float32)


def mulaw_encode(samples: np.ndarray) -> np.ndarray:
    """Float samples (-1..1) as G.711 µ-law codes (uint8), as a carrier sends them."""
    linear = (np.clip(samples, -1, 1) * 32767).astype(np.int32)
    sign = np.where(linear < 0, 0x80, 0)
    magnitude = np.minimum(np.abs(linear), _MULAW_CLIP) + _MULAW_BIAS
    exponent = sum((magnitude >= (256 << k)).astype(np.int32) for k in range(7))
    mantissa = (magnitude >> (exponent + 3)) & 0x0F
    return (~(sign | (exponent << 4) | mantissa) & 0xFF).astype(np.uint8)


def mulaw_decode(codes: np.ndarray) -> np.ndarray:
    """G.711 µ-law codes as 16-bit linear samples (int16)."""
    inverted = ~codes.astype(np.int32) & 0xFF
    exponent = (inverted >> 4) & 0x07
    mantissa = inverted & 0x0F
    magnitude = (((mantissa << 3) + _MULAW_BIAS) << exponent) - _MULAW_BIAS
    return np.where(inverted & 0x80, -magnitude, magnitude).astype(np.int16)


MULAW_GRID = np.unique(mulaw_decode(np.arange(256)))  # the 255 values µ-law can carry


def telephone(samples: np.ndarray, rate: int) -> np.ndarray:
    """``samples`` (float at ``rate``: a 1-d array or a column per channel) as a phone
    line carries them: at 8 kHz, nothing outside 300-3400 Hz (cut in the frequency domain,
    which resamples in the same step), through µ-law and back. Float in -1..1, each value
    one a 16-bit WAV holds exactly (``MULAW_GRID / 32768``)."""
    frames = samples.reshape(-1, 1) if samples.ndim == 1 else samples
    length = round(len(frames) * TELEPHONE_RATE / rate)
    spectrum = np.fft.rfft(frames, axis=0)
    frequencies = np.fft.rfftfreq(len(frames), 1 / rate)
    spectrum *= _band_gain(frequencies)[:, None]
    kept = spectrum[: length // 2 + 1]
    line = np.fft.irfft(kept, n=length, axis=0) * (length / max(len(frames), 1))
    decoded = mulaw_decode(mulaw_encode(line)).astype(np.float32) / 32768
    return decoded.reshape(-1) if samples.ndim == 1 else decoded


def _band_gain(frequencies: np.ndarray) -> np.ndarray:
    """1 inside the phone band, 0 outside it, with raised-cosine edges 100 Hz wide
    inside the band: a brick wall would ring across the whole recording, into its
    silences."""
    low, high = TELEPHONE_BAND
    edge = 100.0
    rise = np.clip((frequencies - low) / edge, 0, 1)
    fall = np.clip((high - frequencies) / edge, 0, 1)
    return (0.5 - 0.5 * np.cos(np.pi * np.minimum(rise, fall))).astype(np.float64)


def wav_bytes(samples: np.ndarray, rate: int) -> bytes:
    """A 16-bit PCM WAV file of ``samples``: one channel (a 1-d array) or one column per
    channel. Samples on the 16-bit grid (``telephone``'s) are written exactly."""
    frames = samples if samples.ndim == 2 else samples.reshape(-1, 1)
    out = io.BytesIO()
    with wave.open(out, "wb") as wav:
        wav.setnchannels(frames.shape[1])
        wav.setsampwidth(2)
        wav.setframerate(rate)
        pcm = np.clip(np.round(frames * 32768), -32768, 32767).astype("<i2")
        wav.writeframes(pcm.tobytes())
    return out.getvalue()


def mulaw_wav_bytes(samples: np.ndarray, rate: int) -> bytes:
    """A G.711 µ-law WAV file (format 7, 8 bits a sample) of ``samples``."""
    frames = samples if samples.ndim == 2 else samples.reshape(-1, 1)
    data = mulaw_encode(frames).tobytes()
    channels = frames.shape[1]
    fmt = struct.pack(
        "<HHIIHHH", _MULAW, channels, rate, rate * channels, channels, 8, 0
    )
    body = (
        b"WAVE"
        + b"fmt "
        + struct.pack("<I", len(fmt))
        + fmt
        + b"fact"
        + struct.pack("<II", 4, len(frames))
        + b"data"
        + struct.pack("<I", len(data))
        + data
        + (b"\0" if len(data) % 2 else b"")
    )
    return b"RIFF" + struct.pack("<I", len(body)) + body


@dataclass(frozen=True)
class WavFormat:
    """A WAV's header: how its samples are coded and where they are."""

    channels: int
    rate: int
    encoding: str  # "pcm16" or "mulaw"
    frames: int
    data_offset: int  # bytes from the start of the file

    @property
    def seconds(self) -> float:
        return self.frames / self.rate


def wav_format(file: IO[bytes]) -> WavFormat:
    """The header of the WAV in ``file`` (read from its start; left anywhere): 16-bit
    PCM or µ-law, any number of channels. A data chunk that claims more than the file
    holds (a recorder that never went back to write its size) counts what is there."""
    file.seek(0, io.SEEK_END)
    size = file.tell()
    file.seek(0)
    riff = file.read(12)
    if len(riff) < 12 or riff[:4] != b"RIFF" or riff[8:12] != b"WAVE":
        raise WavError("not a RIFF WAVE file")
    fmt: tuple[int, int, int, int, int] | None = None
    while True:
        header = file.read(8)
        if len(header) < 8:
            raise WavError("no data chunk")
        kind, length = header[:4], struct.unpack("<I", header[4:])[0]
        if kind == b"fmt ":
            body = file.read(length)
            if len(body) < 16:
                raise WavError("a short fmt chunk")
            tag, channels, rate, _, align, bits = struct.unpack("<HHIIHH", body[:16])
            if tag == _EXTENSIBLE and len(body) >= 26:
                tag = struct.unpack("<H", body[24:26])[0]  # the sub-format's first two
            fmt = (tag, channels, rate, align, bits)
            file.seek(length % 2, io.SEEK_CUR)
        elif kind == b"data":
            if fmt is None:
                raise WavError("data before fmt")
            tag, channels, rate, align, bits = fmt
            if tag == _PCM and bits == 16:
                encoding = "pcm16"
            elif tag == _MULAW and bits == 8:
                encoding = "mulaw"
            else:
                raise WavError(f"unsupported coding: format {tag}, {bits}-bit")
            if channels < 1 or rate <= 0 or align != channels * bits // 8:
                raise WavError(f"unsupported layout: {channels} channels, {rate} Hz")
            offset = file.tell()
            length = min(length, size - offset)
            return WavFormat(channels, rate, encoding, length // align, offset)
        else:
            file.seek(length + length % 2, io.SEEK_CUR)


def wav_samples(data: bytes) -> tuple[np.ndarray, int]:
    """The samples of a WAV (16-bit PCM or µ-law) as float32, a column per channel, and
    their rate."""
    form = wav_format(io.BytesIO(data))
    width = 2 if form.encoding == "pcm16" else 1
    raw = data[
        form.data_offset : form.data_offset + form.frames * form.channels * width
    ]
    if form.encoding == "pcm16":
        samples = np.frombuffer(raw, dtype="<i2").astype(np.float32) / 32768
    else:
        codes = np.frombuffer(raw, dtype=np.uint8)
        samples = mulaw_decode(codes).astype(np.float32) / 32768
    return samples.reshape(-1, form.channels), form.rate
