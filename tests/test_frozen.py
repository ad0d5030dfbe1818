"""Worker processes move what they loaded at start out of the garbage collector's way
(config/frozen.py): gunicorn's workers after loading the app, Celery's pool processes
once started."""

import gc

import pytest
from celery import signals

from config import gunicorn


@pytest.fixture
def unfrozen():
    gc.unfreeze()
    yield
    gc.unfreeze()


def test_a_gunicorn_worker_loads_the_views_then_freezes_them(unfrozen):
    assert gc.get_freeze_count() == 0

    gunicorn.post_worker_init(worker=object())

    # Django, DRF and the apps: far more than a bare interpreter's few thousand objects.
    assert gc.get_freeze_count() > 50_000


def test_a_celery_pool_process_freezes_once_started(unfrozen):
    signals.worker_process_init.send(sender=None)

    assert gc.get_freeze_count() > 50_000
