"""Reads of leads for support's screens. Support staff work across every organization in the
admin, so these reads are not narrowed to one; API callers never reach them."""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime

from django.db.models import Count

from leads.models import Lead, Outcome

# Leads that were received but will not be called, for a reason support can act on. A
# duplicate is not one (its first copy was handled), nor a lead not processed yet.
REFUSED = (
    Outcome.NO_VENDOR,
    Outcome.NO_RULE,
    Outcome.DO_NOT_PROCESS,
    Outcome.NO_PHONE,
    Outcome.NO_PROSPECT_ID,
    Outcome.MALFORMED,
    Outcome.NOT_ADF,
)


@dataclass(frozen=True)
class IntakeSummary:
    """Leads received since a moment, counted by outcome (every outcome present, zeros too)."""

    since: datetime
    by_outcome: dict[str, int]

    @property
    def received(self) -> int:
        return sum(self.by_outcome.values())

    @property
    def refused(self) -> int:
        return sum(self.by_outcome[outcome] for outcome in REFUSED)


def leads_intake_summary(*, since: datetime) -> IntakeSummary:
    """How many leads arrived since ``since``, by outcome, in one aggregate query."""
    counts = dict.fromkeys(Outcome.values, 0)
    rows = (
        Lead.objects.filter(received_at__gte=since)
        .order_by()
        .values("outcome")
        .annotate(n=Count("pk"))
    )
    for row in rows:
        counts[row["outcome"]] = row["n"]
    return IntakeSummary(since=since, by_outcome=counts)
