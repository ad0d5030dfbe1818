from django.apps import AppConfig


class NotifyConfig(AppConfig):
    name = "notify"
    verbose_name = "CRM write-back, alerts and reports"

    def ready(self) -> None:
        from calls.signals import call_finished, offer_ended
        from handoffs.signals import handoff_escalated
        from notify import effects, triggers  # noqa: F401 (effects registers its handlers)
        from scoring.signals import score_saved

        # Told in the transaction that finished the call or saved the score: the effects
        # are recorded there (core.outbox), then built and sent by their own tasks.
        call_finished.connect(triggers.on_call_finished, dispatch_uid="notify.final")
        score_saved.connect(triggers.on_score_saved, dispatch_uid="notify.scored")
        offer_ended.connect(triggers.on_offer_ended, dispatch_uid="notify.offer")
        handoff_escalated.connect(
            triggers.on_handoff_escalated, dispatch_uid="notify.handoff"
        )
