"""Texting's workflows: automatic texts when a call could not reach its lead, replies from
the call page, sending through the provider once, delivery statuses, and a lead's texts
(opt-out, opt-in, HELP, "call me", forwarded to the team).

Every text is stored before it is sent, in the transaction of what caused it, and handed
to a worker on commit; the sweep hands over what is due and was never handed over.
"""

from __future__ import annotations

import logging
from datetime import datetime, timedelta
from typing import Any

from django.core.exceptions import PermissionDenied, ValidationError
from django.db import transaction
from django.db.models import F, Q
from django.utils import timezone

from accounts.models import Account
from calls.models import Call, CallStatus
from core.handover import (
    HELD_BY_BROKER,
    SWEEP_GRACE,
    HandOver,
    to_hand_over,
)
from core.logging import log_event, log_event_on_commit, mask_phone
from core.sweeps import each
from providers import messaging_for
from providers.messaging import (
    OutgoingText,
    TextingUnavailable,
    TextOutcomeUnknown,
    TextRefused,
)
from texting import compose
from texting.models import (
    AUTOMATIC,
    FINAL,
    STAFF,
    STATUS_ORDER,
    Direction,
    Purpose,
    Text,
    TextingSettings,
    TextStatus,
)
from texting.payloads import text_event_emit
from texting.selectors import (
    automatic_texts_sent,
    latest_call,
    number_shared,
    opt_out_in_force,
    opted_out,
    sender_of,
    texting_settings_of,
)
from users.models import User

log = logging.getLogger(__name__)
text_hand_over = HandOver(
    task="texting.tasks.text_send_task",
    key="text_id",
    event="texting.dispatch_failed",
    log=log,
    waiting=lambda text_id: Text.objects.filter(
        pk=text_id, status=TextStatus.SCHEDULED
    ),
)

# Texts due within core.handover.HELD_BY_BROKER are handed to the broker with a
# countdown; later ones (quiet hours) to the sweep, so no worker holds a task overnight.
# A text still "sending" after this was lost with its worker mid-hand-over: it may have
# reached the provider, so it is marked failed, never sent a second time.
SENDING_LOST_AFTER = timedelta(minutes=5)
MAX_BODY = 1600  # Twilio's limit on one message's body
NOT_REACHED = frozenset({CallStatus.NOANSWER, CallStatus.BUSY, CallStatus.FAILED})
UNDER_WAY = (CallStatus.QUEUED, CallStatus.DIALING)
# Why nothing goes from a number accounts of several organizations use (said to a dealer's
# staff too, so the other organization is not named).
SHARED_NUMBER = (
    "The number this account texts from is also used by another organization: nothing is "
    "sent from it until support gives each organization its own."
)


# --- automatic texts (the call pipeline's signals, ``texting.triggers``)


def _template(config: TextingSettings, purpose: str) -> str:
    templates: dict[str, str] = {
        Purpose.INSTANT: config.instant_template if config.instant_enabled else "",
        Purpose.NOT_REACHED: config.not_reached_template,
        Purpose.NO_AGENT: config.no_agent_template,
        Purpose.WAITING: config.waiting_template,
    }
    return templates[purpose]


def texts_automatically(*, account: Account, purpose: str) -> bool:
    """Whether the account sends its automatic text of ``purpose`` at all (texting on, the
    template not empty): read from the shared cache, so asking costs no query."""
    config = texting_settings_of(account)
    return bool(config and config.enabled and _template(config, purpose))


def text_automatic(
    *, call: Call, purpose: str, opening: datetime | None = None
) -> Text | None:
    """The account's automatic text of ``purpose`` for the call's lead, stored in the
    caller's transaction and sent on commit, or at the end of quiet hours. Nothing when
    texting is off, the template is empty, the number opted out, the account's limit per
    lead is reached, or the call already has a text of this purpose."""
    account = call.account
    config = texting_settings_of(account)
    if (
        config is None
        or not config.enabled
        or not (template := _template(config, purpose))
    ):
        return None
    if Text.objects.filter(call=call, purpose=purpose).exists():
        return None  # a signal sent again (a call waiting twice) texts once
    now = timezone.now()
    zone = compose.lead_zone(call.phone, account.timezone)
    body = compose.render(
        template,
        first_name=call.first_name or "there",
        vehicle=compose.vehicle_of(call),
        dealer=account.name,
        agent=call.agent.get_full_name() if call.agent else "our team",
        opening=compose.opening_words(opening, zone, now) if opening else "",
    )
    return text_to_lead(call=call, purpose=purpose, body=body)


def text_to_lead(*, call: Call, purpose: str, body: str) -> Text | None:
    """One text the service sends the call's lead now (``texts_to_lead``)."""
    return texts_to_lead(call=call, purpose=purpose, timed=[(body, None)])[0]


