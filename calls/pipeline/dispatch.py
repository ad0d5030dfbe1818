"""Dispatching calls to agents: queue a call, start a round (offer it to the available
agents), and ring each agent's leg, once.
"""

from __future__ import annotations

import logging
from collections.abc import Sequence
from datetime import datetime
from typing import Any

from django.db import transaction
from django.utils import timezone

from accounts.models import Account, Team
from calls.models import (
    Call,
    CallAttempt,
    CallOrigin,
    CallStatus,
    DialingSettings,
    RingMode,
)
from calls.pipeline import broker
from calls.pipeline.events import call_event, locked_calls
from calls.pipeline.fair import SetupPriority
from calls.pipeline.transitions import (
    agent_attempt,
    call_finish,
    dialing_settings,
    log_on_commit,
)
from calls.pipeline.waiting import no_agent_now
from calls.routing import (
    agent_first_available,
    agents_available,
    agents_claim,
    calls_waiting_before,
)
from calls.signals import call_queued
from consent.selectors import calls_revocation, revocation_recorded
from core import pace
from core.compiled import CompiledInsert, CompiledQuery
from core.logging import log_event, mask_phone
from providers import telephony_named
from providers.telephony import AgentDial, Event, EventKind, TelephonyUnavailable
from users.models import User

# The pipeline logs as the service layer it is (the name operators filter on).
log = logging.getLogger("calls.services")
# A queued call's INSERT, compiled once per process (core/compiled.py): the ORM building
# it was about a sixth of an accepted lead's CPU (11.3 M -> 10.6 M instructions a lead).
_CALL_INSERT = CompiledInsert(Call)


def call_queue(
    *,
    account: Account,
    phone: str,
    received_at: datetime,
    origin: str = CallOrigin.LEAD,
    team: Team | None = None,
    requested_agent: User | None = None,
    vendor_agent_id: str = "",
    agent_number: str = "",
    priority: SetupPriority = SetupPriority.FRESH,
    **lead: Any,
) -> Call:
    """Queue a call for the pipeline; it is dispatched once the caller's transaction commits,
    in its account's fair order at ``priority`` (``calls.pipeline.fair``: a lead re-sent
    long after it was made passes ``RESEND``, a schedule's call ``LATER``).
    With ``agent_number`` its agent is not a user: that number is rung for every round."""
    call = _CALL_INSERT.create(
        account=account,
        phone=phone,
        received_at=received_at,
        origin=origin,
        team=team,
        requested_agent=requested_agent,
        vendor_agent_id=vendor_agent_id,
        agent_number=agent_number,
        is_test=account.is_test,
        setup_dispatched_at=timezone.now(),
        **lead,
    )
    call_queued.send(sender=Call, call=call)
    transaction.on_commit(lambda: _queued(call, priority), robust=True)
    return call


# The lead fields a call made again for the same lead copies from the call before.
LEAD_FIELDS = (
    "altid",
    "source",
    "first_name",
    "last_name",
    "email",
    "call_notes",
    "lead_type",
    "department",
    "called_on_make",
    "called_on_model",
    "called_on_year",
    "called_on_registration",
    "called_on_summary",
    "current_make",
    "current_model",
    "current_year",
    "current_registration",
    "current_summary",
)
UNDER_WAY = (CallStatus.QUEUED, CallStatus.DIALING)


def call_again(
    *,
    call: Call,
    origin: str,
    why: str,
    priority: SetupPriority = SetupPriority.FRESH,
) -> Call | None:
    """Queue a new call to the lead of ``call`` through the same pipeline, at once (a
    lead's "call me" reply, a follow-up step: ``SetupPriority.LATER``, behind new leads),
    with its lead's fields and ``why`` before its whisper; None when one is under way for
    the lead already."""
    under_way = Call.objects.filter(
        account_id=call.account_id, phone=call.phone, status__in=UNDER_WAY
    ).exists()
    if under_way:
        return None
    return call_queue(
        account=call.account,
        phone=call.phone,
        received_at=timezone.now(),
        origin=origin,
        team=call.team,
        priority=priority,
        whisper=f"{why} {call.whisper}".strip(),
        **{field: getattr(call, field) for field in LEAD_FIELDS},
    )


def call_setup(*, call_id: int) -> None:
    """Start a round for a due queued call: offer it to the available agents. Safe to run twice."""
    now = timezone.now()
    with transaction.atomic():
        call = _locked(call_id)
        if (
            call is None
            or call.status != CallStatus.QUEUED
            or (
                call.next_attempt_at
                and call.next_attempt_at > now
                and not call.waiting_since  # handed over early: an agent just came free
            )
        ):
            return
        if getattr(call, "revocation_recorded", True) and _consent_withdrawn(call):
            return
        call.setup_dispatched_at = None
        config = dialing_settings(call.account)
        agents: Sequence[User | None]
        if call.agent_number:
            # An agent who is not a user: rung at once, no schedule or busy check.
            agents = [None]
        elif not call.waiting_since and calls_waiting_before(call=call):
            agents = []  # older calls wait for the next free agent: this one queues behind
        elif config.ring_mode == RingMode.SEQUENTIAL:
            first = agent_first_available(call=call, at=now)
            agents = [first] if first else []
        else:
            agents = agents_claim(agents_available(call=call, at=now), at=now)
        if not agents:
            no_agent_now(call, config, now)
            return
        call.status = CallStatus.DIALING
        call.rounds += 1
        call.next_attempt_at = None
        call.waiting_since = None
        call.save(
            update_fields=[
                "status",
                "rounds",
                "next_attempt_at",
                "waiting_since",
                "setup_dispatched_at",
            ]
        )
        attempts = [agent_attempt(call, agent) for agent in agents]
    for attempt in attempts:
        try:
            _ring_agent(attempt, call, config)
        except TelephonyUnavailable:
            broker.dispatch_dial(attempt.pk, first=call.rounds <= 1)
        except PaceWait as waiting:
            broker.dispatch_dial(
                attempt.pk, countdown=waiting.seconds, first=call.rounds <= 1
            )


