"""The shared toolkit: imports only Django and libraries, and has no models of a domain
(only the outbox's effects and the sweeps' items set aside, ``core.models``). An app so
that those tables exist, its admin templates (``core/templates/admin/core/``) are found,
and each request reads the shared cache's versions once (``core.versioned``)."""

from django.apps import AppConfig


class CoreConfig(AppConfig):
    name = "core"

    def ready(self) -> None:
        from django.core.signals import request_finished, request_started

        from core.versioned import scope_begin, scope_end

        request_started.connect(scope_begin, dispatch_uid="versioned.scope_begin")
        request_finished.connect(scope_end, dispatch_uid="versioned.scope_end")
