"""The provider seam as an app, so that its system checks (``providers.checks``) run
wherever Django's do."""

from django.apps import AppConfig


class ProvidersConfig(AppConfig):
    name = "providers"

    def ready(self) -> None:
        from providers import checks  # noqa: F401 (registers the checks)
