"""Building the dashboard's rollup (scoring/rollup.py says what it holds and how the
dashboard reads it). Every row is computed from the calls, an account's days at a time,
under a lock on the account's coverage row: two writers never interleave, and computing a
day again is harmless (its rows are deleted and written anew).

Kept in step three ways:
- ``rollup_mark``, in the transaction that changes a call's figures after it may have been
  rolled up (its final status, its score, an agent's leg ending after it ended): a stale
  mark, so the dashboard reads that call's day from the calls until it is computed again.
- ``rollup_sweep``, every minute (scoring.tasks): computes the marked days again, then each
  account's days that have ended since its coverage (yesterday, once today is over); an
  account without a rollup (new, or its timezone changed) from its first call on, up to
  ``SWEEP_DAYS`` days per run (a day of every account after midnight, a backlog in turns).
- ``rollup_rebuild`` (``manage.py rebuild_rollup``): an account's days from scratch, or
  again from a day on, then up to yesterday.
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Callable
from datetime import UTC, date, datetime, timedelta
from zoneinfo import ZoneInfo

from django.db import transaction
from django.db.models import Case, Count, DateField, Min, Value, When
from django.db.models.functions import TruncHour
from django.utils import timezone

from accounts.models import Account
from calls.models import Call, CallAttempt, CallStatus, Leg
from core.sweeps import each
from scoring.models import (
    RollupCoverage,
    RollupDay,
    RollupHour,
    RollupOffer,
    RollupResponse,
    RollupStale,
    RollupStaleDay,
)
from scoring.rollup import CALL_COUNTS, HOUR_COUNTS, OFFER_COUNTS, ONE_DAY, dicts
from scoring.selectors import day_start
from scoring.signals import rollup_written

CHUNK_DAYS = 31  # days computed in one transaction
SWEEP_DAYS = 1000  # account-days one sweep adds at most
SWEEP_MARKS = 5000  # stale marks one sweep takes at most
# A call of today needs no stale mark until this long before the account's midnight.
TODAY_MARGIN = timedelta(minutes=10)
DAY_MODELS: tuple[
    type[RollupDay], type[RollupResponse], type[RollupOffer], type[RollupHour]
] = (
    RollupDay,
    RollupResponse,
    RollupOffer,
    RollupHour,
)

# Told what was computed: the first and last day, and the calls they hold.
Progress = Callable[[date, date, int], None]


def _quiet(first: date, last: date, calls: int) -> None:
    return None


def rollup_mark(*, call: Call) -> None:
    """Mark the call's day stale, in the caller's transaction: the dashboard reads that
    day from the calls until the sweep has computed it again (never a stale figure). A
    call of the account's today needs none (most calls): see ``_of_today``."""
    if not _of_today(call):
        RollupStale.objects.create(call_id=call.pk)


def rollup_mark_leg(attempt: CallAttempt) -> None:
    """An agent's leg ended: a leg of a call still under way needs no mark (the call's
    final status marks its day); one that ends after its call did is marked, as its call
    would be. A leg whose call is not at hand is marked (reading the call costs as much)."""
    if not CallAttempt.call.is_cached(attempt):
        RollupStale.objects.create(call_id=attempt.call_id)
    elif attempt.call.status not in (CallStatus.QUEUED, CallStatus.DIALING):
        rollup_mark(call=attempt.call)


def _of_today(call: Call) -> bool:
    """Whether the call was received on its account's today, a while before midnight. The
    rollup never holds today (a day is added once it has ended) and no transaction that
    marks runs ``TODAY_MARGIN``, so the day, computed after midnight, sees the change.
    A call whose account is not at hand is taken as not of today (marked: one query, as
    reading the account would cost)."""
    if not Call.account.is_cached(call):
        return False
    zone = ZoneInfo(call.account.timezone)
    now = timezone.now()
    today = timezone.localdate(now, zone)
    return (
        timezone.localdate(call.received_at, zone) == today
        and now < day_start(today + ONE_DAY, zone) - TODAY_MARGIN
    )


def rollup_sweep(*, days: int = SWEEP_DAYS, marks: int = SWEEP_MARKS) -> dict[str, int]:
    """Compute the marked days again, and extend each account's rollup up to its
    yesterday, at most ``days`` account-days. Returns the days computed each way."""
    refreshed = _refresh_marked(marks)
    added = 0

    def extend(row: tuple[int, str, date | None, str | None]) -> None:
        # Each account alone (core.sweeps): one that fails never holds back the rest.
        nonlocal added
        pk, zone, through, cut_in = row
        until = _yesterday(zone)
        if added >= days or (
            cut_in == zone and through is not None and through >= until
        ):
            return
        added += _extend(pk, until=until, days=days - added)

    each(
        sweep="rollup",
        items=Account.objects.order_by("pk").values_list(
            "pk", "timezone", "rollup_coverage__through", "rollup_coverage__timezone"
        ),
        handle=extend,
        key=lambda row: row[0],
    )
    return {"refreshed": refreshed, "added": added}


