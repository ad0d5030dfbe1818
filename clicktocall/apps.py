from django.apps import AppConfig


class ClicktocallConfig(AppConfig):
    name = "clicktocall"
