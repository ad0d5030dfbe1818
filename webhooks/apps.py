from typing import Any

from django.apps import AppConfig


class WebhooksConfig(AppConfig):
    default_auto_field = "django.db.models.BigAutoField"
    name = "webhooks"
    verbose_name = "Webhooks"

    def ready(self) -> None:
        from django.db.models.signals import m2m_changed, post_delete, post_save

        from webhooks.models import WebhookEndpoint

        # Whatever saves or deletes an endpoint (the services, the admin) or sets its
        # accounts makes the cached subscriptions stale (webhooks.endpoints).
        post_save.connect(_endpoints_changed, sender=WebhookEndpoint)
        post_delete.connect(_endpoints_changed, sender=WebhookEndpoint)
        m2m_changed.connect(_endpoints_changed, sender=WebhookEndpoint.accounts.through)


def _endpoints_changed(**kwargs: Any) -> None:
    from webhooks.endpoints import subscriptions

    subscriptions.changed()
