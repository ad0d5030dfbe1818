"""Speech for the simulator's recordings: a conversation script spoken offline by
espeak-ng, the agent on the left channel and the lead on the right, laid out on the call's
duration, and recorded as a carrier records a call (``recorded_wav``: 8 kHz telephone audio
unless ``SIMULATOR_RECORDING_RATE`` asks for 16 kHz).

espeak-ng comes from the registry (``espeakng-loader`` ships the library and its voice
data), so nothing is installed from the system and nothing reaches the network. It is
driven through its C interface (``speak_lib.h``): synchronous synthesis into a callback
that collects 16-bit samples at the library's own rate (22,050 Hz), resampled here to
``RATE``. The library is not thread-safe: one synthesis at a time per process.
"""

from __future__ import annotations

import ctypes
import threading
from dataclasses import dataclass
from functools import cache
from typing import Any

import numpy as np
from django.conf import settings

from calls.audio import TELEPHONE_RATE, resample, telephone, wav_bytes
from calls.telephony.conversation import Script, Turn
from core.priority import yield_cpu_to_calls

RATE = (
    16_000  # samples a second of the speech as made (the recording's: ``recorded_wav``)
)
WORDS_PER_MINUTE = 150  # clearest to speech-to-text (tried 150 and 175)
FASTEST = 260  # words a minute: faster than this is no longer understood
GAP = 0.6  # seconds between turns
LEAD_IN = 0.5
# Seconds of speech per character of text at WORDS_PER_MINUTE, measured on the
# simulator's scripts (0.069 to 0.082, mean 0.074, over 40 conversations); the estimate
# errs long so the speech is not quickened, and the call hangs up after its goodbye.
SECONDS_PER_CHARACTER = 0.08
HANG_UP_AFTER = 1.5
# The voices the shipped tiny.en model understands best (makes and models included).
VOICES = {"agent": "en-us+m3", "lead": "en"}
CHANNEL = {"agent": 0, "lead": 1}

_AUDIO_OUTPUT_SYNCHRONOUS = 2
_CHARS_UTF8 = 1
_RATE_PARAMETER = 1
_SYNTH_CALLBACK = ctypes.CFUNCTYPE(
    ctypes.c_int, ctypes.POINTER(ctypes.c_short), ctypes.c_int, ctypes.c_void_p
)
_lock = threading.Lock()


class SpeechUnavailable(RuntimeError):
    """espeak-ng could not be loaded or could not speak."""


@dataclass(frozen=True)
class Spoken:
    """A turn as it sounds in the recording: seconds from its start."""

    speaker: str
    text: str
    start: float
    end: float

    def as_dict(self) -> dict[str, Any]:
        return {
            "speaker": self.speaker,
            "text": self.text,
            "start": round(self.start, 2),
            "end": round(self.end, 2),
        }


@dataclass(frozen=True)
class Recording:
    wav: bytes
    seconds: float
    spoken: tuple[Spoken, ...]  # what the audio carries, in order: the ground truth


class _Espeak:
    def __init__(self) -> None:
        try:
            import espeakng_loader

            self.lib = ctypes.CDLL(espeakng_loader.get_library_path())
            data = espeakng_loader.get_data_path().encode()
        except (ImportError, OSError, RuntimeError) as error:
            raise SpeechUnavailable(f"espeak-ng is not available: {error}") from error
        self.lib.espeak_Initialize.restype = ctypes.c_int
        self.lib.espeak_Initialize.argtypes = [
            ctypes.c_int,
            ctypes.c_int,
            ctypes.c_char_p,
            ctypes.c_int,
        ]
        self.rate = self.lib.espeak_Initialize(_AUDIO_OUTPUT_SYNCHRONOUS, 0, data, 0)
        if self.rate <= 0:
            raise SpeechUnavailable("espeak-ng did not initialise")
        self.lib.espeak_SetVoiceByName.argtypes = [ctypes.c_char_p]
        self.lib.espeak_SetVoiceByName.restype = ctypes.c_int
        self.lib.espeak_SetParameter.argtypes = [
            ctypes.c_int,
            ctypes.c_int,
            ctypes.c_int,
        ]
        self.lib.espeak_Synth.argtypes = [
            ctypes.c_void_p,
            ctypes.c_size_t,
            ctypes.c_uint,
            ctypes.c_int,
            ctypes.c_uint,
            ctypes.c_uint,
            ctypes.POINTER(ctypes.c_uint),
            ctypes.c_void_p,
        ]
        self._chunks: list[np.ndarray] = []
        self._callback = _SYNTH_CALLBACK(self._collect)  # kept alive with the object
        self.lib.espeak_SetSynthCallback(self._callback)

    def _collect(self, samples: Any, count: int, events: Any) -> int:
        if count > 0:
            self._chunks.append(np.ctypeslib.as_array(samples, shape=(count,)).copy())
        return 0

    def say(self, text: str, *, voice: str, words_per_minute: int) -> np.ndarray:
        """The text spoken, as float samples at ``RATE``."""
        self._chunks = []
        if self.lib.espeak_SetVoiceByName(voice.encode()) != 0:
            # Otherwise the previous voice would speak, unnoticed.
            raise SpeechUnavailable(f"espeak-ng has no voice {voice!r}")
        self.lib.espeak_SetParameter(_RATE_PARAMETER, words_per_minute, 0)
        encoded = text.encode() + b"\0"
        status = self.lib.espeak_Synth(
            encoded, len(encoded), 0, 0, 0, _CHARS_UTF8, None, None
        )
        if status != 0:
            raise SpeechUnavailable(f"espeak-ng could not speak (status {status})")
        native = (
            np.concatenate(self._chunks).astype(np.float32) / 32768
            if self._chunks
            else np.zeros(0, np.float32)
        )
        return resample(native, self.rate, RATE)


