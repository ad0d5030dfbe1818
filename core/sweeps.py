"""Each item of a sweep alone: one item's error is logged (its sweep, its id and the
error's type, never its data) and counted, and the sweep goes on with the rest. An item
that fails ``SET_ASIDE_AFTER`` times in a row is set aside (``core.models.SetAside``) with
its reason, shown on the support overview, and no longer tried until a person sends it
again. A success clears its count."""

from __future__ import annotations

import logging
from collections.abc import Callable, Iterable
from contextlib import nullcontext
from dataclasses import dataclass
from typing import Any, TypeVar

from django.db import connection, transaction
from django.db.models import F

from core.logging import log_event
from core.models import SetAside

T = TypeVar("T")
SET_ASIDE_AFTER = 5
log = logging.getLogger(__name__)


@dataclass
class Tally:
    handled: int = 0
    failed: int = 0
    set_aside: int = 0  # items skipped because they were set aside


def each(
    *,
    sweep: str,
    items: Iterable[T],
    handle: Callable[[T], Any],
    key: Callable[[T], object] = lambda item: item,
) -> Tally:
    """Call ``handle`` on each item (named by ``key``: its id), each in its own guard."""
    tally = Tally()
    counted = {row.item: row for row in SetAside.objects.filter(sweep=sweep)}
    for item in items:
        name = str(key(item))
        row = counted.get(name)
        if row is not None and row.set_aside:
            tally.set_aside += 1
            continue
        # Inside a transaction (a test's, a caller's) a savepoint keeps one item's database
        # error from spoiling the rest; outside, each handler owns its transactions.
        guard = transaction.atomic() if connection.in_atomic_block else nullcontext()
        try:
            with guard:
                handle(item)
        except Exception as error:
            tally.failed += 1
            item_failed(sweep=sweep, item=name, error=error)
        else:
            tally.handled += 1
            if row is not None:
                SetAside.objects.filter(pk=row.pk).delete()
    return tally


def item_failed(*, sweep: str, item: str, error: BaseException) -> bool:
    """Count one failure of ``item``; set it aside at ``SET_ASIDE_AFTER``. Returns whether
    it is set aside now."""
    reason = f"{type(error).__name__}: {error}"[:2000]
    row, _ = SetAside.objects.get_or_create(sweep=sweep, item=item)
    SetAside.objects.filter(pk=row.pk).update(failures=F("failures") + 1, error=reason)
    row.refresh_from_db(fields=["failures"])
    aside = row.failures >= SET_ASIDE_AFTER
    if aside:
        SetAside.objects.filter(pk=row.pk).update(set_aside=True)
    # The error's text may quote the item's data (a name, a header): the type alone here,
    # the text on the row, where support reads it.
    log_event(
        log,
        "sweep.item_failed",
        level=logging.ERROR if aside else logging.WARNING,
        sweep=sweep,
        item=item,
        error=type(error).__name__,
        failures=row.failures,
        then="set aside for a person" if aside else "the next sweep tries it again",
    )
    return aside


def send_again(*, sweep: str, item: str) -> int:
    """Support's "send again": the item is swept again from the next run."""
    return SetAside.objects.filter(sweep=sweep, item=item).delete()[0]
