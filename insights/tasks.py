"""Thin tasks: each takes ids, calls a service, and is safe to deliver twice."""

import logging

from celery import shared_task

from core.logging import log_event
from core.tasks import retry_while_down

log = logging.getLogger(__name__)

# The engine's own errors are the service's to count and retry; only the database out of
# reach is retried here.
RETRY_WHILE_DATABASE_IS_DOWN = retry_while_down(backoff_max=30)


# A worker stopping interrupts it (core/shutdown.py): the run is handed over again, so
# Ctrl-C or a deploy never waits minutes for it.
@shared_task(**RETRY_WHILE_DATABASE_IS_DOWN, interrupt_on_shutdown=True)
def transcription_task(*, call_id: int) -> None:
    """Transcribe one call's recording; one not pending (or being run) is left alone, and
    one interrupted by its worker stopping is handed over again."""
    from core.priority import yield_cpu_to_calls
    from insights.services import transcription_run

    yield_cpu_to_calls(session=True)  # media work: dials and callbacks come first
    transcription_run(call_id=call_id)


@shared_task(acks_late=True)
def insights_sweep_task() -> dict[str, int]:
    """Hand over again the transcriptions no worker is driving."""
    from insights.services import insights_sweep

    counts = insights_sweep()
    if any(counts.values()):
        log_event(log, "insights.swept", **counts)
    return counts
