"""Reads of calls for support's screens: what is waiting, what is dialing, what is stuck.
Support staff work across every organization in the admin, so these reads are not narrowed
to one; API callers never reach them."""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime, timedelta

from django.db.models import Count, Exists, OuterRef, Q

from calls.models import Call, CallAttempt, CallStatus

# The sweep re-drives a due queued call within seconds (CALLS_SWEEP_SECONDS) and ends a
# silent leg after CALLS_LOST_AFTER_SECONDS, so a call past these has nothing driving it:
# no worker, no beat, or a bug. Either way support should look.
QUEUED_OVERDUE_AFTER = timedelta(minutes=5)
DIALING_SILENT_AFTER = timedelta(minutes=10)
ENDED_WITHIN = timedelta(hours=24)


def queued_overdue(*, now: datetime) -> Q:
    """Queued calls due (``next_attempt_at``, or when queued) more than
    ``QUEUED_OVERDUE_AFTER`` ago and still not dialed."""
    cutoff = now - QUEUED_OVERDUE_AFTER
    return Q(status=CallStatus.QUEUED) & (
        Q(next_attempt_at__lt=cutoff)
        | Q(next_attempt_at__isnull=True, created_at__lt=cutoff)
    )


def dialing_silent(*, now: datetime) -> Q:
    """Dialing calls with no event for ``DIALING_SILENT_AFTER``: none of their legs was
    created, requested, rang, answered or ended since."""
    cutoff = now - DIALING_SILENT_AFTER
    recent = CallAttempt.objects.filter(call=OuterRef("pk")).filter(
        Q(created_at__gte=cutoff)
        | Q(dial_requested_at__gte=cutoff)
        | Q(ringing_at__gte=cutoff)
        | Q(answered_at__gte=cutoff)
        | Q(ended_at__gte=cutoff)
    )
    return Q(status=CallStatus.DIALING, created_at__lt=cutoff) & Q(~Exists(recent))


def stuck(*, now: datetime) -> Q:
    """Calls nothing is driving: queued and overdue, or dialing and silent."""
    return queued_overdue(now=now) | dialing_silent(now=now)


@dataclass(frozen=True)
class CallsSummary:
    queued: int
    dialing: int
    queued_overdue: int
    dialing_silent: int
    failed: int
    noagent: int

    @property
    def stuck(self) -> int:
        return self.queued_overdue + self.dialing_silent


def calls_summary(*, now: datetime) -> CallsSummary:
    """Calls queued and dialing now, the stuck among them, and calls that ended FAILED or
    NOAGENT within ``ENDED_WITHIN``, in one aggregate query."""
    since = now - ENDED_WITHIN
    ended_badly = Q(
        status__in=[CallStatus.FAILED, CallStatus.NOAGENT], ended_at__gte=since
    )
    counts = Call.objects.filter(
        Q(status__in=[CallStatus.QUEUED, CallStatus.DIALING]) | ended_badly
    ).aggregate(
        queued=Count("pk", filter=Q(status=CallStatus.QUEUED)),
        dialing=Count("pk", filter=Q(status=CallStatus.DIALING)),
        queued_overdue=Count("pk", filter=queued_overdue(now=now)),
        dialing_silent=Count("pk", filter=dialing_silent(now=now)),
        failed=Count("pk", filter=ended_badly & Q(status=CallStatus.FAILED)),
        noagent=Count("pk", filter=ended_badly & Q(status=CallStatus.NOAGENT)),
    )
    return CallsSummary(**counts)
