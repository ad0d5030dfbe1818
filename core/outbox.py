"""The one outbox for side effects: a change's state moves on whatever its effects do.

A receiver of a change (a call's end, a score saved, an offer ended) only *records* what
must follow, with ``effect_record``: a row of a kind and ids, written in the change's
transaction, that nothing in the data can make fail. Once that commits, the row is handed
to a worker (``core.tasks.effect_run_task``), which *builds and sends* it by calling the
kind's handler (registered with ``@effect``) in a transaction of its own. A handler that
raises fails that one effect, with its reason, never the change; the row is shown on the
support overview, where support sends it again.

Every retry is bounded and every hand-over marked:

- a database out of reach is transient: tried again with a growing wait, at most
  ``MAX_TRIES`` times; anything else (a bug, a value the builder cannot take) fails at
  once, since trying again meets the same error;
- ``dispatched_at`` marks a hand-over (``core.handover``); the sweep sends an effect again
  only when it was never handed over (the broker was down) or its hand-over may have been
  lost (the broker's visibility timeout passed, or a new broker server), so a stopped
  worker never makes the queue hold more than one task per effect.
"""

from __future__ import annotations

import logging
from collections.abc import Callable
from dataclasses import dataclass
from datetime import datetime, timedelta
from typing import Any, TypeVar

from django.db import InterfaceError, OperationalError, transaction
from django.db.models import Count, Q
from django.utils import timezone

from core.handover import HandOver, to_hand_over
from core.logging import log_event, log_event_on_commit
from core.models import Effect, EffectStatus, SetAside

log = logging.getLogger(__name__)
# Handed over to the queue of the effect's kind (``queue=HANDLERS[kind].queue``).
effect_hand_over = HandOver(
    task="core.tasks.effect_run_task",
    key="effect_id",
    event="effect.dispatch_failed",
    log=log,
    waiting=lambda effect_id: Effect.objects.filter(
        pk=effect_id, status=EffectStatus.PENDING
    ),
)
T = TypeVar("T")

MAX_TRIES = 6
FIRST_WAIT = 10.0  # seconds; doubled after each transient failure
TRANSIENT = (OperationalError, InterfaceError)


@dataclass(frozen=True)
class Handler:
    run: Callable[..., object]
    queue: str


HANDLERS: dict[str, Handler] = {}


def effect(kind: str, *, queue: str = "default") -> Callable[[Callable[..., Any]], Any]:
    """Register the handler that builds and sends effects of ``kind``; it takes the
    effect's params as keyword arguments and must be safe to run twice (its rows keyed)."""

    def register(run: Callable[..., Any]) -> Callable[..., Any]:
        HANDLERS[kind] = Handler(run=run, queue=queue)
        return run

    return register


def effect_record(*, kind: str, key: str, about: str = "", **params: Any) -> bool:
    """In the caller's transaction: record that ``kind`` must follow (once per ``key``),
    handed to a worker once the transaction commits. Returns whether it was new."""
    if (
        kind not in HANDLERS
    ):  # a programming error, caught by every test that records it
        raise LookupError(f"no handler for the effect {kind!r}")
    now = timezone.now()
    # A savepoint: a key already recorded (the same change seen twice) is no error.
    with transaction.atomic():
        row, created = Effect.objects.get_or_create(
            key=key[:200],
            defaults={"kind": kind, "params": params, "about": about, "due_at": now},
        )
    if created:
        effect_hand_over.on_commit(row.pk, queue=HANDLERS[kind].queue)
    return created


def effect_guarded(
    *, kind: str, key: str, about: str, build: Callable[[], T], **params: Any
) -> T | None:
    """For an effect that must be written with the change itself (a webhook event is the
    change's snapshot, in order with the others): ``build`` runs in a savepoint, and one
    that raises is rolled back alone and recorded as a failed effect of ``kind`` with its
    reason, which support can send again (the kind's handler builds it anew from
    ``params``). The change goes on either way. Returns what ``build`` returned."""
    try:
        with transaction.atomic():
            return build()
    except Exception as error:
        reason = f"{type(error).__name__}: {error}"[:2000]
        now = timezone.now()
        with transaction.atomic():
            Effect.objects.get_or_create(
                key=key[:200],
                defaults={
                    "kind": kind,
                    "params": params,
                    "about": about,
                    "status": EffectStatus.FAILED,
                    "tries": 1,
                    "error": reason,
                    "due_at": now,
                },
            )
        log_event_on_commit(
            log,
            "effect.failed",
            kind=kind,
            about=about,
            tries=1,
            error=type(error).__name__,
        )
        return None


