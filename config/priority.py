"""Media work (a call's speech synthesised, speech-to-text) yields the CPU to the call
pipeline: the process doing it lowers its own scheduling priority (Unix ``nice``) the
first time it does such work. On a busy machine dials, callbacks and intake come first;
on an idle one the media work still uses every core. ``bench`` part 4d measures it."""

from __future__ import annotations

import os

from django.conf import settings


def yield_cpu_to_calls() -> None:
    """Lower this process's priority to ``MEDIA_NICE`` (never raises it: a process cannot
    take priority back without privileges, and needs not)."""
    target = int(settings.MEDIA_NICE)
    current = os.nice(0)
    if current < target:
        os.nice(target - current)
