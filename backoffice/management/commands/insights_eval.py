"""``manage.py insights_eval DIR [--account ID] [--json]``: how well the service
understands the labelled calls in DIR (``backoffice.evaluation``; layout in
bench/eval/conversations/README.md): each from its perfect transcript and from each
recording beside it (``NAME.16k.wav``, ``NAME.8k.wav``), through the configured engine.
Prints each call as it is read, then the figures of each form."""

from __future__ import annotations

import json
from functools import partial
from pathlib import Path
from typing import Any

from django.core.management.base import BaseCommand, CommandError, CommandParser

from accounts.models import Account
from backoffice.evaluation import Labelled, evaluate, load
from backoffice.understand import NotUnderstood, understand_recording
from insights.engines import engine_for_settings, read_wav
from providers.speech import PermanentError, SpeechToText


class Command(BaseCommand):
    help = "Score the service's understanding of a directory of labelled calls."

    def add_arguments(self, parser: CommandParser) -> None:
        parser.add_argument("directory", type=Path)
        parser.add_argument(
            "--audio",
            type=Path,
            help="Where the recordings are (NAME.16k.wav, NAME.8k.wav); default DIR.",
        )
        parser.add_argument("--account", type=int, help="Use this account's scorecard.")
        parser.add_argument("--json", action="store_true", help="Print JSON.")
        parser.add_argument(
            "--transcripts-only",
            action="store_true",
            help="Score the perfect transcripts only (no speech-to-text).",
        )

    def handle(self, *args: Any, **options: Any) -> None:
        directory: Path = options["directory"]
        if not directory.is_dir():
            raise CommandError(f"{directory} is not a directory")
        try:
            calls = load(directory)
        except (ValueError, OSError) as error:
            raise CommandError(str(error)) from error
        if not calls:
            raise CommandError(f"no labelled calls (NAME.txt) in {directory}")
        account = None
        if options["account"] is not None:
            account = Account.objects.filter(pk=options["account"]).first()
            if account is None:
                raise CommandError(f"no account {options['account']}")
        engine: SpeechToText | None = None
        if not options["transcripts_only"]:
            try:
                engine = engine_for_settings()
            except PermanentError as error:
                raise CommandError(str(error)) from error

        results = evaluate(
            calls,
            understand=partial(
                self._understood,
                directory=options["audio"] or directory,
                engine=engine,
                account=account,
            ),
        )
        if options["json"]:
            self.stdout.write(json.dumps(results, indent=2))
            return
        for figures in results:
            self.stdout.write(_table(figures))

    def _understood(
        self,
        call: Labelled,
        form: str,
        *,
        directory: Path,
        engine: SpeechToText | None,
        account: Account | None,
    ) -> tuple[dict[str, Any], float] | None:
        """What the service understands of ``call`` in ``form``, and its audio's seconds;
        None when the call has no recording in that form (or no engine runs)."""
        context = call.context()
        try:
            if form == "transcript":
                said = understand_recording(
                    context=context, transcript=call.text, account=account
                )
                return said, 0.0
            path = directory / f"{call.name}.{form}.wav"
            if engine is None or not path.exists():
                return None
            audio = path.read_bytes()
            said = understand_recording(
                context=context, audio=audio, engine=engine, account=account
            )
        except NotUnderstood as error:
            raise CommandError(f"{call.name} ({form}): {error}") from error
        self.stderr.write(f"  {call.name} ({form}): {said['summary'][:90]}")
        return said, read_wav(audio).seconds


def _table(figures: dict[str, Any]) -> str:
    wer = figures["wer"]
    categories = figures["categories"]
    summary = figures["summary"]
    rows = [
        f"== {figures['form']} ({figures['calls']} calls)",
        f"WER agent / lead / merged   {wer['agent']} / {wer['lead']} / {wer['merged']}",
        f"vehicle models heard        {figures['models_heard']}",
        f"names heard                 {figures['names_heard']}",
        f"summary statements          right {summary.get('right', 0)}, "
        f"false {summary.get('false', 0)}, missed {summary.get('missed', 0)}",
        "appointments                right {right}, wrong {wrong}, missed {missed}".format(
            **figures["appointments"]
        ),
        f"categories precision/recall {categories['precision']} / {categories['recall']}",
        *(
            f"  category {slot:>2} p/r          {each['precision']} / {each['recall']}"
            for slot, each in figures["by_category"].items()
        ),
        f"call end accuracy           {figures['call_end_accuracy']}",
        f"real-time factor a channel  {figures['real_time_factor']}",
    ]
    rows += [f"  false: {statement}" for statement in figures["false_statements"]]
    return "\n".join(rows)
