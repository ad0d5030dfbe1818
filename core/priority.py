"""Media work (a call's speech synthesised, speech-to-text) yields the CPU to the call
pipeline: the process doing it lowers its own scheduling priority (Unix ``nice``) the
first time it does such work. On a busy machine dials, callbacks and intake come first;
on an idle one the media work still uses every core. ``bench`` part 4d measures it.

With Linux's autogroup scheduling (the default on desktop and many server kernels) CPU is
shared between sessions first, and a process's nice only weighs within its session; so
the Celery tasks doing media work also lower their session's weight. The Procfile's
workers each run in a session of their own (``config.respawn``), so only the
transcription worker yields; a worker started without ``-Q`` (everything in one process,
``make worker``) yields whole while it does media work, which on a laptop is fine."""

from __future__ import annotations

import contextlib
import os
import re
from pathlib import Path

from django.conf import settings

AUTOGROUP = Path("/proc/self/autogroup")


def yield_cpu_to_calls(*, session: bool = False) -> None:
    """Lower this process's priority to ``MEDIA_NICE``, and with ``session`` its session's
    (autogroup) too. Never raises either: a process cannot take priority back without
    privileges, and needs not."""
    target = int(settings.MEDIA_NICE)
    current = os.nice(0)
    if current < target:
        os.nice(target - current)
    if session and target > 0:
        with contextlib.suppress(OSError, ValueError):  # no autogroups here
            found = re.search(r"nice (-?\d+)", AUTOGROUP.read_text())
            if found and int(found.group(1)) < target:
                AUTOGROUP.write_text(f"{target}\n")
