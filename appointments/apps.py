from django.apps import AppConfig


class AppointmentsConfig(AppConfig):
    name = "appointments"

    def ready(self) -> None:
        from appointments import effects, reminders, triggers  # noqa: F401 (effects)
        from calls.signals import transcription_saved
        from scoring.signals import score_saved
        from texting.signals import lead_replied

        # What a scorer records and what a call's transcript says become appointments,
        # in the transaction that saved them.
        score_saved.connect(triggers.on_score_saved, dispatch_uid="appointments.scored")
        transcription_saved.connect(
            triggers.on_transcription_saved, dispatch_uid="appointments.proposed"
        )
        # A lead's reply to a reminder: C confirms, R asks a person to move it.
        lead_replied.connect(
            reminders.on_lead_replied, dispatch_uid="appointments.reply"
        )
