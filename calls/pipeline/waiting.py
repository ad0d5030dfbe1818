"""Calls waiting for an agent: how a call waits when nobody can take it now, and how free
agents (at a schedule opening, on duty again, at every sweep) are handed the calls
waiting for them.
"""

from __future__ import annotations

import logging
from datetime import datetime, timedelta

from django.db import DatabaseError, transaction
from django.db.models import Q, QuerySet
from django.utils import timezone

from calls.models import Call, CallStatus, DialingSettings, NoAgentPolicy
from calls.pipeline.transitions import (
    call_finish,
    call_requeue,
    hand_over_to_agent,
    phone_time,
)
from calls.routing import agents_on_duty, free_agents_with_calls_waiting, next_opening
from calls.signals import call_waiting
from core.logging import log_event
from core.sweeps import Tally, each
from users.models import User

# The pipeline logs as the service layer it is (the name operators filter on).
log = logging.getLogger("calls.services")


# Agents on duty but all on calls: the call waits, and is handed to the first agent whose
# leg ends (``hand_over_to_agent``). As a fallback it is looked at again after this, then after
# as long again as it has waited, up to BUSY_RECHECK_MAX. The first wait exists only
# because phones are slow, so it runs at the provider's time scale (``phone_time``).
BUSY_RECHECK = timedelta(seconds=5)
BUSY_RECHECK_MAX = timedelta(seconds=60)


def no_agent_now(call: Call, config: DialingSettings, now: datetime) -> None:
    """Nobody can take the call now: wait for an agent (handed over the moment one is free or
    comes on duty; looked at again briefly if agents are on duty but busy, else at the next
    schedule opening), or end it as NOAGENT, as the account says."""
    if config.no_agent_policy == NoAgentPolicy.END:
        call_finish(call, CallStatus.NOAGENT)
    elif agents_on_duty(call=call, at=now):
        # Wait for the hand-over; look again as a fallback, less often the longer it waits.
        call.waiting_since = call.waiting_since or now
        recheck = min(
            max(now - call.waiting_since, phone_time(call, BUSY_RECHECK)),
            BUSY_RECHECK_MAX,
        )
        call_requeue(call, now + recheck, save_also=["waiting_since"], dispatch=False)
    elif (opening := next_opening(call=call, after=now)) is not None:
        # Waiting for an agent too: one who comes on duty sooner is handed it at once.
        call.waiting_since = call.waiting_since or now
        call_requeue(call, opening, save_also=["waiting_since"])
        call_waiting.send(sender=Call, call=call, opening=opening)
    else:
        call_finish(call, CallStatus.NOAGENT)


def calls_hand_over(*, now: datetime | None = None) -> list[int]:
    """Every free agent of an account with a call waiting is handed the oldest call they may
    take (at each schedule opening, and by every sweep). Returns the calls dispatched."""
    return calls_hand_over_counted(now=now)[0]


def calls_hand_over_counted(*, now: datetime | None = None) -> tuple[list[int], Tally]:
    """``calls_hand_over``, each agent in its own guard (``core.sweeps.each``): one agent's
    error keeps no other agent from the calls waiting. Returns the calls dispatched and
    the tally."""
    agents = free_agents_with_calls_waiting(at=now or timezone.now())
    handed: list[int] = []

    def hand_over(agent_id: int) -> None:
        with transaction.atomic():
            call_id = hand_over_to_agent(agent_id)
        if call_id is not None:
            handed.append(call_id)

    tally = each(
        sweep="calls.hand_over",
        items=list(agents.values_list("pk", flat=True)),
        handle=hand_over,
    )
    return handed, tally


def agents_on_duty_hand_over(
    *, agent_ids: list[int], account_ids: list[int]
) -> list[int]:
    """Agents who may have just come on duty (added, activated, given a phone, their accounts
    or hours changed, or an account's hours) are each handed, if free, the oldest waiting
    call they may take, in the caller's transaction, dispatched on commit. A failure here
    never undoes the change that came first: the sweep hands over as well."""
    if not agent_ids and not account_ids:
        return []
    agents = free_agents_with_calls_waiting(at=timezone.now()).filter(
        Q(pk__in=agent_ids) | Q(accounts__in=account_ids)
    )
    try:
        with transaction.atomic():
            return _hand_over_each(agents)
    except DatabaseError as error:
        log_event(
            log,
            "call.hand_over_failed",
            level=logging.WARNING,
            agent_ids=agent_ids,
            account_ids=account_ids,
            error=f"{type(error).__name__}: {error}",
            then="the sweep hands over",
        )
        return []


def _hand_over_each(agents: QuerySet[User]) -> list[int]:
    """``hand_over_to_agent`` to each of ``agents``, each in a transaction of its own (its locks held
    no longer than its own hand-over). Returns the calls dispatched."""
    handed = []
    for agent_id in agents.values_list("pk", flat=True):
        with transaction.atomic():
            call_id = hand_over_to_agent(agent_id)
        if call_id is not None:
            handed.append(call_id)
    return handed