def rollup_rebuild(
    *, account: Account, since: date | None = None, progress: Progress = _quiet
) -> int:
    """Compute ``account``'s rollup again, from its first call on (its rows deleted
    first), or from day ``since`` on when its rollup already holds that day; then up to
    its yesterday. Idempotent. Returns the days computed."""
    with transaction.atomic():
        coverage = _locked(account.pk)
        again = since is not None and coverage.through is not None
        if not again:
            _forget(coverage)
    done = 0
    if again:
        assert since is not None
        done += _recompute(account.pk, since, progress)
    return done + _extend(
        account.pk, until=_yesterday(account.timezone), progress=progress
    )


def rollup_forget(*, account: Account) -> None:
    """Drop ``account``'s rollup (its figures are read from the calls, exact and slower,
    until the sweep or ``rebuild_rollup`` has built it again): after calls were written
    behind the services' back, such as a demo's backdated calls."""
    with transaction.atomic():
        _forget(_locked(account.pk))


# --- the steps, each under the account's lock


def _locked(account_id: int) -> RollupCoverage:
    """The account's coverage row, locked (created first if need be). A rollup cut in
    another timezone than the account's present one is dropped: its days are not the
    account's days any more."""
    RollupCoverage.objects.bulk_create(
        [RollupCoverage(account_id=account_id, timezone="", through=None)],
        ignore_conflicts=True,
    )
    coverage = RollupCoverage.objects.select_for_update().get(account_id=account_id)
    zone = Account.objects.values_list("timezone", flat=True).get(pk=account_id)
    if coverage.timezone != zone:
        coverage.timezone = zone
        _forget(coverage)
    return coverage


def _forget(coverage: RollupCoverage) -> None:
    for model in DAY_MODELS:
        model.objects.filter(account_id=coverage.account_id).delete()
    rollup_written.send(
        sender=RollupCoverage,
        account_id=coverage.account_id,
        zone=None,
        first=None,
        last=None,
    )
    coverage.through = None
    coverage.save(update_fields=["timezone", "through", "updated_at"])


def _extend(
    account_id: int,
    *,
    until: date,
    days: int | None = None,
    progress: Progress = _quiet,
) -> int:
    """Compute the account's days after its coverage up to ``until``, a chunk of days per
    transaction, at most ``days`` of them (None: all). Returns the days computed."""
    done = 0
    while days is None or done < days:
        with transaction.atomic():
            coverage = _locked(account_id)
            zone = ZoneInfo(coverage.timezone)
            if coverage.through is None:
                start = min(until, _first_day(account_id, zone) or until)
            else:
                start = coverage.through + ONE_DAY
            if start > until:
                break
            chunk = CHUNK_DAYS if days is None else min(CHUNK_DAYS, days - done)
            end = min(until, start + timedelta(days=chunk - 1))
            calls = _write(account_id, zone, start, end)
            coverage.through = end
            coverage.save(update_fields=["through", "updated_at"])
        done += (end - start).days + 1
        progress(start, end, calls)
    return done


def _recompute(account_id: int, since: date, progress: Progress) -> int:
    """Compute again the account's days the rollup holds from ``since`` on."""
    done = 0
    start = since
    while True:
        with transaction.atomic():
            coverage = _locked(account_id)
            if coverage.through is None or start > coverage.through:
                return done
            end = min(coverage.through, start + timedelta(days=CHUNK_DAYS - 1))
            calls = _write(account_id, ZoneInfo(coverage.timezone), start, end)
        done += (end - start).days + 1
        progress(start, end, calls)
        start = end + ONE_DAY


