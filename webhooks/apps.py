from django.apps import AppConfig


class WebhooksConfig(AppConfig):
    default_auto_field = "django.db.models.BigAutoField"
    name = "webhooks"
    verbose_name = "Webhooks"

    def ready(self) -> None:
        from webhooks.endpoints import subscriptions
        from webhooks.models import WebhookEndpoint

        # Whatever saves or deletes an endpoint (the services, the admin) or sets its
        # accounts makes the cached subscriptions stale (webhooks.endpoints).
        subscriptions.watch(WebhookEndpoint, WebhookEndpoint.accounts.through)
