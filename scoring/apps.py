from __future__ import annotations

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
    # Pure Python over a few dozen turns: cheap enough to run in the saving transaction,
    # so suggestions never lag behind the transcription they come from.
    from scoring.services import call_suggestions_make

    call_suggestions_make(call_id=call_id)


def _rollup_call(sender: type, call: Call, **kwargs: object) -> None:
    # The call's final status changes its day's figures: the dashboard's rollup of that
    # day is marked stale in this transaction (scoring/rollup_build.py).
    from scoring.rollup_build import rollup_mark

    rollup_mark(call=call)


def _rollup_offer(sender: type, attempt: CallAttempt, **kwargs: object) -> None:
    # A leg that ends while its call is under way needs no mark: the call's final status
    # marks the day. One that ends after it (or whose call is not at hand) does.
    from calls.models import CallAttempt, CallStatus
    from scoring.models import RollupStale
    from scoring.rollup_build import rollup_mark

    if not CallAttempt.call.is_cached(attempt):
        RollupStale.objects.create(call_id=attempt.call_id)  # reading it costs as much
    elif attempt.call.status not in (CallStatus.QUEUED, CallStatus.DIALING):
        rollup_mark(call=attempt.call)
