"""The evaluation set for transcription (issue 38): hand-written dealer calls, spoken
unlike the simulator (``speak``), scored by ``manage.py insights_eval`` in ``make bench``
part 10 (bench/insights.py); ``measure`` is an earlier experiment's transcription alone."""

import os


def django_setup() -> None:
    """Django configured (the engines read settings): local settings unless told."""
    import django

    os.environ.setdefault("DJANGO_SETTINGS_MODULE", "config.settings.local")
    django.setup()
