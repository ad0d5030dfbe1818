from dataclasses import dataclass
from datetime import datetime, timedelta
from typing import Any

from django.db.models import Count, Min, Q

from insights.models import Transcription, TranscriptionStatus


@dataclass(frozen=True)
class TranscriptionsSummary:
    pending: int
    oldest_pending_minutes: int  # 0 when nothing waits
    failed: int  # in the last 24 hours


def transcriptions_summary(*, now: datetime) -> TranscriptionsSummary:
    """The backlog (how many wait, the oldest's age) and the day's failures: one query."""
    since = now - timedelta(hours=24)
    row = Transcription.objects.aggregate(
        pending=Count("pk", filter=Q(status=TranscriptionStatus.PENDING)),
        oldest=Min("created_at", filter=Q(status=TranscriptionStatus.PENDING)),
        failed=Count(
            "pk",
            filter=Q(status=TranscriptionStatus.FAILED, finished_at__gte=since),
        ),
    )
    oldest = row["oldest"]
    minutes = int((now - oldest).total_seconds() // 60) if oldest else 0
    return TranscriptionsSummary(row["pending"], max(minutes, 0), row["failed"])


def summary_evidence_of(*, call: Any) -> list[dict[str, Any]]:
    """The call's summary sentence by sentence, each with the transcript lines (from 0)
    it was written from; empty when the summary on the call is no longer the one written
    (a person changed it) or none was kept."""
    if not call.summary.strip():
        return []  # nothing to explain: no query
    evidence = (
        Transcription.objects.filter(call_id=call.pk)
        .values_list("summary_evidence", flat=True)
        .first()
    ) or []
    written = " ".join(str(item.get("sentence", "")) for item in evidence)
    if not evidence or " ".join(written.split()) != " ".join(call.summary.split()):
        return []
    return [
        {
            "sentence": str(item["sentence"]),
            "lines": [int(n) for n in item.get("lines", [])],
        }
        for item in evidence
    ]
