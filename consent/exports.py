"""The consent ledger as CSV for an audit, streamed row by row."""

from __future__ import annotations

import csv
from collections.abc import Iterator

from django.db.models import QuerySet

from consent.models import ConsentEvent
from core.text import spreadsheet_safe

HEADER = [
    "id",
    "organization",
    "account",
    "phone",
    "email",
    "kind",
    "calls",
    "texts",
    "e-mails",
    "source",
    "at (UTC)",
    "who",
    "detail",
    "reference",
    "recorded at (UTC)",
]


class _Echo:
    """csv.writer's file: hands each line back instead of storing it."""

    def write(self, value: str) -> str:
        return value


def ledger_csv(rows: QuerySet[ConsentEvent]) -> Iterator[str]:
    """The header, then one line per row (read in chunks, never all at once); every
    value cleaned for a spreadsheet (``core.text.spreadsheet_safe``)."""
    writer = csv.writer(_Echo())
    yield writer.writerow(HEADER)
    for row in rows.iterator(chunk_size=2000):
        values = [
            row.pk,
            row.organization.name,
            row.account.name,
            row.phone,
            row.email,
            row.get_kind_display(),
            "yes" if row.calls else "no",
            "yes" if row.texts else "no",
            "yes" if row.emails else "no",
            row.get_source_display(),
            row.at.isoformat(),
            row.who,
            row.detail,
            row.reference,
            row.recorded_at.isoformat(),
        ]
        yield writer.writerow([spreadsheet_safe(str(value)) for value in values])
