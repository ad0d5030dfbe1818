from django.apps import AppConfig


class EmailsConfig(AppConfig):
    name = "emails"
    verbose_name = "E-mail to leads"

    def ready(self) -> None:
        from emails import effects, triggers  # noqa: F401 (effects registers its handler)
        from texting.signals import automatic_touch

        # Texting tells, in the pipeline's transaction, when a lead may be told something
        # automatically (a lead arrived, a lead not reached): the e-mail is recorded there
        # (core.outbox) and written by its own task, as texting's own text is.
        automatic_touch.connect(
            triggers.on_automatic_touch, dispatch_uid="emails.touch"
        )
