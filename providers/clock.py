"""The simulator's clock: ``SIMULATOR_TIME_SCALE`` real seconds per simulated second.

The simulated calls and texts (``calls.telephony.simulator``, ``texting.providers``) wait
their simulated seconds through this clock, and the pipeline's own waits on a simulated
call follow it (``providers.telephony.Provider.time_scale``), so a sped-up simulator keeps
everything in step.
"""

from __future__ import annotations

from django.conf import settings


def time_scale() -> float:
    """``SIMULATOR_TIME_SCALE``: simulated seconds last this many real seconds."""
    return float(settings.SIMULATOR_TIME_SCALE)


def real_seconds(simulated: float) -> float:
    """How long ``simulated`` seconds last on the wall clock (never less than 0)."""
    return max(0.0, simulated * time_scale())
