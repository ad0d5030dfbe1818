"""The plan a call's end records (``cadence.triggers``), made by its own task
(``core.outbox``) on the ``calls`` queue: its first step is due at once."""

from __future__ import annotations

from cadence.services import plan_start
from core.outbox import effect


@effect("cadence.plan", queue="calls")
def plan(*, call_id: int) -> bool:
    return bool(plan_start(call_id=call_id))
