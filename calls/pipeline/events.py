"""Provider events: what a provider reports about a leg (``calls.telephony.base.Event``),
applied to its call under the call's lock, answered with what to do on that leg next.
"""

from __future__ import annotations

from typing import Any

from django.db import transaction

from calls.models import Call, CallAttempt, Leg
from calls.pipeline.legs import _lead_event
from calls.pipeline.offers import _agent_event
from calls.telephony.base import Event, Instruction


def call_event(event: Event) -> Instruction:
    """Apply what a provider reports about a leg; answers what to do on that leg next."""
    followups: list[Any] = []
    with transaction.atomic():
        attempt = (
            CallAttempt.objects.select_related("agent")
            .filter(pk=event.attempt_id)
            .first()
        )
        if attempt is None:
            return Instruction.nothing()
        call = (
            Call.objects.select_for_update(of=("self",))
            .select_related("account__dialing_settings")
            .get(pk=attempt.call_id)
        )
        attempt = (
            CallAttempt.objects.select_for_update(of=("self",))
            .select_related("agent")
            .get(pk=event.attempt_id)
        )
        handler = _agent_event if attempt.leg == Leg.AGENT else _lead_event
        instruction = handler(call, attempt, event, followups)
    for followup in followups:
        followup()
    return instruction
