"""Recording links and the audio the simulator's links play.

A link carries a signed token naming the lead leg and a random nonce, so it cannot be
guessed from a call id and works for an integrator without a session. A link is good
while it is the call's current ``recording_url``: support revokes it by issuing a new
one (``calls.services.call_recording_reissue``, the call admin's "Revoke recording
links" action), which kills the old link at once.

The simulated audio lasts as long as the leg was answered. It is never held in memory:
any byte range of the WAV is computed from two one-second blocks of tone, so a player
can seek (HTTP Range) through a five-minute call at no cost.
"""

from __future__ import annotations

import math
import secrets
import struct
from collections.abc import Iterator
from functools import cache

from django.conf import settings
from django.core import signing
from django.urls import reverse

_SALT = "calls.recording"
RATE = 8000  # samples a second, 16-bit mono: a phone line's quality
BYTES_PER_SECOND = RATE * 2
HEADER_BYTES = 44
CHUNK = 64 * 1024
SHORTEST_SECONDS = 3


def recording_link(attempt_id: int) -> str:
    """A new public URL of the recording of a lead leg (each call gives a different link)."""
    token = signing.dumps({"a": attempt_id, "n": secrets.token_urlsafe(8)}, salt=_SALT)
    return f"{settings.PUBLIC_BASE_URL}{reverse('calls:recording', kwargs={'token': token})}"


def attempt_for_token(token: str) -> int | None:
    """The leg a token names, if its signature holds (links of either token shape)."""
    try:
        value = signing.loads(token, salt=_SALT)
        return int(value["a"] if isinstance(value, dict) else value)
    except (signing.BadSignature, ValueError, TypeError, KeyError):
        return None


def wav_size(seconds: int) -> int:
    return HEADER_BYTES + max(seconds, SHORTEST_SECONDS) * BYTES_PER_SECOND


def _header(data_bytes: int) -> bytes:
    return (
        b"RIFF"
        + struct.pack("<I", 36 + data_bytes)
        + b"WAVEfmt "
        + struct.pack("<IHHIIHH", 16, 1, 1, RATE, BYTES_PER_SECOND, 2, 16)
        + b"data"
        + struct.pack("<I", data_bytes)
    )


@cache
def _second(index: int) -> bytes:
    """One second of sound: a soft tone (440 or 480 Hz by turns) fading at the edges."""
    tone = 440 if index == 0 else 480
    samples = bytearray()
    for n in range(RATE):
        fade = min(1.0, n / 400, (RATE - n) / 400)
        samples += struct.pack(
            "<h", int(6000 * fade * math.sin(2 * math.pi * tone * n / RATE))
        )
    return bytes(samples)


def audio_range(seconds: int, start: int, end: int) -> Iterator[bytes]:
    """Bytes ``start`` to ``end`` (inclusive) of the WAV file of a ``seconds``-long
    recording, in chunks, computed as they are sent."""
    total = wav_size(seconds)
    header = _header(total - HEADER_BYTES)
    position = start
    end = min(end, total - 1)
    while position <= end:
        if position < HEADER_BYTES:
            piece = header[position : min(end + 1, HEADER_BYTES)]
        else:
            offset = position - HEADER_BYTES
            second, within = divmod(offset, BYTES_PER_SECOND)
            block = _second(second % 2)
            piece = block[within : within + min(CHUNK, end + 1 - position)]
        yield piece
        position += len(piece)
