"""Issue 38: the readers take a recording in every form a carrier keeps it: 16-bit PCM or
G.711 µ-law (WAVE format 7), mono or two channels, 8 or 16 kHz."""

import io

import numpy as np
import pytest

from calls import audio
from insights import engines


def tones(rate: int, channels: int, seconds: float = 2.0) -> np.ndarray:
    """A 440 Hz tone on channel 0, a 1000 Hz tone on channel 1 (when there is one)."""
    t = np.arange(int(rate * seconds)) / rate
    columns = [0.5 * np.sin(2 * np.pi * 440 * t), 0.3 * np.sin(2 * np.pi * 1000 * t)]
    return np.stack(columns[:channels], axis=1).astype(np.float32)


def strongest_hz(samples: np.ndarray) -> float:
    spectrum = np.abs(np.fft.rfft(samples))
    return float(np.fft.rfftfreq(len(samples), 1 / engines.RATE)[spectrum.argmax()])


@pytest.mark.parametrize("rate", [8000, 16000])
@pytest.mark.parametrize("channels", [1, 2])
@pytest.mark.parametrize("coding", ["pcm", "mulaw"])
def test_read_wav_reads_pcm_and_mulaw_at_8_and_16_khz_mono_and_stereo(
    rate, channels, coding
):
    samples = tones(rate, channels)
    write = audio.wav_bytes if coding == "pcm" else audio.mulaw_wav_bytes
    read = engines.read_wav(write(samples, rate))

    assert read.seconds == pytest.approx(2.0)
    assert len(read.lead) == 2 * engines.RATE  # Whisper's 16 kHz whatever came in
    if channels == 1:
        assert read.agent is None  # a mono recording is read as the lead's side
        assert strongest_hz(read.lead) == pytest.approx(440, abs=1)
    else:
        assert read.agent is not None
        assert strongest_hz(read.agent) == pytest.approx(440, abs=1)
        assert strongest_hz(read.lead) == pytest.approx(1000, abs=1)
        # Its level kept (linear interpolation softens 1 kHz at 8 kHz by about 5 %).
        assert np.sqrt(np.mean(read.lead**2)) == pytest.approx(
            0.3 / np.sqrt(2), rel=0.1
        )


def test_a_mulaw_wav_round_trips_on_the_mulaw_grid():
    line = audio.telephone(tones(16000, 2), 16000)
    samples, rate = audio.wav_samples(audio.mulaw_wav_bytes(line, 8000))
    assert rate == 8000
    assert np.array_equal(samples, line)
    assert np.isin(np.round(samples * 32768), audio.MULAW_GRID).all()


def test_read_wav_refuses_what_is_not_a_wav_it_reads():
    with pytest.raises(engines.PermanentError, match="unreadable audio"):
        engines.read_wav(b"RIFF\x00\x00\x00\x00WAVEjunk")
    eight_bit_pcm = audio.wav_bytes(tones(8000, 1), 8000)
    eight_bit_pcm = eight_bit_pcm[:34] + b"\x08\x00" + eight_bit_pcm[36:]
    with pytest.raises(engines.PermanentError, match="unreadable audio"):
        engines.read_wav(eight_bit_pcm)


@pytest.mark.parametrize("write", [audio.wav_bytes, audio.mulaw_wav_bytes])
def test_the_media_worker_describes_pcm_and_mulaw_wavs(write):
    from calls import media

    described = media._described(io.BytesIO(write(tones(8000, 2), 8000)))
    assert (described.channels, described.sample_rate, described.seconds) == (
        2,
        8000,
        2.0,
    )
    assert described.file.read(4) == b"RIFF"  # ready to be stored from its start
    with pytest.raises(media._Refused, match="not a WAV file"):
        media._described(io.BytesIO(b"ID3\x04 an mp3"))
