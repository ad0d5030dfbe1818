"""The evaluation set for transcription (issue 38): hand-written dealer calls, spoken
unlike the simulator (``speak``), transcribed through the project's engines
(``measure``). Bench-only; not part of ``make bench``."""

import os


def django_setup() -> None:
    """Django configured (the engines read settings): local settings unless told."""
    import django

    os.environ.setdefault("DJANGO_SETTINGS_MODULE", "config.settings.local")
    django.setup()
