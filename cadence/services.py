"""The follow-up cadence's workflows: a plan of steps for a lead not reached, each step run
once when due (past quiet hours), every step ahead stopped at the first reply,
appointment, opt-out or person taking over, and the scheduler's tick that hands due steps
to a worker at their due time.

A step is a row with its due time; the scheduler (``steps_hand_over_due``, every second)
hands the steps falling due in the next moments to the broker with an ``eta`` at their due
time, marking them handed over first, so no task ever waits hours in the broker (Redis
would deliver it again after its visibility timeout) and a step is run once."""

from __future__ import annotations

import logging
from datetime import datetime, time, timedelta

from django.db import transaction
from django.db.models import Q
from django.utils import timezone

from appointments.models import OPEN, Appointment
from cadence.channels import RUNNERS, Outcome
from cadence.models import AHEAD, PlannedStep, StepStatus
from cadence.selectors import cadence_steps, plan_under_way
from calls.models import Call, CallOrigin, CallStatus
from consent.selectors import calls_revocation
from core import handover
from core.logging import log_event, log_event_on_commit, mask_phone
from texting import compose
from texting.selectors import texting_settings_of
from users.models import User

log = logging.getLogger(__name__)

# The calls that did not reach their lead: a plan starts when a lead's own call ends so.
NOT_REACHED = frozenset(
    {CallStatus.NOANSWER, CallStatus.BUSY, CallStatus.FAILED, CallStatus.NOAGENT}
)
# The scheduler hands over the steps due within this; it ticks every second. A step handed
# over and still not run this long past its time is handed over again (run once all the
# same, ``step_run``).
LOOKAHEAD = timedelta(seconds=2)
AGAIN_AFTER = timedelta(seconds=10)
# A plan's first step waits this long after the call's end at least: the call's own text
# (texting's, on the call's end) goes first, and the step then sees it.
FIRST_AFTER = timedelta(seconds=10)
# Quiet hours of an account that does not text (texting's defaults).
QUIET = (time(8), time(21))
BATCH = 500


def plan_start(*, call_id: int) -> list[PlannedStep]:
    """Plan the account's cadence for the lead of ``call_id``, a lead's own call that did
    not reach them: each step due its hours after the lead arrived. None when the account
    runs no cadence, a plan is under way for the lead already, or they have an open
    appointment; once per call, however often asked."""
    call = Call.objects.select_related("account").filter(pk=call_id).first()
    if call is None or call.origin != CallOrigin.LEAD or not call.phone:
        return []
    if call.status not in NOT_REACHED:
        return []
    steps = cadence_steps(call.account)
    if not steps:
        return []
    earliest = timezone.now() + FIRST_AFTER
    with transaction.atomic():
        if plan_under_way(account_id=call.account_id, phone=call.phone):
            return []
        if Appointment.objects.filter(
            account_id=call.account_id, phone=call.phone, status__in=OPEN
        ).exists():
            return []
        planned = PlannedStep.objects.bulk_create(
            [
                PlannedStep(
                    account_id=call.account_id,
                    phone=call.phone,
                    call=call,
                    position=position,
                    channel=step.channel,
                    template=step.template,
                    body=step.body,
                    due_at=max(
                        earliest, call.received_at + timedelta(hours=step.after_hours)
                    ),
                )
                for position, step in enumerate(steps)
            ],
            ignore_conflicts=True,
        )
    log_event_on_commit(
        log,
        "cadence.planned",
        call_id=call.pk,
        account_id=call.account_id,
        to=mask_phone(call.phone),
        steps=len(planned),
    )
    return planned


def steps_stop(
    *, account_id: int, phone: str, reason: str, by: User | None = None
) -> int:
    """Stop every step not run yet for the lead at ``phone`` of the account, with
    ``reason`` (and who, when a person stopped them). How many were stopped."""
    stopped = PlannedStep.objects.filter(
        account_id=account_id, phone=phone, status__in=AHEAD
    ).update(
        status=StepStatus.STOPPED, reason=reason, stopped_by=by, done_at=timezone.now()
    )
    if stopped:
        log_event_on_commit(
            log,
            "cadence.stopped",
            account_id=account_id,
            to=mask_phone(phone),
            steps=stopped,
            reason=reason,
        )
    return stopped


