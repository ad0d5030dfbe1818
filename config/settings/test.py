"""Tests run against PostgreSQL and Redis, each pytest-xdist worker on its own Redis db."""

import os

from config.settings.base import *  # noqa: F403
from config.settings.base import env

DATABASES = {
    "default": env.db(
        "DATABASE_URL", default="postgres://postgres@127.0.0.1:5432/leadcall"
    )
}
DATABASES["default"]["TEST"] = {
    "NAME": env("TEST_DATABASE_NAME", default="test_leadcall")
}
# As in production when a server process sets it (the outage tests do): a connection kept
# across requests is health-checked before reuse, so a broken one is replaced.
DATABASES["default"]["CONN_MAX_AGE"] = env.int("DATABASE_CONN_MAX_AGE", default=0)
DATABASES["default"]["CONN_HEALTH_CHECKS"] = True
if DATABASES["default"]["ENGINE"] == "django.db.backends.postgresql":
    DATABASES["default"]["ENGINE"] = "core.postgresql"

_worker = os.environ.get("PYTEST_XDIST_WORKER", "gw0")
# Each xdist worker on its own Redis db (broker, cache, rate limits); the base is movable
# so two test runs on one machine stay apart.
_redis_db = (
    env.int("TEST_REDIS_DB_BASE", default=1) + int(_worker.removeprefix("gw") or 0) % 8
)
REDIS_URL = env("REDIS_URL", default=f"redis://127.0.0.1:6379/{_redis_db}")
CACHES = {
    "default": {
        "BACKEND": "core.cache.RedisCache",
        "LOCATION": REDIS_URL,
        "OPTIONS": REDIS_CACHE_OPTIONS,  # noqa: F405
    }
}
if env("EMBEDDED_CACHE_DIR", default=""):
    # A server started by a test on the embedded default's cache, in a directory of its own
    # (tests/test_rate_limits_under_load.py); the database stays PostgreSQL.
    CACHES = {"default": EMBEDDED_CACHE}  # noqa: F405
CELERY_BROKER_URL = env(
    "CELERY_BROKER_URL", default=f"redis://127.0.0.1:6379/{_redis_db}"
)
CELERY_BROKER_TRANSPORT_OPTIONS = {
    "visibility_timeout": env.int("CELERY_VISIBILITY_TIMEOUT", default=3600),
    "queue_order_strategy": "priority",  # as in base: dials before callbacks
    "priority_steps": list(range(10)),  # as in base: the calls' fair order
}

PASSWORD_HASHERS = ["django.contrib.auth.hashers.MD5PasswordHasher"]
STORAGES = {
    "default": {"BACKEND": "django.core.files.storage.FileSystemStorage"},
    "staticfiles": {"BACKEND": "django.contrib.staticfiles.storage.StaticFilesStorage"},
}
MEDIA_ROOT = VAR_DIR / "test-media" / _worker  # noqa: F405
PUBLIC_BASE_URL = "https://leads.example.test"
SIMULATOR_TIME_SCALE = env.float("SIMULATOR_TIME_SCALE", default=0.01)
# Most tests need neither speech in the simulator's recordings nor speech-to-text; the
# tests of both (and the processes they start) turn them on.
SIMULATOR_SPEECH = env.bool("SIMULATOR_SPEECH", default=False)
TRANSCRIPTION_BACKEND = env("TRANSCRIPTION_BACKEND", default="none")
# Tests that transcribe use the small English model: fast, and their texts known.
TRANSCRIPTION_SHIPPED_MODEL = env("TRANSCRIPTION_SHIPPED_MODEL", default="tiny.en")
# A test process that transcribes keeps its priority: a niced xdist worker (and every
# process it starts) would crawl beside the other one.
MEDIA_NICE = env.int("MEDIA_NICE", default=0)
