"""Recording links: signed, so a link cannot be guessed from a call id, and the generated
audio the simulator's links play."""

from __future__ import annotations

import io
import math
import struct
import wave

from django.conf import settings
from django.core import signing
from django.urls import reverse

_SALT = "calls.recording"


def recording_link(attempt_id: int) -> str:
    """The public URL of a simulated recording for a lead leg."""
    token = signing.dumps(attempt_id, salt=_SALT)
    return f"{settings.PUBLIC_BASE_URL}{reverse('call-recording', kwargs={'token': token})}"


def attempt_for_token(token: str) -> int | None:
    try:
        return int(signing.loads(token, salt=_SALT))
    except (signing.BadSignature, ValueError, TypeError):
        return None


def generated_audio(seconds: float = 3.0, rate: int = 8000) -> bytes:
    """A short WAV (8 kHz, mono): two soft tones, like a phone line's hello."""
    frames = bytearray()
    for n in range(int(seconds * rate)):
        tone = 440 if (n // rate) % 2 == 0 else 480
        frames += struct.pack("<h", int(6000 * math.sin(2 * math.pi * tone * n / rate)))
    buffer = io.BytesIO()
    with wave.open(buffer, "wb") as out:
        out.setnchannels(1)
        out.setsampwidth(2)
        out.setframerate(rate)
        out.writeframes(bytes(frames))
    return buffer.getvalue()
