"""The embedded default used by ``make run``: no servers needed, debug pages on."""

from config.settings.base import *  # noqa: F403
from config.settings.base import env

DEBUG = env.bool("DJANGO_DEBUG", default=True)
WHITENOISE_USE_FINDERS = True
# Media as base chooses (MEDIA_STORAGE); static files unhashed, found where they lie.
STORAGES = {
    **STORAGES,  # noqa: F405
    "staticfiles": {"BACKEND": "django.contrib.staticfiles.storage.StaticFilesStorage"},
}
# Trying webhooks against make run: an endpoint may be plain HTTP on loopback
# (manage.py webhook_listen registers one). Never in production.
WEBHOOK_ALLOW_LOCAL_HTTP = True
