"""``manage.py understand_recording PATH --context CONTEXT.json [--transcript LINES.txt]
[--account ID]``: what the service understands of one two-channel recording (channel 1
the agent, channel 2 the lead; PCM 16-bit or µ-law; 8 or 16 kHz), printed as one JSON
document (``backoffice.understand``). ``--transcript`` skips speech-to-text and reads the
documented lines instead; without ``--account`` the default scorecard suggests."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from django.core.management.base import BaseCommand, CommandError, CommandParser

from accounts.models import Account
from backoffice.understand import NotUnderstood, context_from, understand_recording
from insights.engines import engine_for_settings
from providers.speech import PermanentError


class Command(BaseCommand):
    help = "Understand one recording as the service understands a call; print JSON."

    def add_arguments(self, parser: CommandParser) -> None:
        parser.add_argument(
            "path", help="A two-channel WAV (agent, lead), or - with --transcript."
        )
        parser.add_argument(
            "--context",
            required=True,
            help="A JSON file: names, dealer, vehicles, times.",
        )
        parser.add_argument("--transcript", help="Lines to read instead of the audio.")
        parser.add_argument("--account", type=int, help="Use this account's scorecard.")

    def handle(self, *args: Any, **options: Any) -> None:
        try:
            context = context_from(_json(Path(options["context"])))
            account = None
            if options["account"] is not None:
                account = Account.objects.filter(pk=options["account"]).first()
                if account is None:
                    raise CommandError(f"no account {options['account']}")
            if options["transcript"]:
                understood = understand_recording(
                    context=context,
                    transcript=_read(Path(options["transcript"])).decode("utf-8"),
                    account=account,
                )
            else:
                try:
                    engine = engine_for_settings()
                except PermanentError as error:
                    raise CommandError(str(error)) from error
                understood = understand_recording(
                    context=context,
                    audio=_read(Path(options["path"])),
                    engine=engine,
                    account=account,
                )
        except (NotUnderstood, UnicodeDecodeError) as error:
            raise CommandError(str(error)) from error
        self.stdout.write(json.dumps(understood, indent=2, ensure_ascii=False))


def _read(path: Path) -> bytes:
    try:
        return path.read_bytes()
    except OSError as error:
        raise CommandError(f"{path}: {error.strerror}") from error


def _json(path: Path) -> dict[str, Any]:
    try:
        values = json.loads(_read(path))
    except ValueError as error:
        raise CommandError(f"{path}: not JSON: {error}") from error
    if not isinstance(values, dict):
        raise CommandError(f"{path}: a JSON object is expected")
    return values
