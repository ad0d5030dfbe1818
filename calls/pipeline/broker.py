"""Handing the pipeline's work to Celery: a call's setup and an agent leg's dial.

With the broker down nothing is lost: the call or leg is left unmarked and the sweep
(``calls.pipeline.recovery``) sends it later. Every module of the pipeline calls these
through the module (``broker.dispatch_setup``), so the tests' stand-in broker replaces
them in one place.
"""

from __future__ import annotations

import logging
from datetime import datetime

from django.utils import timezone

from calls.models import Call, CallAttempt, CallStatus
from calls.pipeline import fair
from calls.pipeline.fair import SetupPriority
from core import handover

# The pipeline logs as the service layer it is (the name operators filter on).
log = logging.getLogger("calls.services")


def dispatch_setup(
    call_id: int,
    at: datetime | None = None,
    *,
    account_id: int | None = None,
    priority: SetupPriority = SetupPriority.FRESH,
) -> None:
    """Hand a call to a worker, in its account's fair order (``calls.pipeline.fair``: the
    kind of setup ``priority``, and the account's backlog when ``account_id`` is given);
    with the broker down the sweep dispatches it later."""
    from calls.tasks import call_setup_task

    kwargs: dict[str, int] = {"call_id": call_id}
    # A task held for later (``at``) is not waiting in the queue: not counted.
    counted = account_id if at is None else None
    if counted is not None:
        order = fair.setup_published(account_id=counted, kind=priority)
        kwargs["account_id"] = counted
    else:
        order = fair.priority_for(priority, 0)
    # Marked when it was made due: with none pending after all, the sweep's next run
    # dispatches it.
    sent = handover.hand_over(
        call_setup_task,
        kwargs=kwargs,
        event="call.dispatch_failed",
        log=log,
        rows=Call.objects.filter(pk=call_id, status=CallStatus.QUEUED),
        mark="setup_dispatched_at",
        marked_first=True,
        eta=at,
        priority=order,
    )
    if counted is not None and not sent:
        fair.setup_started(
            account_id=counted
        )  # it waits in the database, not the queue


def dispatch_dial(
    attempt_id: int, *, countdown: float | None = None, first: bool = True
) -> None:
    """Hand an agent leg's dial to a worker, marked pending once sent; with the broker down
    (or the mark not made) the sweep dials it later. ``countdown``: not before then (the
    carrier's pace, ``core.pace``); ``first``: a first round's dial goes before a retry's."""
    from calls.tasks import attempt_dial_task

    # Marked once sent, and left empty when not: the sweep dials a leg never marked only
    # after ``UNDIALED_AFTER`` (``hand_over`` would mark it ``REFUSED``, dialed at once).
    if handover.publish_or_leave_to_sweep(
        attempt_dial_task,
        kwargs={"attempt_id": attempt_id},
        event="call.dial_dispatch_failed",
        log=log,
        countdown=countdown,
        priority=fair.priority_for(
            SetupPriority.FRESH if first else SetupPriority.RETRY, 0
        ),
    ):
        CallAttempt.objects.filter(pk=attempt_id).update(
            dial_dispatched_at=timezone.now()
        )
