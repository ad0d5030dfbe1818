"""The two speed numbers rolled up per account and local day, beside the dashboard's
rollup (scoring/rollup.py): ``RollupSpeed`` rows, per agent of the call, histograms of
whole seconds to first touch and to first human (as scoring's ``RollupResponse`` keeps
response times: exact, so the percentiles read from them equal the raw ones), and each
day's leads. Computed when scoring computes an account's days (its ``rollup_written``
signal, in the same transaction under the same lock) by the same counting as the raw
path (``handoffs.selectors``' spread), a day at a time; read by ``speed_figures`` for
the days the rollup holds.

A call's day is marked stale (scoring's ``RollupStale``) when its final status is set (as
before: its lead legs are dialed and answered before) and here when a text that may be
its first touch or first human is saved for it (an automatic text, a person's reply)."""

from __future__ import annotations

from datetime import date, timedelta
from typing import Any
from zoneinfo import ZoneInfo

from calls.models import Call
from handoffs.models import RollupSpeed
from handoffs.selectors import spread_of
from scoring.models import RollupStale
from scoring.rollup import ONE_DAY
from scoring.rollup_build import rollup_mark
from scoring.selectors import day_start
from texting.models import AUTOMATIC, Direction, Purpose, Text, TextStatus


def write_days(
    *,
    account_id: int,
    zone: ZoneInfo | None,
    first: date | None,
    last: date | None,
    **_: Any,
) -> None:
    """Replace the account's rows of days ``first``..``last`` (None: drop them all)."""
    rows = RollupSpeed.objects.filter(account_id=account_id)
    if first is None or last is None or zone is None:
        rows.delete()
        return
    rows.filter(day__gte=first, day__lte=last).delete()
    written: list[RollupSpeed] = []
    for n in range((last - first).days + 1):
        day = first + timedelta(days=n)
        calls = Call.objects.filter(
            account_id=account_id,
            received_at__gte=day_start(day, zone),
            received_at__lt=day_start(day + ONE_DAY, zone),
        )
        written += (
            RollupSpeed(
                account_id=account_id,
                day=day,
                agent_id=agent,
                kind=kind,
                seconds=seconds,
                calls=count,
            )
            for kind, agent, seconds, count in spread_of(calls, "agent_id")
        )
    RollupSpeed.objects.bulk_create(written, batch_size=1000)


def on_text_saved(
    instance: Text,
    created: bool,
    update_fields: frozenset[str] | None = None,
    **_: Any,
) -> None:
    """A text to a lead that may be their call's first touch or first human: the call's
    day is read from the data until the sweep has computed it again."""
    if instance.call_id is None or instance.direction != Direction.OUT:
        return
    moved = update_fields is not None and "due_at" in update_fields  # quiet hours
    if not created and not moved and instance.status != TextStatus.CANCELED:
        return  # a status of a text already counted (a canceled one no longer counts)
    if instance.purpose not in AUTOMATIC and not (
        instance.purpose == Purpose.REPLY and instance.sent_by_id is not None
    ):
        return
    if Text.call.is_cached(instance) and instance.call is not None:
        rollup_mark(call=instance.call)
    else:
        RollupStale.objects.create(call_id=instance.call_id)