def texts_to_lead(
    *,
    call: Call,
    purpose: str,
    timed: list[tuple[str, datetime | None]],
    before: datetime | None = None,
) -> list[Text | None]:
    """Texts the service sends the call's lead without a person (an automatic purpose),
    each ``(body, at)`` due at ``at`` (now for None) moved past the account's quiet hours
    in the lead's timezone, stored in the caller's transaction; the stored text or None
    for each. None for all when texting is off or the number opted out; None for those
    past the account's limit per lead, and for those quiet hours would move to ``before``
    or later (a reminder after the appointment). The same reads however many texts."""
    account = call.account
    config = texting_settings_of(account)
    if (
        config is None
        or not config.enabled
        or opted_out(account_id=account.pk, phone=call.phone)
    ):
        return [None] * len(timed)
    room = config.automatic_limit - automatic_texts_sent(
        account_id=account.pk, phone=call.phone
    )
    zone = compose.lead_zone(call.phone, account.timezone)
    stored: list[Text | None] = []
    for body, at in timed:
        due = compose.allowed_from(
            at or timezone.now(),
            zone=zone,
            start=config.quiet_start,
            end=config.quiet_end,
        )
        if before is not None and due >= before:
            stored.append(None)
            continue
        if room <= 0:
            log_on_commit("texting.limit_reached", call_id=call.pk, purpose=purpose)
            stored.append(None)
            continue
        room -= 1
        stored.append(
            text_store(
                account=account,
                config=config,
                lead_phone=call.phone,
                call=call,
                purpose=purpose,
                to_number=call.phone,
                body=body,
                due_at=due,
            )
        )
    return stored


def texts_cancel(*, text_ids: list[int]) -> int:
    """Texts not sent yet that are no longer wanted (a reminder of an appointment moved or
    cancelled): canceled, so the sweep never sends them. How many were."""
    return Text.objects.filter(
        pk__in=text_ids, status=TextStatus.SCHEDULED, direction=Direction.OUT
    ).update(status=TextStatus.CANCELED, status_at=timezone.now())


def text_store(
    *,
    account: Account,
    config: TextingSettings | None,
    lead_phone: str,
    call: Call | None,
    purpose: str,
    to_number: str,
    body: str,
    due_at: datetime | None = None,
    sent_by: User | None = None,
    recipient: User | None = None,
) -> Text:
    """Store an outgoing text and hand it to a worker once the caller's transaction
    commits (later ones are left to the sweep)."""
    now = timezone.now()
    due_at = due_at or now
    dispatch = due_at - now <= HELD_BY_BROKER
    text = Text.objects.create(
        account=account,
        lead_phone=lead_phone,
        call=call,
        direction=Direction.OUT,
        purpose=purpose,
        to_number=to_number,
        from_number=sender_of(account, config),
        body=body[:MAX_BODY],
        due_at=due_at,
        sent_by=sent_by,
        recipient=recipient,
        provider=messaging_for(is_test=account.is_test).name,
    )
    log_on_commit(
        "texting.stored",
        text_id=text.pk,
        purpose=purpose,
        to=mask_phone(to_number),
        due_at=due_at.isoformat(),
    )
    if dispatch:
        countdown = max(0.0, (due_at - now).total_seconds()) or None
        text_hand_over.on_commit(text.pk, countdown)
    return text


def log_on_commit(event: str, **fields: Any) -> None:
    log_event_on_commit(log, event, **fields)


# --- replies from the call page


def text_reply_send(*, call: Call, user: User, body: str) -> Text:
    """A reply to the call's lead from the account's number, written on the call page by
    the call's agent, a manager or staff (the page checks who may)."""
    body = body.strip()
    if not body:
        raise ValidationError("Write the text first.")
    if len(body) > MAX_BODY:
        raise ValidationError(f"A text is at most {MAX_BODY} characters.")
    config = texting_settings_of(call.account)
    if config is None or not config.enabled:
        raise PermissionDenied("Texting is off for this account.")
    if number_shared(sender_of(call.account, config)):
        raise ValidationError(SHARED_NUMBER)
    with transaction.atomic():
        in_force = opt_out_in_force(account_id=call.account_id, phone=call.phone)
        if in_force is not None and not in_force.confirmed:
            raise ValidationError(
                "Texts to this lead are paused: their reply may be an opt-out. "
                "Confirm it or dismiss it first."
            )
        if in_force is not None:
            raise ValidationError(
                "This lead opted out of texts (replied STOP): nothing can be sent "
                "until they text START."
            )
        return text_store(
            account=call.account,
            config=config,
            lead_phone=call.phone,
            call=latest_call(account_id=call.account_id, phone=call.phone) or call,
            purpose=Purpose.REPLY,
            to_number=call.phone,
            body=body,
            sent_by=user,
        )


