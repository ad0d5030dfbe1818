"""The Celery app. Settings come from Django's settings (``CELERY_*``)."""

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
