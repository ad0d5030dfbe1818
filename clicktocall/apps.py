from django.apps import AppConfig


class ClicktocallConfig(AppConfig):
    name = "clicktocall"

    def ready(self) -> None:
        from clicktocall import schema  # noqa: F401  (registers the OpenAPI auth description)
