"""Provider events: what a provider reports about a leg (``providers.telephony.Event``),
applied to its call under the call's lock, answered with what to do on that leg next.

An event that only records a fact on one row (a leg ringing, a recording's link) is one
conditional UPDATE of that row and takes no lock on the call: the update's own condition
is what the handlers would check under the lock, and a single statement cannot interleave
with another. Every other event locks the call, then the leg, each read once.
"""

from __future__ import annotations

from typing import Any

from django.db import transaction
from django.db.models import QuerySet, Subquery
from django.utils import timezone

from calls.models import Call, CallAttempt, Leg
from calls.pipeline.legs import lead_event
from calls.pipeline.offers import agent_event
from core.compiled import CompiledQuery
from providers.telephony import Event, EventKind, Instruction


def call_event(event: Event) -> Instruction:
    """Apply what a provider reports about a leg; answers what to do on that leg next."""
    if event.kind == EventKind.RINGING:
        _ringing(event.attempt_id)
        return Instruction.nothing()
    if event.kind == EventKind.RECORDING:
        _recording(event.attempt_id, event.recording_url)
        return Instruction.nothing()
    followups: list[Any] = []
    with transaction.atomic():
        call = locked_call(event.attempt_id)
        if call is None:
            return Instruction.nothing()
        attempt = _LOCKED_LEG.get(attempt_id=event.attempt_id)
        attempt.call = call  # the locked one: whoever hears of this leg reads it there
        handler = agent_event if attempt.leg == Leg.AGENT else lead_event
        instruction = handler(call, attempt, event, followups)
    for followup in followups:
        followup()
    return instruction


def locked_call(attempt_id: int) -> Call | None:
    """The call of the leg ``attempt_id``, its row locked, read with its account and dialing
    settings in one query; None for a leg we do not know. The call is locked before its leg,
    as every step of the pipeline locks them, so two events of a call queue up, never
    deadlock. (A
    join, not a subquery: Django compiles it in half the time, and this runs per event.)"""
    try:
        return LOCKED_CALL_OF_LEG.get(attempt_id=attempt_id)
    except Call.DoesNotExist:
        return None


# Compiled once (core/compiled.py): each event runs both, and compiling them was most of
# their CPU.
def locked_calls() -> QuerySet[Call]:
    """Calls locked for the pipeline's change, each with its account and dialing settings."""
    return Call.objects.select_for_update(of=("self",)).select_related(
        "account__dialing_settings"
    )


LOCKED_CALL_OF_LEG = CompiledQuery(
    lambda attempt_id: locked_calls().filter(attempts_log=attempt_id), "attempt_id"
)
_LOCKED_LEG = CompiledQuery(
    lambda attempt_id: CallAttempt.objects.select_for_update().filter(pk=attempt_id),
    "attempt_id",
)


def _ringing(attempt_id: int) -> None:
    """A leg rings: its first ring is kept; a leg already ended is left alone."""
    CallAttempt.objects.filter(
        pk=attempt_id, ended_at__isnull=True, ringing_at__isnull=True
    ).update(ringing_at=timezone.now())


def _recording(attempt_id: int, url: str) -> None:
    """A lead leg's recording is ready: its call keeps the first link reported (a later one,
    or one reported on an agent's leg, changes nothing)."""
    if not url:
        return
    lead_leg_call = CallAttempt.objects.filter(pk=attempt_id, leg=Leg.LEAD).values(
        "call_id"
    )
    Call.objects.filter(pk=Subquery(lead_leg_call), recording_url="").update(
        recording_url=url
    )