# --- sending, once


def text_send(*, text_id: int) -> str:
    """Hand a due text to the provider, once: a text no longer scheduled (sent, being sent,
    canceled) is left alone, and one whose outcome is unknown is never sent again.
    Raises ``TextingUnavailable`` (the task retries) when the provider did not take it."""
    with transaction.atomic():
        text = (
            Text.objects.select_for_update(of=("self",))
            .select_related("account")
            .filter(pk=text_id)
            .first()
        )
        if text is None or text.status != TextStatus.SCHEDULED:
            return "done"
        now = timezone.now()
        if text.due_at > now:
            # Early (a clock ahead of the scheduler's): handed over again when due.
            text.dispatched_at = None
            text.save(update_fields=["dispatched_at"])
            return "not due"
        config = texting_settings_of(text.account)
        reason = _not_sendable(text, config)
        if reason:
            text_status_advance(text, TextStatus.CANCELED, error=reason)
            return "canceled"
        if text.automatic:
            assert config is not None  # _not_sendable checked
            allowed = compose.allowed_from(
                now,
                zone=compose.lead_zone(text.to_number, text.account.timezone),
                start=config.quiet_start,
                end=config.quiet_end,
            )
            if allowed > now:  # the settings changed since it was stored
                text.due_at, text.dispatched_at = allowed, None
                text.save(update_fields=["due_at", "dispatched_at"])
                return "not due"
        text_status_advance(text, TextStatus.SENDING)
    outgoing = OutgoingText(
        text_id=text.pk,
        to=text.to_number,
        sender=text.from_number,
        body=text.body,
        to_lead=text.purpose not in STAFF,
    )
    try:
        provider_id = messaging_for(is_test=text.account.is_test).send(outgoing)
    except TextingUnavailable:
        Text.objects.filter(pk=text.pk, status=TextStatus.SENDING).update(
            status=TextStatus.SCHEDULED
        )
        raise
    except (TextRefused, TextOutcomeUnknown) as error:
        _text_failed(text.pk, str(error))
        return "failed"
    except Exception as error:
        # Not the provider out of reach: the next try would meet the same error, and the
        # text may have left already, so it is never sent twice. Failed now, with why.
        _text_failed(text.pk, f"{type(error).__name__}: {error}")
        return "failed"
    with transaction.atomic():
        text = Text.objects.select_for_update(of=("self",)).get(pk=text.pk)
        text.provider_id, text.handed_at = provider_id, timezone.now()
        text.save(update_fields=["provider_id", "handed_at"])
        text_status_advance(text, TextStatus.QUEUED)
        text_event_emit(text=text, type="text_sent")
    _log_sent(text)
    return "sent"


def _log_sent(text: Text) -> None:
    log_event(
        log,
        "texting.sent",
        text_id=text.pk,
        purpose=text.purpose,
        provider=text.provider,
        to=mask_phone(text.to_number),
        seconds_since_stored=round(
            (text.handed_at - text.created_at).total_seconds(), 3
        )
        if text.handed_at
        else None,
    )


def _not_sendable(text: Text, config: TextingSettings | None) -> str:
    """Why a text may no longer go (empty: it may)."""
    if number_shared(text.from_number):
        return SHARED_NUMBER
    if text.purpose in AUTOMATIC and (config is None or not config.enabled):
        return "Texting was turned off for the account before the text was due."
    if text.purpose in {Purpose.OPT_OUT, Purpose.HELP} | STAFF:
        return ""  # the confirmation of a STOP, a HELP answer, a note to the team
    in_force = opt_out_in_force(account_id=text.account_id, phone=text.to_number)
    if in_force is not None and not in_force.confirmed:
        return "Texts to the lead were paused (a possible opt-out) before it was sent."
    if in_force is not None:
        return "The lead opted out of texts before it was sent."
    return ""


def _text_failed(text_id: int, reason: str) -> None:
    with transaction.atomic():
        text = Text.objects.select_for_update(of=("self",)).get(pk=text_id)
        text_status_advance(text, TextStatus.FAILED, error=reason)
    log_event(
        log, "texting.failed", level=logging.WARNING, text_id=text_id, reason=reason
    )


def text_status_advance(text: Text, status: str, *, error: str = "") -> bool:
    """Move the text's status forward (never back); returns whether it moved."""
    now_at = STATUS_ORDER[TextStatus(text.status)]
    if now_at == FINAL or STATUS_ORDER[TextStatus(status)] < now_at:
        return False
    text.status, text.status_at = status, timezone.now()
    text.error = error or text.error
    text.save(update_fields=["status", "status_at", "error"])
    return True