@cache
def _espeak() -> _Espeak:
    return _Espeak()


def speak(turns: tuple[Turn, ...], *, words_per_minute: int) -> list[np.ndarray]:
    yield_cpu_to_calls()
    with _lock:
        engine = _espeak()
        return [
            engine.say(
                turn.text,
                voice=VOICES.get(turn.speaker, "en-us"),
                words_per_minute=words_per_minute,
            )
            for turn in turns
        ]


def say(text: str, *, voice: str, words_per_minute: int) -> np.ndarray:
    """``text`` spoken by an espeak-ng voice (``"en-gb-scotland"``, ``"en-us+f2"``), as
    float samples at ``RATE``: for audio other than the simulator's (the evaluation set)."""
    yield_cpu_to_calls()
    with _lock:
        return _espeak().say(text, voice=voice, words_per_minute=words_per_minute)


def seconds_to_say(script: Script) -> float:
    """About how long ``script`` takes to say at ``WORDS_PER_MINUTE`` with its pauses
    and the hang-up: the simulated call's talk time, estimated without synthesising."""
    characters = sum(len(turn.text) for turn in script.turns)
    return (
        LEAD_IN
        + characters * SECONDS_PER_CHARACTER
        + len(script.turns) * GAP
        + HANG_UP_AFTER
    )


def conversation_audio(script: Script, *, seconds: float) -> Recording:
    """The script spoken on two channels, ``seconds`` long (at least as long as its first
    turn). Speech is quickened (up to ``FASTEST``) to fit; turns that still do not fit are
    not said (the call ended first), and are left out of ``spoken``. The whisper is not in
    it: it is played to the agent before the lead is dialed, and a lead leg's recording
    starts when the lead answers (CONTRACT.md: not part of the transcript)."""
    turns = script.turns
    pace = WORDS_PER_MINUTE
    sounds = speak(turns, words_per_minute=pace)
    needed = LEAD_IN + sum(len(s) / RATE + GAP for s in sounds)
    if needed > seconds and pace < FASTEST:
        pace = min(FASTEST, int(pace * needed / max(seconds, 1)) + 1)
        sounds = speak(turns, words_per_minute=pace)
    total = max(int(seconds * RATE), 1)
    channels = np.zeros((total, 2), np.float32)
    spoken: list[Spoken] = []
    at = LEAD_IN
    spare = max(0.0, seconds - (LEAD_IN + sum(len(s) / RATE + GAP for s in sounds)))
    pause = GAP + min(spare / max(len(sounds), 1), 2.0)  # a long call: longer pauses
    for turn, sound in zip(turns, sounds, strict=True):
        start = int(at * RATE)
        if start + len(sound) > total:
            break
        channels[start : start + len(sound), CHANNEL.get(turn.speaker, 0)] = sound
        spoken.append(Spoken(turn.speaker, turn.text, at, at + len(sound) / RATE))
        at += len(sound) / RATE + pause
    return Recording(recorded_wav(channels), total / RATE, tuple(spoken))


def recorded_wav(channels: np.ndarray) -> bytes:
    """The two channels (float at ``RATE``) as the recording keeps them: by default what a
    carrier records (``SIMULATOR_RECORDING_RATE`` 8000: 8 kHz, 300-3400 Hz, through µ-law,
    stored as 16-bit PCM like Twilio's WAV), so transcription meets telephone audio; with
    16000, the speech as synthesised."""
    if settings.SIMULATOR_RECORDING_RATE == TELEPHONE_RATE:
        return wav_bytes(telephone(channels, RATE), TELEPHONE_RATE)
    return wav_bytes(channels, RATE)
