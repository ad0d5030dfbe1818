from django.apps import AppConfig


class TextingConfig(AppConfig):
    name = "texting"

    def ready(self) -> None:
        from accounts.signals import number_used
        from calls.signals import call_finished, call_queued, call_waiting
        from texting import effects, triggers  # noqa: F401 (effects registers its handler)
        from texting.models import TextingSettings
        from texting.selectors import accounts_sending_from, settings_cache

        settings_cache.watch(TextingSettings)
        # A number belongs to one organization: the accounts app asks which accounts text
        # from a number it is about to give an account as its caller ID.
        number_used.connect(accounts_sending_from, dispatch_uid="texting.senders")

        # The call pipeline tells texting what happened to a call, in the transaction that
        # made the change: the text is recorded there (core.outbox) and written by a task.
        call_queued.connect(triggers.on_call_queued, dispatch_uid="texting.instant")
        call_finished.connect(triggers.on_call_finished, dispatch_uid="texting.final")
        call_waiting.connect(triggers.on_call_waiting, dispatch_uid="texting.waiting")
