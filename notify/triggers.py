"""What notify does when a call reaches its final status, a score is saved, an offer
ends or a handoff is escalated: inside the transaction that made the change it only *records* the effects that must
follow (``core.outbox``); each is built and sent by its own task (``notify.effects``), so
a write-back or an alert that fails never holds back the call or the score."""

from __future__ import annotations

from typing import Any

from calls.models import Call, CallAttempt, CallStatus
from core.outbox import effect_record
from handoffs.models import Handoff
from notify.alerts import MISSED, NOT_REACHED
from notify.crm import writes_back
from scoring.models import Score


def on_call_finished(sender: type, call: Call, **kwargs: Any) -> None:
    about = f"call {call.pk}"
    if call.status != CallStatus.QUEUED and writes_back(
        account_id=call.account_id, moment="final"
    ):
        key = f"notify.crm_final:{call.pk}"
        effect_record(kind="notify.crm_final", key=key, about=about, call_id=call.pk)
    if call.status in NOT_REACHED or call.status == CallStatus.NOAGENT:
        key = f"notify.call_alerts:{call.pk}"
        effect_record(kind="notify.call_alerts", key=key, about=about, call_id=call.pk)


def on_score_saved(sender: type, score: Score, **kwargs: Any) -> None:
    about = f"call {score.call_id}"
    if writes_back(account_id=score.call.account_id, moment="scored"):
        # Written back once per call, as the first score saved: later saves add nothing.
        key = f"notify.crm_scored:{score.call_id}"
        effect_record(kind="notify.crm_scored", key=key, about=about, score_id=score.pk)
    if score.alert.strip():
        # Each save with tags is looked at; each tag tells once (alerts_for_score's keys).
        key = f"notify.score_alerts:{score.pk}:{score.alert.strip().lower()}"
        effect_record(
            kind="notify.score_alerts", key=key, about=about, score_id=score.pk
        )


def on_offer_ended(sender: type, attempt: CallAttempt, **kwargs: Any) -> None:
    if attempt.outcome in MISSED and attempt.agent_id is not None:
        effect_record(
            kind="notify.offer_alerts",
            key=f"notify.offer_alerts:{attempt.pk}",
            about=f"call {attempt.call_id}",
            attempt_id=attempt.pk,
        )


def on_handoff_escalated(sender: type, handoff: Handoff, **kwargs: Any) -> None:
    effect_record(
        kind="notify.handoff_alerts",
        key=f"notify.handoff_alerts:{handoff.pk}",
        about=f"handoff {handoff.pk}",
        handoff_id=handoff.pk,
    )
