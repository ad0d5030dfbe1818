from django.apps import AppConfig


class HandoffsConfig(AppConfig):
    name = "handoffs"
    verbose_name = "Handoff timers"

    def ready(self) -> None:
        from django.db.models.signals import post_save

        from appointments.models import AppointmentChange
        from calls.signals import call_finished, lead_answered, transcription_saved
        from consenting.models import SpokenRevocation
        from handoffs import effects, rollup, triggers  # noqa: F401 (effects)
        from scoring.signals import rollup_written
        from texting.models import OptOut, Text
        from texting.signals import lead_replied

        # Each in the transaction of the change below: a moment a person must act opens
        # a timer, a person's act closes it.
        lead_replied.connect(triggers.on_lead_replied, dispatch_uid="handoffs.reply")
        post_save.connect(
            triggers.on_text_saved, sender=Text, dispatch_uid="handoffs.text"
        )
        post_save.connect(
            triggers.on_opt_out_saved, sender=OptOut, dispatch_uid="handoffs.opt_out"
        )
        lead_answered.connect(triggers.on_lead_answered, dispatch_uid="handoffs.call")
        call_finished.connect(
            triggers.on_call_finished, dispatch_uid="handoffs.no_agent"
        )
        transcription_saved.connect(
            triggers.on_transcription_saved, dispatch_uid="handoffs.callback"
        )
        post_save.connect(
            triggers.on_appointment_changed,
            sender=AppointmentChange,
            dispatch_uid="handoffs.appointment",
        )
        post_save.connect(
            triggers.on_spoken_revocation_saved,
            sender=SpokenRevocation,
            dispatch_uid="handoffs.spoken_opt_out",
        )
        # The speed numbers rolled up beside the dashboard's rollup, and a call's day
        # marked when a text may change its first touch or first human.
        rollup_written.connect(rollup.write_days, dispatch_uid="handoffs.rollup")
        post_save.connect(
            rollup.on_text_saved, sender=Text, dispatch_uid="handoffs.rollup_text"
        )
