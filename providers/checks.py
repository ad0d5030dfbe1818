"""System checks of the provider settings (``providers.KINDS``): a value that names no
provider, such as ``TELEPHONY_PROVIDER=twilo``, or a provider chosen without the settings
it needs, is refused when a management command starts (``check``, ``migrate``,
``runserver``, ...), when the WSGI application loads (gunicorn: the worker fails to boot
and the arbiter stops) and when a Celery worker starts (``config.checks``), not found
when the first call is placed.

``providers.E001``: a setting names no provider of its kinds (the hint lists the choices).
``providers.E002``: the provider chosen needs a setting that is empty.
"""

from __future__ import annotations

from typing import Any

from django.conf import settings
from django.core.checks import CheckMessage, Error, register

from providers import KINDS, Kind


@register("providers")
def provider_settings_check(app_configs: Any, **kwargs: Any) -> list[CheckMessage]:
    """Each provider setting names a provider, and the one named has what it needs."""
    kinds_of: dict[str, list[Kind]] = {}
    for kind in KINDS.values():
        kinds_of.setdefault(kind.setting, []).append(kind)
    errors: list[CheckMessage] = []
    for setting, kinds in kinds_of.items():
        value = str(getattr(settings, setting, ""))
        # Kinds sharing a setting (calls and texts) may know different providers.
        choices = list(dict.fromkeys(name for kind in kinds for name in kind.choices))
        if value not in choices:
            errors.append(
                Error(
                    f"{setting} is {value!r}, which names no provider.",
                    hint=f"Set {setting} to one of: {', '.join(choices)}.",
                    id="providers.E001",
                )
            )
            continue
        needed = dict.fromkeys(
            name for kind in kinds for name in kind.needs.get(value, ())
        )
        errors.extend(
            Error(
                f"{name} is empty, and {setting} {value!r} needs it.",
                hint=f"Set {name}, or choose another {setting}.",
                id="providers.E002",
            )
            for name in needed
            if not getattr(settings, name, "")
        )
    return errors
