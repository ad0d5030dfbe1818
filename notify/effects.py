"""The effects notify records (``notify.triggers``), built and sent by their own tasks
(``core.outbox``): each reads the row it is about now and stores its messages, keyed, so
a second run stores nothing more."""

from __future__ import annotations

from calls.models import Call, CallAttempt
from core.outbox import effect
from handoffs.models import Handoff
from notify.alerts import (
    alerts_for_call,
    alerts_for_handoff,
    alerts_for_offer,
    alerts_for_score,
)
from notify.crm import crm_writeback_queue
from scoring.models import Score


def _call(call_id: int) -> Call:
    return Call.objects.select_related("account", "agent", "lead").get(pk=call_id)


@effect("notify.crm_final")
def crm_final(*, call_id: int) -> int:
    return crm_writeback_queue(call=_call(call_id), moment="final")


@effect("notify.call_alerts")
def call_alerts(*, call_id: int) -> int:
    return alerts_for_call(call=_call(call_id))


def _score(score_id: int) -> Score:
    return Score.objects.select_related(
        "call__account", "call__agent", "call__lead"
    ).get(pk=score_id)


@effect("notify.crm_scored")
def crm_scored(*, score_id: int) -> int:
    score = _score(score_id)
    return crm_writeback_queue(call=score.call, moment="scored", score=score)


@effect("notify.score_alerts")
def score_alerts(*, score_id: int) -> int:
    return alerts_for_score(score=_score(score_id))


@effect("notify.offer_alerts")
def offer_alerts(*, attempt_id: int) -> int:
    attempt = CallAttempt.objects.select_related("agent", "call__account").get(
        pk=attempt_id
    )
    return alerts_for_offer(attempt=attempt)


@effect("notify.handoff_alerts")
def handoff_alerts(*, handoff_id: int) -> int:
    handoff = Handoff.objects.select_related("account", "call").get(pk=handoff_id)
    return alerts_for_handoff(handoff=handoff)
