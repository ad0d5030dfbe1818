from __future__ import annotations

from typing import TYPE_CHECKING

from django.apps import AppConfig

if TYPE_CHECKING:
    from accounts.models import Account


class ScoringConfig(AppConfig):
    name = "scoring"

    def ready(self) -> None:
        from accounts.signals import account_created
        from calls.signals import transcription_saved

        account_created.connect(
            _default_scorecard, dispatch_uid="scoring.default_scorecard"
        )
        transcription_saved.connect(
            _suggest, dispatch_uid="scoring.suggestions_from_transcription"
        )


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
