from django.apps import AppConfig


class AppointmentsConfig(AppConfig):
    name = "appointments"

    def ready(self) -> None:
        from django.db.models.signals import post_save

        from appointments import effects, reminders, rollup, triggers  # noqa: F401
        from appointments.models import Appointment, AppointmentChange
        from calls.signals import transcription_saved
        from scoring.signals import rollup_written, score_saved
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
        # The appointment counts rolled up beside the dashboard's rollup, and the days
        # an appointment's change touches marked for it.
        rollup_written.connect(rollup.write_days, dispatch_uid="appointments.rollup")
        post_save.connect(
            rollup.on_appointment_saved,
            sender=Appointment,
            dispatch_uid="appointments.rollup_day",
        )
        post_save.connect(
            rollup.on_change_saved,
            sender=AppointmentChange,
            dispatch_uid="appointments.rollup_set",
        )
