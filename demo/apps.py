from django.apps import AppConfig


class DemoConfig(AppConfig):
    """The demo data of `manage.py seed_demo`. It sits above every other app and uses their
    services, so no app below needs to know about demos."""

    name = "demo"
