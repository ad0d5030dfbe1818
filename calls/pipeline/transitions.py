"""The steps every part of the pipeline takes on a call and its legs: end a leg, put the
call back in the queue, finish it with a final status, cancel it, and hand a freed agent
the oldest call waiting for them; with the constants and small helpers they share.

A final status (``FINAL``) never changes again.
"""

from __future__ import annotations

import logging
from datetime import datetime, timedelta
from functools import partial
from typing import Any

from django.db import transaction
from django.utils import timezone

from accounts.models import Account
from calls.models import (
    AttemptOutcome,
    Call,
    CallAttempt,
    CallStatus,
    DialingSettings,
    Leg,
)
from calls.payloads import call_event_emit
from calls.pipeline import broker
from calls.pipeline.fair import SetupPriority
from calls.routing import agent_free_with_calls_waiting, call_waiting_for
from calls.signals import call_finished, offer_ended
from core.handover import HELD_BY_BROKER
from core.logging import log_event_on_commit
from providers import telephony_for, telephony_named
from providers.telephony import EventKind
from users.models import User

# The pipeline logs as the service layer it is (the name operators filter on).
log = logging.getLogger("calls.services")


FINAL = frozenset(
    {
        CallStatus.ANSWER,
        CallStatus.NOANSWER,
        CallStatus.BUSY,
        CallStatus.FAILED,
        CallStatus.CANCEL,
        CallStatus.NOAGENT,
    }
)
EVENT_OUTCOME = {
    EventKind.NO_ANSWER: AttemptOutcome.NOANSWER,
    EventKind.BUSY: AttemptOutcome.BUSY,
    EventKind.FAILED: AttemptOutcome.FAILED,
}


def dialing_settings(account: Account) -> DialingSettings:
    """The account's dialing settings (read with it where it was selected with
    ``dialing_settings``), or the defaults."""
    try:
        return account.dialing_settings
    except DialingSettings.DoesNotExist:
        return DialingSettings(account=account)


def agent_attempt(call: Call, agent: User | None) -> CallAttempt:
    """An agent leg: ``agent``'s phone, or with None the call's agent who is not a user."""
    return CallAttempt.objects.create(
        call=call,
        leg=Leg.AGENT,
        round=call.rounds,
        agent=agent,
        number=agent.phone_number if agent else call.agent_number,
        provider=telephony_for(is_test=call.is_test).name,
    )


def agent_taken(call: Call) -> bool:
    """Whether an agent took the call (pressed 1) and its lead is being dialed. A user who
    did is the call's agent; an agent who is not a user (``agent_number``) leaves no agent
    on the call, only their leg accepted in this round while the call is dialing."""
    if call.agent_id:
        return True
    return (
        bool(call.agent_number)
        and call.status == CallStatus.DIALING
        and call.attempts_log.filter(
            leg=Leg.AGENT, round=call.rounds, outcome=AttemptOutcome.ACCEPTED
        ).exists()
    )


def seconds_between(since: datetime, until: datetime) -> int:
    """Whole seconds from ``since`` to ``until``, never negative (clocks disagree)."""
    return max(0, int((until - since).total_seconds()))


def phone_time(call: Call, wait: timedelta) -> timedelta:
    """``wait`` at the call's provider's time scale: the simulator's sped-up calls wait
    sped-up too; a real network waits the full time."""
    return wait * telephony_for(is_test=call.is_test).time_scale


def attempt_mark(attempt: CallAttempt, **moments: datetime) -> None:
    for name, value in moments.items():
        setattr(attempt, name, value)
    attempt.save(update_fields=list(moments))


