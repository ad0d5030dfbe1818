from typing import Any

from django.apps import AppConfig


class CallsConfig(AppConfig):
    name = "calls"

    def ready(self) -> None:
        from accounts.signals import duty_changed

        duty_changed.connect(_on_duty_changed, dispatch_uid="calls.on_duty_changed")
        # The workers' lifecycle (worker_ready, worker_shutdown, a broker lost and found
        # again) tells the sweep when pending setups and dials may have been lost.
        # payloads and redaction register their effects.
        from calls import payloads, redaction, workers  # noqa: F401
        from config.celery import broker_reconnected

        broker_reconnected.connect(
            workers.on_broker_reconnected, dispatch_uid="calls.broker_reconnected"
        )
        # Every outbox's sweep makes again what was handed to a broker server since
        # replaced (core.handover.lost_before); the calls app watches which one answers.
        from core import handover

        handover.broker_first_seen = workers.broker_first_seen


def _on_duty_changed(
    sender: Any,
    *,
    agent_ids: list[int] | None = None,
    account_ids: list[int] | None = None,
    **kwargs: Any,
) -> None:
    from calls.services import agents_on_duty_hand_over

    agents_on_duty_hand_over(agent_ids=agent_ids or [], account_ids=account_ids or [])
