"""What notify does when a call reaches its final status or a score is saved, inside the
transaction that made the change: the messages are stored with it, sent on commit."""

from __future__ import annotations

from typing import Any

from calls.models import Call, CallAttempt
from notify.alerts import alerts_for_call, alerts_for_offer, alerts_for_score
from notify.crm import crm_writeback_queue
from scoring.models import Score


def on_call_finished(sender: type, call: Call, **kwargs: Any) -> None:
    crm_writeback_queue(call=call, moment="final")
    alerts_for_call(call=call)


def on_score_saved(sender: type, score: Score, **kwargs: Any) -> None:
    crm_writeback_queue(call=score.call, moment="scored", score=score)
    if score.alert.strip():
        alerts_for_score(score=score)


def on_offer_ended(sender: type, attempt: CallAttempt, **kwargs: Any) -> None:
    alerts_for_offer(attempt=attempt)