def attempt_end(
    attempt: CallAttempt,
    outcome: str,
    followups: list[Any],
    *,
    duration: int | None = None,
    hangup: bool = False,
) -> None:
    attempt.ended_at = timezone.now()
    attempt.outcome = attempt.outcome or outcome
    attempt.duration = duration if duration is not None else attempt.duration
    attempt.save(update_fields=["ended_at", "outcome", "duration"])
    log_on_commit(
        "call.leg_ended",
        call_id=attempt.call_id,
        attempt_id=attempt.pk,
        leg=attempt.leg,
        agent_id=attempt.agent_id,
        outcome=attempt.outcome,
        duration=attempt.duration,
    )
    if attempt.leg == Leg.AGENT and attempt.agent_id:
        hand_over_to_agent(attempt.agent_id)
        offer_ended.send(sender=CallAttempt, attempt=attempt)
    if hangup and attempt.dial_requested_at:
        provider = telephony_named(attempt.provider)
        provider_id, attempt_id = attempt.provider_id, attempt.pk
        followups.append(
            lambda: provider.hangup(provider_id=provider_id, attempt_id=attempt_id)
        )


def call_requeue(
    call: Call,
    when: datetime,
    *,
    save_also: list[str] | None = None,
    dispatch: bool = True,
) -> None:
    """Back to the queue until ``when``. A soon retry is handed to the broker with a countdown;
    a later one is left to the sweep, so no worker holds a task for minutes or days."""
    call.status = CallStatus.QUEUED
    call.next_attempt_at = when
    dispatch = dispatch and when - timezone.now() <= HELD_BY_BROKER
    call.setup_dispatched_at = when if dispatch else None
    call.save(
        update_fields=[
            "status",
            "next_attempt_at",
            "setup_dispatched_at",
            *(save_also or []),
        ]
    )
    log_on_commit("call.requeued", call_id=call.pk, due_at=when.isoformat())
    if dispatch:
        transaction.on_commit(
            lambda: broker.dispatch_setup(
                call.pk, at=when, priority=SetupPriority.RETRY
            ),
            robust=True,
        )


def call_finish(
    call: Call,
    status: str,
    *,
    save_also: list[str] | None = None,
    at: datetime | None = None,
) -> None:
    call.status = status
    call.ended_at = at or timezone.now()
    call.next_attempt_at = None
    call.setup_dispatched_at = None
    call.waiting_since = None
    call.save(
        update_fields=[
            "status",
            "ended_at",
            "next_attempt_at",
            "setup_dispatched_at",
            "waiting_since",
            *(save_also or []),
        ]
    )
    call_event_emit(call=call, type="call_completed")
    call_finished.send(sender=Call, call=call)
    log_on_commit(
        "call.ended",
        call_id=call.pk,
        status=status,
        duration=call.duration,
        response_time=call.response_time,
        agent_id=call.agent_id,
        lead_attempts=call.attempts,
        rounds=call.rounds,
    )


def hand_over_to_agent(agent_id: int) -> int | None:
    """The agent is free: dispatch the oldest waiting call they may take, at once, on
    commit. The call is locked and marked dispatched in this transaction, so two agents
    freed at once never take the same call. Returns the call's id, if any."""
    now = timezone.now()
    agent = agent_free_with_calls_waiting(agent_id=agent_id, at=now)
    if agent is None:
        return None
    call = call_waiting_for(agent=agent, at=now)
    if call is None:
        return None
    call.setup_dispatched_at = timezone.now()
    call.save(update_fields=["setup_dispatched_at"])
    transaction.on_commit(
        partial(
            broker.dispatch_setup,
            call.pk,
            account_id=call.account_id,
            priority=SetupPriority.HANDOVER,
        ),
        robust=True,
    )
    log_on_commit("call.handed_over", call_id=call.pk, agent_id=agent_id)
    return call.pk


def log_on_commit(event: str, **fields: Any) -> None:
    """Log a step of a call's life once it is committed: a rolled-back step never happened."""
    log_event_on_commit(log, event, **fields)


def call_cancel(*, call: Call) -> bool:
    """Cancel a call that has not connected yet; live agent legs are hung up."""
    followups: list[Any] = []
    with transaction.atomic():
        call = Call.objects.select_for_update(of=("self",)).get(pk=call.pk)
        if call.status in FINAL or agent_taken(call):
            return False
        for attempt in call.attempts_log.filter(ended_at__isnull=True):
            attempt_end(attempt, AttemptOutcome.CANCELED, followups, hangup=True)
        call_finish(call, CallStatus.CANCEL)
    for followup in followups:
        followup()
    return True
