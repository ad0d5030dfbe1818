"""Transcribe calls recorded before transcription was on (or again, ``--again``), in this
process: ``manage.py transcribe_calls [--account ID] [--limit N] [--again]``."""

from __future__ import annotations

import time
from typing import Any

from django.conf import settings
from django.core.management.base import BaseCommand, CommandError, CommandParser
from django.db.models import Q
from tqdm import tqdm

from calls.models import Call, RecordingStatus
from insights.models import TranscriptionStatus
from insights.services import transcription_again, transcription_run


class Command(BaseCommand):
    help = (
        "Transcribe the calls with a stored recording and no transcription done, one "
        "after the other in this process (no worker needed)."
    )

    def add_arguments(self, parser: CommandParser) -> None:
        parser.add_argument("--account", type=int, help="Only this account's calls.")
        parser.add_argument("--limit", type=int, help="At most this many calls.")
        parser.add_argument(
            "--again",
            action="store_true",
            help="Transcribe again calls already transcribed.",
        )

    def handle(self, *args: Any, **options: Any) -> None:
        if settings.TRANSCRIPTION_BACKEND == "none":
            raise CommandError("TRANSCRIPTION_BACKEND is none: nothing can transcribe.")
        calls = Call.objects.filter(recording__status=RecordingStatus.STORED)
        if options["account"]:
            calls = calls.filter(account_id=options["account"])
        if not options["again"]:
            calls = calls.filter(
                Q(transcription_job__isnull=True)
                | ~Q(
                    transcription_job__status__in=[
                        TranscriptionStatus.DONE,
                        TranscriptionStatus.NO_CONVERSATION,
                    ]
                )
            )
        call_ids = list(calls.order_by("pk").values_list("pk", flat=True))
        if options["limit"] is not None:
            call_ids = call_ids[: options["limit"]]

        outcomes = dict.fromkeys(TranscriptionStatus.values, 0)
        started = time.monotonic()
        for call_id in tqdm(
            call_ids, desc="Transcribing", unit="call", file=self.stderr._out
        ):
            transcription_again(call_id=call_id, dispatch=False)
            job = transcription_run(call_id=call_id)
            if job is not None:
                outcomes[job.status] += 1
        took = time.monotonic() - started
        self.stdout.write(
            f"{len(call_ids)} calls: {outcomes[TranscriptionStatus.DONE]} transcribed, "
            f"{outcomes[TranscriptionStatus.FAILED]} failed, "
            f"{outcomes[TranscriptionStatus.NO_CONVERSATION]} with no conversation, "
            f"{outcomes[TranscriptionStatus.PENDING]} to try again later, "
            f"in {took:.1f} s."
        )
