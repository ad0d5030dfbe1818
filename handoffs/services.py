"""Every write of a handoff: opened (once per account, phone and kind while open),
closed by a person's act, escalated once by the sweep."""

from __future__ import annotations

import logging
from collections.abc import Iterable
from datetime import datetime, timedelta

from django.db import transaction
from django.utils import timezone

from accounts.models import Account
from calls.models import Call
from core.logging import log_event, log_event_on_commit
from core.sweeps import each
from handoffs.models import (
    DEFAULT_LIMIT_MINUTES,
    ClosedBy,
    Handoff,
    HandoffKind,
    HandoffSettings,
)
from handoffs.signals import handoff_escalated
from texting.selectors import opt_out_in_force

log = logging.getLogger(__name__)


def handoff_open(
    *,
    account_id: int,
    phone: str,
    kind: str,
    opened_by: str,
    call: Call | None = None,
    at: datetime | None = None,
    wait_from: datetime | None = None,
) -> Handoff | None:
    """Open the timer of ``kind`` for the lead at ``phone``; one already open for them
    keeps running (its first moment counts) and nothing new is made (None)."""
    if not phone:
        return None
    at = at or timezone.now()
    handoff, made = Handoff.objects.get_or_create(
        account_id=account_id,
        phone=phone,
        kind=kind,
        closed_at=None,
        defaults={
            "call": call,
            "opened_at": at,
            "opened_by": opened_by[:40],
            "wait_from": max(at, wait_from) if wait_from else at,
        },
    )
    if not made:
        return None
    log_event_on_commit(
        log,
        "handoff.opened",
        handoff_id=handoff.pk,
        account_id=account_id,
        kind=kind,
        opened_by=handoff.opened_by,
    )
    return handoff


def handoffs_close(
    *,
    account_id: int,
    phone: str,
    kinds: Iterable[str],
    by: str,
    user_id: int | None = None,
    at: datetime | None = None,
) -> int:
    """Close the lead's open timers of ``kinds``: a person acted (``by``, the user
    ``user_id`` when known). Returns how many closed; none open is nothing to do."""
    at = at or timezone.now()
    closed = Handoff.objects.filter(
        account_id=account_id,
        phone=phone,
        kind__in=list(kinds),
        closed_at__isnull=True,
        opened_at__lte=at,
    ).update(closed_at=at, closed_by=by, closed_by_user_id=user_id)
    if closed:
        log_event_on_commit(
            log, "handoff.closed", account_id=account_id, by=by, handoffs=closed
        )
    return closed


def limits_of(account_ids: Iterable[int]) -> dict[int, int]:
    """Each account's limit in minutes (the default without a settings row)."""
    ids = list(account_ids)
    found = dict(
        HandoffSettings.objects.filter(account_id__in=ids).values_list(
            "account_id", "limit_minutes"
        )
    )
    return {pk: found.get(pk, DEFAULT_LIMIT_MINUTES) for pk in ids}


def handoff_escalate(*, handoff_id: int, now: datetime | None = None) -> bool:
    """Escalate one open handoff past its account's limit, once: the row is locked, and
    one closed or escalated meanwhile is left alone. Returns whether it escalated."""
    now = now or timezone.now()
    with transaction.atomic():
        handoff = (
            Handoff.objects.select_for_update(of=("self",))
            .select_related("account")
            .filter(pk=handoff_id, closed_at__isnull=True, escalated_at__isnull=True)
            .first()
        )
        if handoff is None:
            return False
        limit = limits_of([handoff.account_id])[handoff.account_id]
        if handoff.wait_from > now - timedelta(minutes=limit):
            return False
        if handoff.kind == HandoffKind.OPT_OUT and not _still_paused(handoff):
            # Nothing left to decide (the lead texted START to a number the account
            # shares): the lead ended it, nobody is told.
            handoff.closed_at, handoff.closed_by = now, ClosedBy.LEAD
            handoff.save(update_fields=["closed_at", "closed_by"])
            return False
        handoff.escalated_at = now
        handoff.save(update_fields=["escalated_at"])
        handoff_escalated.send(sender=Handoff, handoff=handoff)
    log_event_on_commit(
        log,
        "handoff.escalated",
        handoff_id=handoff.pk,
        account_id=handoff.account_id,
        kind=handoff.kind,
    )
    return True


def _still_paused(handoff: Handoff) -> bool:
    return (
        opt_out_in_force(
            account_id=handoff.account_id, phone=handoff.phone, confirmed=False
        )
        is not None
    )


def handoffs_sweep(*, now: datetime | None = None) -> int:
    """Escalate every open handoff past its account's limit, each alone (core.sweeps: one
    that fails never holds back another, and one that keeps failing is set aside).
    Returns how many escalated."""
    now = now or timezone.now()
    limits = limits_of(
        Account.objects.filter(
            handoffs__closed_at__isnull=True, handoffs__escalated_at__isnull=True
        )
        .values_list("pk", flat=True)
        .distinct()
    )
    if not limits:
        return 0
    shortest = min(limits.values())
    # Only the ids, oldest wait first; each is read again under its lock.
    waiting = list(
        Handoff.objects.filter(
            closed_at__isnull=True,
            escalated_at__isnull=True,
            wait_from__lte=now - timedelta(minutes=shortest),
        )
        .order_by("wait_from", "pk")
        .values_list("pk", flat=True)
    )
    escalated = 0

    def escalate(handoff_id: int) -> None:
        nonlocal escalated
        escalated += handoff_escalate(handoff_id=handoff_id, now=now)

    tally = each(sweep="handoffs.escalate", items=waiting, handle=escalate)
    if escalated or tally.failed:
        log_event(log, "handoffs.swept", escalated=escalated, failed=tally.failed)
    return escalated
