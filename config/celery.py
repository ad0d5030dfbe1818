"""The Celery app. Settings come from Django's settings (``CELERY_*``)."""

import logging
import os
from typing import Any

from celery import Celery, signals

from config.broker import use_resilient_redis_transport

os.environ.setdefault("DJANGO_SETTINGS_MODULE", "config.settings.local")
# Before the app connects anywhere: a worker that loses Redis with tasks in hand must not exit.
use_resilient_redis_transport()

app = Celery("config")
app.config_from_object("django.conf:settings", namespace="CELERY")
app.autodiscover_tasks()


@signals.task_prerun.connect
@signals.task_postrun.connect
def close_old_connections(**kwargs: Any) -> None:
    """Django's request rule for each task: drop a connection past CONN_MAX_AGE or broken."""
    from django.db import close_old_connections

    close_old_connections()


def publish_or_leave_to_sweep(
    task: Any, *, kwargs: dict[str, Any], event: str, log: Any, **options: Any
) -> bool:
    """Hand ``task`` to the broker (``options``: ``eta``, ``countdown``). A broker that is
    down is logged as ``event`` (with ``kwargs``), not raised: the work is stored, and the
    sweep that owns it hands it over once the broker is back. Returns whether it was sent."""
    from config.logging import log_event

    try:
        task.apply_async(kwargs=kwargs, retry=False, **options)
    except Exception as error:
        log_event(
            log,
            event,
            level=logging.WARNING,
            **kwargs,
            error=f"{type(error).__name__}: {error}",
            then="the sweep dispatches it once the broker is back",
        )
        return False
    return True
