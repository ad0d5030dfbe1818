from django.apps import AppConfig


class CallsConfig(AppConfig):
    name = "calls"