def _refresh_marked(limit: int) -> int:
    """Compute again the days of the oldest ``limit`` stale marks that the rollup holds,
    and remove those marks with them (a mark of a day not held yet just goes: that day
    will be computed from the calls as they are then). Returns the days computed."""
    by_account: dict[int, list[tuple[int, datetime]]] = defaultdict(list)
    for pk, account_id, received_at in RollupStale.objects.order_by("pk").values_list(
        "pk", "call__account_id", "call__received_at"
    )[:limit]:
        by_account[account_id].append((pk, received_at))
    # Days marked as such (an appointment of the day changed): their own marks.
    day_marks: dict[int, list[tuple[int, datetime]]] = defaultdict(list)
    for pk, account_id, at in RollupStaleDay.objects.order_by("pk").values_list(
        "pk", "account_id", "at"
    )[:limit]:
        day_marks[account_id].append((pk, at))
    computed = 0
    for account_id in sorted({*by_account, *day_marks}):
        marks = by_account.get(account_id, [])
        marked_days = day_marks.get(account_id, [])
        with transaction.atomic():
            coverage = _locked(account_id)
            zone = ZoneInfo(coverage.timezone)
            through = coverage.through
            days = {timezone.localtime(at, zone).date() for _, at in marks}
            days |= {timezone.localtime(at, zone).date() for _, at in marked_days}
            for day in sorted(d for d in days if through is not None and d <= through):
                _write(account_id, zone, day, day)
                computed += 1
            # Only the marks read: one written since stays, for the next sweep.
            RollupStale.objects.filter(pk__in=[pk for pk, _ in marks]).delete()
            RollupStaleDay.objects.filter(pk__in=[pk for pk, _ in marked_days]).delete()
    return computed


def _yesterday(zone: str) -> date:
    return timezone.localtime(timezone.now(), ZoneInfo(zone)).date() - ONE_DAY


def _first_day(account_id: int, zone: ZoneInfo) -> date | None:
    earliest = Call.objects.filter(account_id=account_id).aggregate(
        at=Min("received_at")
    )["at"]
    return None if earliest is None else timezone.localtime(earliest, zone).date()


# --- computing days from the calls


def day_of(days: list[date], zone: ZoneInfo, received: str) -> Case:
    """Which of ``days`` (consecutive, in ``zone``) a call was received on, by the bounds
    the dashboard's range uses (``day_start``): the rollup and the calls never disagree
    on a call's day, whatever the database makes of timezones."""
    return Case(
        *(
            When(**{f"{received}__lt": day_start(day + ONE_DAY, zone)}, then=Value(day))
            for day in days
        ),
        output_field=DateField(),
    )


def _write(account_id: int, zone: ZoneInfo, first: date, last: date) -> int:
    """Compute the account's days ``first``..``last`` from its calls and replace their
    rows (inside the caller's transaction, under the coverage lock). Returns the calls."""
    for model in DAY_MODELS:
        model.objects.filter(
            account_id=account_id, day__gte=first, day__lte=last
        ).delete()
    days = [first + timedelta(days=n) for n in range((last - first).days + 1)]
    bounds = {
        "account_id": account_id,
        "received_at__gte": day_start(first, zone),
        "received_at__lt": day_start(last + ONE_DAY, zone),
    }
    calls = Call.objects.filter(**bounds).annotate(
        day=day_of(days, zone, "received_at")
    )
    rows = [
        RollupDay(
            account_id=account_id,
            day=row["day"],
            agent_id=row["agent"],
            source=row["source"],
            **{key: row[key] or 0 for key in CALL_COUNTS},
        )
        for row in dicts(
            calls.values("day", "agent", "source").annotate(**CALL_COUNTS).order_by()
        )
    ]
    RollupDay.objects.bulk_create(rows, batch_size=1000)
    RollupResponse.objects.bulk_create(
        (
            RollupResponse(
                account_id=account_id, day=day, agent_id=agent, seconds=seconds, calls=n
            )
            for day, agent, seconds, n in calls.filter(response_time__isnull=False)
            .values_list("day", "agent", "response_time")
            .annotate(n=Count("id"))
            .order_by()
        ),
        batch_size=1000,
    )
    RollupOffer.objects.bulk_create(
        (
            RollupOffer(
                account_id=account_id,
                day=row["day"],
                agent_id=row["agent"],
                **{key: row[key] for key in OFFER_COUNTS},
            )
            for row in dicts(
                CallAttempt.objects.filter(
                    leg=Leg.AGENT,
                    agent__isnull=False,
                    **{f"call__{name}": value for name, value in bounds.items()},
                )
                .annotate(day=day_of(days, zone, "call__received_at"))
                .values("day", "agent")
                .annotate(**OFFER_COUNTS)
                .order_by()
            )
        ),
        batch_size=1000,
    )
    RollupHour.objects.bulk_create(
        (
            RollupHour(account_id=account_id, day=row.pop("day"), **row)
            for row in dicts(
                calls.annotate(hour=TruncHour("received_at", tzinfo=UTC))
                .values("day", "hour")
                .annotate(**HOUR_COUNTS)
                .order_by()
            )
        ),
        batch_size=1000,
    )
    rollup_written.send(
        sender=RollupCoverage, account_id=account_id, zone=zone, first=first, last=last
    )
    return sum(row.received for row in rows)
