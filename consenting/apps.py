from django.apps import AppConfig


class ConsentingConfig(AppConfig):
    name = "consenting"
    verbose_name = "Consent from calls and integrators"

    def ready(self) -> None:
        from calls.signals import transcription_saved
        from consent.signals import consent_recorded
        from consenting import effects, triggers  # noqa: F401 (effects registers its handler)

        # A transcript saved may hold a spoken "don't call me again" (read by its own
        # task); every ledger entry is reported to the organization's webhook endpoints,
        # in the transaction that recorded it.
        transcription_saved.connect(
            triggers.on_transcription_saved, dispatch_uid="consenting.spoken"
        )
        consent_recorded.connect(
            triggers.on_consent_recorded, dispatch_uid="consenting.webhooks"
        )
