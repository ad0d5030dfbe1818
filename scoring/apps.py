from __future__ import annotations

import uuid
from typing import TYPE_CHECKING

from django.apps import AppConfig

if TYPE_CHECKING:
    from accounts.models import Account
    from calls.models import Call, CallAttempt


class ScoringConfig(AppConfig):
    name = "scoring"

    def ready(self) -> None:
        from accounts.signals import account_created
        from calls.signals import call_finished, offer_ended, transcription_saved
        from scoring import effects  # noqa: F401 (registers its handler)

        account_created.connect(
            _default_scorecard, dispatch_uid="scoring.default_scorecard"
        )
        transcription_saved.connect(
            _suggest, dispatch_uid="scoring.suggestions_from_transcription"
        )
        call_finished.connect(_rollup_call, dispatch_uid="scoring.rollup_final")
        offer_ended.connect(_rollup_offer, dispatch_uid="scoring.rollup_offer")


def _default_scorecard(sender: type, account: Account, **kwargs: object) -> None:
    # Accounts sit below scoring (apps depend downward): account_create tells scoring, in
    # its transaction, and every new account starts with the default scorecard.
    from scoring.services import scorecard_create_default

    scorecard_create_default(account=account)


def _suggest(sender: type, call_id: int, **kwargs: object) -> None:
    # Recorded in the transaction that saved the transcription, made by their own task
    # (scoring.effects): suggestions that cannot be made never undo the transcription.
    from core.outbox import effect_record

    effect_record(
        kind="scoring.suggestions",
        key=f"scoring.suggestions:{call_id}:{uuid.uuid4().hex}",
        about=f"call {call_id}",
        call_id=call_id,
    )


def _rollup_call(sender: type, call: Call, **kwargs: object) -> None:
    # The call's final status changes its day's figures: the dashboard's rollup of that
    # day is marked stale in this transaction (scoring/rollup_build.py).
    from scoring.rollup_build import rollup_mark

    rollup_mark(call=call)


def _rollup_offer(sender: type, attempt: CallAttempt, **kwargs: object) -> None:
    from scoring.rollup_build import rollup_mark_leg

    rollup_mark_leg(attempt)
