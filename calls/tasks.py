"""Thin tasks: each takes ids, calls a service, and is safe to deliver twice."""

import logging
import time
from typing import Any

from celery import Task, shared_task
from django.db import InterfaceError, OperationalError

from calls.media import RecordingNotYetStored
from core.locks import one_at_a_time
from core.logging import log_event
from core.tasks import retry_while_down
from providers.telephony import TelephonyUnavailable

log = logging.getLogger(__name__)

# Known transient errors only (the provider or the database out of reach); everything
# else is the service's to handle. Backoff 1, 2, 4 ... 30 s: a database back within a
# few minutes loses nothing.
RETRY_WHILE_PROVIDER_IS_DOWN = retry_while_down(TelephonyUnavailable, backoff_max=30)
# A provider event is never dropped: it retries while the database is out of reach.
RETRY_WHILE_DATABASE_IS_DOWN = retry_while_down(backoff_max=30)


@shared_task(**RETRY_WHILE_PROVIDER_IS_DOWN)
def call_setup_task(*, call_id: int, account_id: int | None = None) -> None:
    """Offer a due queued call to agents; a call not due or not queued is left alone.
    ``account_id``: the setup was counted in its account's backlog (the fair order)."""
    from calls.pipeline.fair import setup_started
    from calls.services import call_setup

    if account_id is not None and not getattr(call_setup_task.request, "retries", 0):
        setup_started(account_id=account_id)
    call_setup(call_id=call_id)


@shared_task(**RETRY_WHILE_PROVIDER_IS_DOWN)
def attempt_dial_task(*, attempt_id: int) -> None:
    """Ring one agent leg; a leg already requested is never dialed again."""
    from calls.services import attempt_dial

    attempt_dial(attempt_id=attempt_id)


@shared_task(**RETRY_WHILE_DATABASE_IS_DOWN)
def simulator_event_task(
    *,
    attempt_id: int,
    kind: str,
    digits: str = "",
    duration: int | None = None,
    recording_url: str = "",
    due: float | None = None,
) -> None:
    """Deliver one simulated provider callback through the same handler as real callbacks.
    One handled later than a switch waits for its answer (``due``: when the switch sent
    it) is logged: the pipeline fell behind its provider."""
    _simulator_deliver(
        attempt_id=attempt_id,
        kind=kind,
        digits=digits,
        duration=duration,
        recording_url=recording_url,
        due=due,
    )


@shared_task(bind=True, **RETRY_WHILE_DATABASE_IS_DOWN)
def simulator_events_task(
    self: Task, *, events: list[dict[str, Any]], due: float | None = None
) -> None:
    """Deliver the simulated callbacks the switch sends at one moment (a call's end: the
    lead's leg, its recording, the agent's leg), in order, each as ``simulator_event_task``
    delivers one: one task instead of one each. A retry delivers those not yet delivered."""
    for index, event in enumerate(events):
        try:
            _simulator_deliver(**event, due=due)
        except (OperationalError, InterfaceError):
            # autoretry resends the request's kwargs: from this event on.
            self.request.kwargs = {"events": events[index:], "due": due}
            raise


def _simulator_deliver(
    *,
    attempt_id: int,
    kind: str,
    digits: str = "",
    duration: int | None = None,
    recording_url: str = "",
    due: float | None = None,
) -> None:
    from calls.services import call_event
    from calls.telephony.simulator import WEBHOOK_TIMEOUT, SimulatorProvider
    from providers.telephony import Event, EventKind

    if due is not None and (late := time.time() - due) > WEBHOOK_TIMEOUT:
        log_event(
            log,
            "simulator.callback_late",
            level=logging.WARNING,
            attempt_id=attempt_id,
            kind=kind,
            seconds=round(late, 1),
        )

    event = Event(
        attempt_id,
        EventKind(kind),
        digits=digits,
        duration=duration,
        recording_url=recording_url,
    )
    SimulatorProvider().follow(attempt_id=attempt_id, instruction=call_event(event))


@shared_task(acks_late=True)
@one_at_a_time(skipped=dict[str, int]())
def calls_sweep_task() -> dict[str, int]:
    """Re-drive stuck calls: the outbox guarantee behind every queued call."""
    from calls.services import calls_sweep

    counts = calls_sweep()
    if any(counts.values()):
        # Items and parts that failed are logged each where they failed; the run says how many.
        level = logging.WARNING if counts.get("failed") else logging.INFO
        log_event(log, "calls.swept", level=level, **counts)
    return counts


@shared_task(acks_late=True)
def calls_hand_over_task() -> int:
    """At each minute, when schedules open: free agents are handed the calls waiting for them."""
    from calls.services import calls_hand_over

    handed = calls_hand_over()
    if handed:
        log_event(log, "calls.handed_over_at_opening", calls=len(handed))
    return len(handed)


@shared_task(
    **{
        **RETRY_WHILE_DATABASE_IS_DOWN,
        "autoretry_for": (RecordingNotYetStored, OperationalError, InterfaceError),
        "retry_backoff": 5,
        "retry_backoff_max": 120,
    }
)
def recording_store_task(*, call_id: int) -> None:
    """Speak or fetch a call's recording and store it, once; the service counts failed
    tries and gives up after its own maximum, so a retry here never loops forever."""
    from calls.media import recording_store
    from core.priority import yield_cpu_to_calls

    yield_cpu_to_calls(session=True)  # media work: dials and callbacks come first
    recording_store(call_id=call_id)
