from django.apps import AppConfig


class TextingConfig(AppConfig):
    name = "texting"

    def ready(self) -> None:
        from calls.signals import call_finished, call_queued, call_waiting
        from texting import effects, triggers  # noqa: F401 (effects registers its handler)
        from texting.models import TextingSettings
        from texting.selectors import settings_cache

        settings_cache.watch(TextingSettings)

        # The call pipeline tells texting what happened to a call, in the transaction that
        # made the change: the text is recorded there (core.outbox) and written by a task.
        call_queued.connect(triggers.on_call_queued, dispatch_uid="texting.instant")
        call_finished.connect(triggers.on_call_finished, dispatch_uid="texting.final")
        call_waiting.connect(triggers.on_call_waiting, dispatch_uid="texting.waiting")