def effect_run(*, effect_id: int) -> str:
    """Build and send one due effect, once: the row is locked, its handler runs in the
    same transaction and the row is marked done with it, so a second delivery finds it
    done. A failure rolls back the handler's writes alone and is recorded on the row."""
    with transaction.atomic():
        row = Effect.objects.select_for_update().filter(pk=effect_id).first()
        if row is None or row.status != EffectStatus.PENDING:
            return "done"
        if row.due_at > timezone.now():
            return "not due"
        handler = HANDLERS.get(row.kind)
        try:
            with transaction.atomic():
                if handler is None:
                    raise LookupError(f"no handler for the effect {row.kind!r}")
                handler.run(**row.params)
        except Exception as error:
            failure: Exception | None = error
        else:
            failure = None
            row.status, row.done_at, row.error = EffectStatus.DONE, timezone.now(), ""
            row.tries += 1
            row.save(update_fields=["status", "done_at", "error", "tries"])
            log_event_on_commit(log, "effect.done", effect_id=row.pk, kind=row.kind)
    if failure is None:
        return "done"
    return _failed(row, failure)


def _failed(row: Effect, error: Exception) -> str:
    """Count the try; a transient error waits and is tried again, anything else (and the
    last try) fails the effect with its reason."""
    now = timezone.now()
    tries = row.tries + 1
    reason = f"{type(error).__name__}: {error}"[:2000]
    transient = isinstance(error, TRANSIENT) and tries < MAX_TRIES
    wait = FIRST_WAIT * 2 ** (tries - 1)
    Effect.objects.filter(pk=row.pk, status=EffectStatus.PENDING).update(
        tries=tries,
        error=reason,
        status=EffectStatus.PENDING if transient else EffectStatus.FAILED,
        due_at=now + timedelta(seconds=wait) if transient else row.due_at,
        dispatched_at=now if transient else row.dispatched_at,
    )
    # The reason may quote the data (a name): its type alone in the log.
    log_event(
        log,
        "effect.retry" if transient else "effect.failed",
        level=logging.WARNING if transient else logging.ERROR,
        effect_id=row.pk,
        kind=row.kind,
        about=row.about,
        tries=tries,
        error=type(error).__name__,
    )
    if transient:
        effect_hand_over(row.pk, countdown=wait, queue=HANDLERS[row.kind].queue)
        return "retry"
    return "failed"


def effect_send_again(*, effect: Effect) -> None:
    """Support's "send again": a failed (or stuck) effect is tried anew, its count reset."""
    Effect.objects.filter(pk=effect.pk).exclude(status=EffectStatus.DONE).update(
        status=EffectStatus.PENDING, tries=0, due_at=timezone.now(), dispatched_at=None
    )
    # Its kind's queue read once committed, as the effect's run reads its handler.
    transaction.on_commit(
        lambda: effect_hand_over(effect.pk, queue=HANDLERS[effect.kind].queue),
        robust=True,
    )


def effects_sweep(*, now: datetime | None = None) -> int:
    """Hand over every due effect never handed over (the broker was down) or whose
    hand-over was lost. Returns how many were handed over."""
    now = now or timezone.now()
    due = list(
        Effect.objects.filter(status=EffectStatus.PENDING, due_at__lte=now)
        .filter(to_hand_over(now))
        .order_by("due_at")
        .values_list("pk", "kind")[:1000]
    )
    for effect_id, kind in due:
        effect_hand_over(effect_id, queue=HANDLERS[kind].queue)
    return len(due)


@dataclass(frozen=True)
class EffectsSummary:
    failed: int
    pending: int
    set_aside: int


def effects_summary(*, since: datetime) -> EffectsSummary:
    """For support's overview: effects failed since ``since``, effects waiting, and sweep
    items set aside (core.sweeps)."""
    counts = Effect.objects.aggregate(
        failed=Count("pk", filter=Q(status=EffectStatus.FAILED, created_at__gte=since)),
        pending=Count("pk", filter=Q(status=EffectStatus.PENDING)),
    )
    return EffectsSummary(
        failed=counts["failed"],
        pending=counts["pending"],
        set_aside=SetAside.objects.filter(set_aside=True).count(),
    )
