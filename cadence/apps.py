from django.apps import AppConfig


class CadenceConfig(AppConfig):
    name = "cadence"
    verbose_name = "Follow-up cadence"

    def ready(self) -> None:
        from django.db.models.signals import post_save

        from appointments.models import Appointment
        from cadence import effects, triggers  # noqa: F401 (effects registers its handler)
        from calls.signals import call_finished, lead_answered
        from handoffs.models import Handoff
        from texting.models import OptOut, Text
        from texting.signals import lead_replied

        # Each in the transaction of the change below: a lead not reached gets a plan,
        # the first reply, appointment, opt-out or person taking over stops it.
        call_finished.connect(triggers.on_call_finished, dispatch_uid="cadence.plan")
        lead_replied.connect(triggers.on_lead_replied, dispatch_uid="cadence.reply")
        lead_answered.connect(triggers.on_lead_answered, dispatch_uid="cadence.call")
        post_save.connect(
            triggers.on_text_saved, sender=Text, dispatch_uid="cadence.text"
        )
        post_save.connect(
            triggers.on_opt_out_saved, sender=OptOut, dispatch_uid="cadence.opt_out"
        )
        post_save.connect(
            triggers.on_appointment_saved,
            sender=Appointment,
            dispatch_uid="cadence.appointment",
        )
        post_save.connect(
            triggers.on_handoff_saved, sender=Handoff, dispatch_uid="cadence.handoff"
        )
