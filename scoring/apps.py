from django.apps import AppConfig
from django.db.models.signals import post_save


class ScoringConfig(AppConfig):
    name = "scoring"

    def ready(self) -> None:
        from accounts.models import Account
        from calls.signals import transcription_saved

        # Accounts sit below scoring (apps depend downward), so the account's own services
        # cannot create its scorecard; this hook gives every new account the default one.
        post_save.connect(
            _default_scorecard, sender=Account, dispatch_uid="scoring.default_scorecard"
        )
        transcription_saved.connect(
            _suggest, dispatch_uid="scoring.suggestions_from_transcription"
        )


def _default_scorecard(
    sender: type, instance: object, created: bool, raw: bool = False, **kwargs: object
) -> None:
    if created and not raw:
        from scoring.services import scorecard_create_default

        scorecard_create_default(account=instance)  # type: ignore[arg-type]


def _suggest(sender: type, call_id: int, **kwargs: object) -> None:
    # Pure Python over a few dozen turns: cheap enough to run in the saving transaction,
    # so suggestions never lag behind the transcription they come from.
    from scoring.services import call_suggestions_make

    call_suggestions_make(call_id=call_id)
