"""The shared toolkit: no models; imports only Django and libraries. An app only so that
its admin templates (``core/templates/admin/core/``) are found."""

from django.apps import AppConfig


class CoreConfig(AppConfig):
    name = "core"
