from django.apps import AppConfig
from django.db.models.signals import post_save


class ScoringConfig(AppConfig):
    name = "scoring"

    def ready(self) -> None:
        from accounts.models import Account

        # Accounts sit below scoring (apps depend downward), so the account's own services
        # cannot create its scorecard; this hook gives every new account the default one.
        post_save.connect(
            _default_scorecard, sender=Account, dispatch_uid="scoring.default_scorecard"
        )


def _default_scorecard(
    sender: type, instance: object, created: bool, raw: bool = False, **kwargs: object
) -> None:
    if created and not raw:
        from scoring.services import scorecard_create_default

        scorecard_create_default(account=instance)  # type: ignore[arg-type]
