"""Speak the evaluation set to two-channel WAVs (agent on channel 0, lead on channel 1):
``NAME.16k.wav`` (16 kHz 16-bit PCM, full band) and ``NAME.8k.wav`` (telephone audio:
8 kHz, 300-3400 Hz, G.711 µ-law codes in a format-7 WAV, as some carriers keep them).

Voices and paces are unlike the simulator's (``en-us+m3`` and ``en`` at 150 words a
minute, the voices tiny.en hears best): a different pair for each conversation, accents
and synthesisers (klatt) included, 140 to 190 words a minute, pauses that vary.

    nice -n 10 .venv/bin/python -m bench.eval.speak [OUT_DIR] [--calls DIR]

OUT_DIR: bench/eval/audio by default; DIR: the calls to speak, ``conversations/`` by
default (``--calls bench/eval/heldback`` speaks the held-back set, to its own OUT_DIR).
"""

from __future__ import annotations

import argparse
import random
from pathlib import Path

import numpy as np

from bench.eval import django_setup
from bench.eval.conversations import HERE, Conversation, load
from calls.audio import mulaw_wav_bytes, telephone, wav_bytes
from calls.telephony.speech import RATE, say

OUT = Path(__file__).resolve().parent / "audio"
LEAD_IN = 0.7
# (agent voice, words a minute), (lead voice, words a minute): one pair a conversation.
VOICES = (
    (("en-gb-scotland", 165), ("en-us+f2", 180)),
    (("en-us+klatt3", 150), ("en-029+m5", 170)),
    (("en-gb-x-rp+m7", 175), ("en-gb-scotland+f3", 160)),
    (("en-us+f4", 185), ("en-us-nyc+m2", 145)),
    (("en-029+m4", 170), ("en-gb-x-rp+f2", 185)),
    (("en-us+f2", 160), ("en+klatt", 175)),
    (("en-gb-x-gbclan+m6", 155), ("en-us+Annie", 165)),
    (("en-gb-scotland+f4", 180), ("en-gb-x-rp+f5", 150)),
    (("en-us-nyc+m7", 190), ("en-us+klatt4", 170)),
    (("en-us+Annie", 165), ("en-gb-x-gbcwmd+m4", 155)),
    (("en+klatt2", 170), ("en-us+f3", 190)),
    (("en-gb-x-rp+m2", 150), ("en-029+f2", 160)),
    (("en-gb-x-gbcwmd+m6", 175), ("en-gb-scotland+f5", 180)),
    (("en-us+m5", 185), ("en-us+f5", 150)),
    (("en-029+m7", 160), ("en+klatt3", 165)),
    (("en-us+Andy", 170), ("en-gb-x-gbclan+m2", 145)),
    (("en-gb-x-rp+f4", 155), ("en-us-nyc+f2", 185)),
    (("en-us+f3", 190), ("en-gb-x-rp+m4", 170)),
    (("en-gb-scotland+m4", 145), ("en-us+m6", 175)),
    (("en-us-nyc+f4", 175), ("en-029+m2", 155)),
)
CHANNEL = {"agent": 0, "lead": 1}


def conversation_audio(conversation: Conversation, index: int) -> np.ndarray:
    """The conversation's two channels, float at ``RATE``."""
    rng = random.Random(conversation.name)
    agent_voice, lead_voice = VOICES[index % len(VOICES)]
    voice = {"agent": agent_voice, "lead": lead_voice}
    pieces: list[tuple[int, float, np.ndarray]] = []  # channel, start, samples
    at = LEAD_IN
    last_start = last_end = 0.0
    for line in conversation.lines:
        if line.speaker == "hold":
            at += line.seconds
            continue
        if line.speaker == "tone":
            n = int(line.seconds * RATE)
            beep = 0.3 * np.sin(2 * np.pi * 1000 * np.arange(n) / RATE)
            pieces.append((1, at, beep.astype(np.float32)))
            at += line.seconds + 0.3
            continue
        name, pace = voice[line.speaker]
        sound = say(line.text, voice=name, words_per_minute=pace)
        start = at
        if line.over:  # talks over the end of the other side's turn
            start = max(last_start + 0.5, last_end - rng.uniform(0.8, 1.5))
        pieces.append((CHANNEL[line.speaker], start, sound))
        last_start, last_end = start, start + len(sound) / RATE
        at = max(at, last_end) + rng.uniform(0.25, 1.1)
    total = int((at + 0.5) * RATE)
    channels = np.zeros((total, 2), np.float32)
    for channel, start, sound in pieces:
        first = int(start * RATE)
        channels[first : first + len(sound), channel] += sound
    return channels


def main(out: Path = OUT, calls: Path = HERE) -> None:
    django_setup()
    out.mkdir(parents=True, exist_ok=True)
    for index, conversation in enumerate(load(calls)):
        channels = conversation_audio(conversation, index)
        (out / f"{conversation.name}.16k.wav").write_bytes(wav_bytes(channels, RATE))
        line = telephone(channels, RATE)
        (out / f"{conversation.name}.8k.wav").write_bytes(mulaw_wav_bytes(line, 8000))
        print(f"{conversation.name}: {len(channels) / RATE:.1f} s", flush=True)


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description="Speak the evaluation set to WAVs.")
    parser.add_argument("out", nargs="?", type=Path, default=OUT)
    parser.add_argument("--calls", type=Path, default=HERE, help="the calls to speak")
    arguments = parser.parse_args()
    main(arguments.out, arguments.calls)
