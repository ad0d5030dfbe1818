"""Check that the configured speech-to-text engine loads and transcribes:
``manage.py transcription_selftest``. Exits 1 with the reason when it cannot; the
transcription worker runs it before it starts (``insights.selftest``)."""

from __future__ import annotations

from typing import Any

from django.core.management.base import BaseCommand, CommandError

from insights.selftest import engine_self_test


class Command(BaseCommand):
    help = "Load the speech-to-text engine and transcribe one second of audio."

    def handle(self, *args: Any, **options: Any) -> None:
        try:
            result = engine_self_test()
        except Exception as error:  # whatever stops the engine is the answer
            raise CommandError(
                f"the engine cannot transcribe: {type(error).__name__}: {error}"
            ) from error
        self.stdout.write(
            result or "no engine is configured (TRANSCRIPTION_BACKEND=none)"
        )