# Every status Twilio gives an outgoing message (its MessageStatus), as ours. "accepted"
# and "scheduled" (a Messaging Service took it, or holds it for later) and "sending" (on
# its way to the carrier) are the provider's hands; "partially_delivered" (some segments
# of a long text arrived) reached the phone; "canceled" (a scheduled send called off) was
# never sent. "receiving" and "received" belong to incoming messages and change nothing
# of an outgoing one.
PROVIDER_STATUS = {
    "accepted": TextStatus.QUEUED,
    "scheduled": TextStatus.QUEUED,
    "queued": TextStatus.QUEUED,
    "sending": TextStatus.QUEUED,
    "sent": TextStatus.SENT,
    "delivered": TextStatus.DELIVERED,
    "partially_delivered": TextStatus.DELIVERED,
    "read": TextStatus.DELIVERED,
    "undelivered": TextStatus.UNDELIVERED,
    "failed": TextStatus.FAILED,
    "canceled": TextStatus.CANCELED,
}


def text_status_update(*, text_id: int, status: str, error: str = "") -> bool:
    """A delivery status from the provider; a late or repeated one changes nothing. A
    text that failed stays failed: it is shown so, never sent again."""
    ours = PROVIDER_STATUS.get(status)
    if ours is None:
        return False
    with transaction.atomic():
        text = Text.objects.select_for_update(of=("self",)).filter(pk=text_id).first()
        if text is None or text.direction != Direction.OUT:
            return False
        return text_status_advance(text, ours, error=error)


def text_staff_send(
    *, account: Account, call: Call | None, user: User, body: str
) -> Text | None:
    """A text to a member of the account's staff (a manager's alert) from the account's
    number; None when texting is off for the account or the user has no phone."""
    config = texting_settings_of(account)
    if config is None or not config.enabled or not user.phone_number:
        return None
    return text_store(
        account=account,
        config=config,
        lead_phone=call.phone if call else "",
        call=call,
        purpose=Purpose.ALERT,
        to_number=user.phone_number,
        body=body,
        recipient=user,
    )


# --- the sweep


def texts_sweep(*, now: datetime | None = None) -> int:
    """Hand over every due text the broker never got (its publish failed, or it waited
    for the morning), and mark failed the texts lost mid-hand-over. Returns the texts
    handed over."""
    now = now or timezone.now()
    lost = Text.objects.filter(
        status=TextStatus.SENDING, status_at__lt=now - SENDING_LOST_AFTER
    ).values_list("pk", flat=True)
    for text_id in list(lost):
        _text_failed(
            text_id,
            "The worker sending it was lost: it may have reached the provider, so it "
            "is not sent again.",
        )
    due = list(
        Text.objects.filter(status=TextStatus.SCHEDULED, due_at__lte=now)
        # Never handed over, or a hand-over that may have been lost (core.handover):
        # never one merely waiting in the queue.
        .filter(to_hand_over(now))
        .order_by("due_at")
        .values_list("pk", flat=True)[:1000]
    )
    each(sweep="texts", items=due, handle=text_hand_over)
    return len(due)


# The scheduler's tick (every second) hands over the texts due within this, and again a
# text still not sent this long past its time and its last hand-over (a hand-over lost
# with a worker: sent once all the same, ``text_send``).
LOOKAHEAD = timedelta(seconds=2)
AGAIN_AFTER = timedelta(seconds=10)


def texts_hand_over_due(*, now: datetime | None = None) -> int:
    """The scheduler's tick: the texts falling due within ``LOOKAHEAD`` that nothing hands
    over otherwise (stored for later: reminders, texts that waited for the morning; or
    never handed over), and those still not sent ``AGAIN_AFTER`` past their time and their
    last hand-over, marked first in one statement, then handed to the broker to be sent at
    their due time. The sweep stays their safety net; a text handed over twice is sent
    once (``text_send``). How many were handed over."""
    now = now or timezone.now()
    never = Q(dispatched_at__isnull=True) & (
        # Not one its own commit hands over (due within HELD_BY_BROKER of being stored),
        # unless that hand-over was lost.
        Q(due_at__gt=F("created_at") + HELD_BY_BROKER)
        | Q(created_at__lt=now - SWEEP_GRACE)
    )
    again = Q(due_at__lt=now - AGAIN_AFTER, dispatched_at__lt=now - AGAIN_AFTER)
    with transaction.atomic():
        due = list(
            Text.objects.select_for_update(skip_locked=True)
            .filter(status=TextStatus.SCHEDULED, due_at__lte=now + LOOKAHEAD)
            .filter(never | again)
            .order_by("due_at")
            .values_list("pk", "due_at")[:1000]
        )
        Text.objects.filter(pk__in=[pk for pk, _ in due]).update(dispatched_at=now)
    for pk, due_at in due:
        text_hand_over(pk, eta=max(due_at, now))
    return len(due)