def quiet_until(step: PlannedStep, now: datetime) -> datetime:
    """The first moment from ``now`` the step may reach the lead: past the account's
    quiet hours (texting's, or 8:00 to 21:00 without them) in the lead's timezone."""
    config = texting_settings_of(step.account)
    start, end = (config.quiet_start, config.quiet_end) if config else QUIET
    zone = compose.lead_zone(step.phone, step.account.timezone)
    return compose.allowed_from(now, zone=zone, start=start, end=end)


def step_run(*, step_id: int) -> str:
    """Run one step handed over at its due time, once: a call through the pipeline or a
    text through texting; one stopped, run or not due is left alone, one in quiet hours
    waits for their end (planned again)."""
    with transaction.atomic():
        step = (
            PlannedStep.objects.select_for_update(of=("self",))
            .select_related("account", "call", "call__agent")
            .filter(pk=step_id)
            .first()
        )
        if step is None or step.status != StepStatus.HANDED_OVER:
            return "done"
        now = timezone.now()
        allowed = step.due_at if step.due_at > now else quiet_until(step, now)
        if allowed > now:
            # Not due yet (a clock ahead), or quiet hours: the scheduler hands it over then.
            step.due_at, step.status, step.handed_at = allowed, StepStatus.PLANNED, None
            step.save(update_fields=["due_at", "status", "handed_at"])
            return "waits"
        revoked = calls_revocation(
            account_id=step.account_id, phone=step.phone, text_opt_outs=True
        )
        if revoked is not None:
            # The ledger is read when a step falls due: a revocation from any source (a
            # manager's mark, a text STOP, an integrator) stops what is left.
            steps_stop(
                account_id=step.account_id,
                phone=step.phone,
                reason=f"The lead withdrew consent ({revoked.get_source_display()}).",
            )
            return "stopped"
        outcome = (
            RUNNERS[step.channel](step)
            if _cadence_on(step)
            else Outcome(StepStatus.SKIPPED, "The cadence was turned off.")
        )
        step.status, step.reason, step.done_at = outcome.status, outcome.reason, now
        step.save(
            update_fields=["status", "reason", "done_at", "made_call", "made_text"]
        )
    log_event(
        log,
        "cadence.step_run",
        step_id=step.pk,
        channel=step.channel,
        status=step.status,
        late=round((now - step.due_at).total_seconds(), 3),
    )
    return str(step.status)


def _cadence_on(step: PlannedStep) -> bool:
    from cadence.selectors import cadence_of

    cadence = cadence_of(step.account)
    return cadence is not None and cadence.enabled


def steps_hand_over_due(*, now: datetime | None = None) -> int:
    """The scheduler's tick: the steps due within ``LOOKAHEAD`` (or overdue), and those
    handed over and still not run ``AGAIN_AFTER`` past their time, marked handed over
    in one statement and handed to the broker to run at their due time. A refused
    hand-over is planned again for the next tick. How many were handed over."""
    now = now or timezone.now()
    with transaction.atomic():
        due = list(
            PlannedStep.objects.select_for_update(skip_locked=True)
            .filter(
                Q(status=StepStatus.PLANNED, due_at__lte=now + LOOKAHEAD)
                | Q(
                    status=StepStatus.HANDED_OVER,
                    due_at__lt=now - AGAIN_AFTER,
                    handed_at__lt=now - AGAIN_AFTER,
                )
            )
            .order_by("due_at")
            .values_list("pk", "due_at")[:BATCH]
        )
        PlannedStep.objects.filter(pk__in=[pk for pk, _ in due]).update(
            status=StepStatus.HANDED_OVER, handed_at=now
        )
    if due:
        from cadence.tasks import step_run_task

    for pk, due_at in due:
        sent = handover.hand_over(
            step_run_task,
            kwargs={"step_id": pk},
            event="cadence.dispatch_failed",
            log=log,
            then="the scheduler hands it over at its next tick",
            eta=max(due_at, now),
        )
        if not sent:
            PlannedStep.objects.filter(pk=pk, status=StepStatus.HANDED_OVER).update(
                status=StepStatus.PLANNED, handed_at=None
            )
    return len(due)
