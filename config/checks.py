"""Processes that do not run Django's system checks themselves refuse to start when the
checks they depend on fail: gunicorn loads the WSGI application without them, and Celery
runs them at a worker's start but only logs the result.

The checks are found by tag in Django's registry (``providers`` registers its own when it
loads), so nothing here imports an app.
"""

from __future__ import annotations

from collections.abc import Iterable

# The settings that choose an outside service: a typo there fails the first call, not
# the start (providers/checks.py).
START_UP_TAGS = ("providers",)


def refuse_to_start(what: str, *, tags: Iterable[str] = START_UP_TAGS) -> None:
    """Raise ``ImproperlyConfigured`` with every reason when a check of ``tags`` reports
    an error: ``what`` (a web server, a worker) then stops at start."""
    from django.core.checks import run_checks
    from django.core.exceptions import ImproperlyConfigured

    serious = [m for m in run_checks(tags=list(tags)) if m.is_serious()]
    if serious:
        reasons = "; ".join(f"{m.id}: {m.msg} {m.hint or ''}".strip() for m in serious)
        raise ImproperlyConfigured(f"{what} refuses to start: {reasons}")
