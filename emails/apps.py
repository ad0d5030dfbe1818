from django.apps import AppConfig


class EmailsConfig(AppConfig):
    name = "emails"
    verbose_name = "E-mail to leads"

    def ready(self) -> None:
        from emails import effects, triggers  # noqa: F401 (effects registers its handler)
        from emails.models import EmailSettings
        from emails.selectors import settings_cache
        from texting.signals import automatic_touch

        settings_cache.watch(EmailSettings)

        # Texting tells, in the pipeline's transaction, when a lead may be told something
        # automatically (a lead arrived, a lead not reached): the e-mail is recorded there
        # (core.outbox) and written by its own task, as texting's own text is.
        automatic_touch.connect(
            triggers.on_automatic_touch, dispatch_uid="emails.touch"
        )