class PaceWait(Exception):
    """No token from the carrier's pace now: ask again after ``seconds``."""

    def __init__(self, seconds: float) -> None:
        super().__init__(f"the carrier's pace: next token in {seconds:.2f} s")
        self.seconds = seconds


def _locked(call_id: int) -> Call | None:
    """The call, its row locked, with its account and dialing settings; None if it is gone."""
    try:
        return _LOCKED_CALL.get(call_id=call_id)
    except Call.DoesNotExist:
        return None


# Compiled once (core/compiled.py): compiling it was most of its CPU. Whether the consent
# ledger holds a revocation for the call's number is read in the same statement: the
# ledger itself is read only for the few calls it names.
_LOCKED_CALL = CompiledQuery(
    lambda call_id: (
        locked_calls()
        .filter(pk=call_id)
        .annotate(revocation_recorded=revocation_recorded())
    ),
    "call_id",
)


def _consent_withdrawn(call: Call) -> bool:
    """A call to a number that withdrew consent to the account's calls (``consent``) ends
    CANCEL before anyone is rung, the reason in its notes; whether it did."""
    revocation = calls_revocation(account_id=call.account_id, phone=call.phone)
    if revocation is None:
        return False
    call.update_notes = f"{call.update_notes}\n{revocation.reason()}".strip()
    call_finish(call, CallStatus.CANCEL, save_also=["update_notes"])
    log_on_commit(
        "call.consent_withdrawn",
        call_id=call.pk,
        account_id=call.account_id,
        consent_event_id=revocation.pk,
    )
    return True


def attempt_dial(*, attempt_id: int) -> None:
    """Ask the provider to ring an agent leg, once: a leg already requested is left alone."""
    attempt = (
        CallAttempt.objects.select_related("call__account__dialing_settings")
        .filter(pk=attempt_id, dial_requested_at__isnull=True, ended_at__isnull=True)
        .first()
    )
    if attempt is None:
        return
    try:
        _ring_agent(attempt, attempt.call, dialing_settings(attempt.call.account))
    except PaceWait as waiting:
        # Asked again once a token is due; the task ends, no worker waits for it.
        broker.dispatch_dial(
            attempt.pk, countdown=waiting.seconds, first=attempt.call.rounds <= 1
        )


def _ring_agent(attempt: CallAttempt, call: Call, config: DialingSettings) -> None:
    """Ring an agent leg, once. The request is marked before the provider is asked (one
    conditional update: only the first of two deliveries gets to ring), so a redelivered
    task never rings twice; if the provider is unreachable the mark is taken back and
    TelephonyUnavailable raised for a retry. A provider that refuses the number ends the
    leg as FAILED. The carrier's pace (``core.pace``) comes first: with no token now,
    PaceWait says when to ask again."""
    if (
        wait := pace.take(
            provider=attempt.provider,
            account_id=call.account_id,
            first=call.rounds <= 1,
        )
    ) > 0:
        raise PaceWait(wait)
    if not CallAttempt.objects.filter(
        pk=attempt.pk, dial_requested_at__isnull=True, ended_at__isnull=True
    ).update(dial_requested_at=timezone.now()):
        return
    dial = AgentDial(
        attempt_id=attempt.pk,
        number=attempt.number,
        caller_id=call.account.caller_id,
        ring_seconds=config.agent_ring_seconds,
    )
    try:
        provider_id = telephony_named(attempt.provider).dial_agent(dial)
    except TelephonyUnavailable:
        CallAttempt.objects.filter(pk=attempt.pk).update(dial_requested_at=None)
        raise
    except Exception:
        log.exception("provider refused to dial attempt %s", attempt.pk)
        call_event(Event(attempt.pk, EventKind.FAILED))
        return
    CallAttempt.objects.filter(pk=attempt.pk).update(provider_id=provider_id)
    log_event(
        log,
        "call.agent_offered",
        call_id=call.pk,
        attempt_id=attempt.pk,
        agent_id=attempt.agent_id,
        round=attempt.round,
        provider=attempt.provider,
        number=mask_phone(attempt.number),
    )


def _queued(call: Call, priority: SetupPriority) -> None:
    log_event(
        log,
        "call.queued",
        call_id=call.pk,
        account_id=call.account_id,
        origin=call.origin,
        team_id=call.team_id,
        requested_agent_id=call.requested_agent_id,
        number=mask_phone(call.phone),
    )
    broker.dispatch_setup(call.pk, account_id=call.account_id, priority=priority)
