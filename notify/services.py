"""The outbox: a message is stored once for its event (its ``key``), handed to a worker
when the transaction that wrote it commits, and sent through Django's e-mail backend
(SMTP, the console, or a provider through django-anymail). A failed try is tried again
with a growing wait; the sweep hands over what the broker never got."""

from __future__ import annotations

import base64
import hashlib
import logging
from datetime import datetime, timedelta
from email.mime.image import MIMEImage
from typing import Any

from django.conf import settings
from django.core.mail import EmailMultiAlternatives
from django.db import transaction
from django.utils import timezone

from accounts.models import Account
from calls.models import Call
from core.handover import REFUSED, HandOver, to_hand_over
from core.logging import log_event_on_commit
from core.mail import MAX_TRIES, MailOutbox
from core.sweeps import each
from core.text import one_line
from notify.models import Channel, Message, MessageStatus
from users.models import User

log = logging.getLogger(__name__)
message_hand_over = HandOver(
    task="notify.tasks.message_send_task",
    key="message_id",
    event="notify.dispatch_failed",
    log=log,
    waiting=lambda message_id: Message.objects.filter(
        pk=message_id, status=MessageStatus.PENDING
    ),
)

outbox = MailOutbox(
    log=log,
    event="notify",
    key="message_id",
    waiting=MessageStatus.PENDING,
    hand_over=message_hand_over,
)
# A message "sending" this long lost its worker mid-send: it is tried again, under the
# same Message-ID, so a mail server or CRM that saw it once can drop the copy.
SENDING_LOST_AFTER = timedelta(minutes=5)
ADF_FILENAME = "lead.xml"


def message_queue(
    *,
    key: str,
    kind: str,
    to: list[str] | str,
    subject: str,
    text: str,
    html: str = "",
    adf: str = "",
    images: list[dict[str, str]] | None = None,
    account: Account | None = None,
    call: Call | None = None,
    user: User | None = None,
    alert: str = "",
    channel: str = Channel.EMAIL,
    held: str = "",
) -> Message | None:
    """Store the message of one event for one recipient and send it once the caller's
    transaction commits. A key already stored makes nothing (None): an event is told
    once. ``held`` stores it as not sent, with that reason."""
    now = timezone.now()
    fields: dict[str, Any] = {
        "kind": kind,
        "channel": channel,
        "to": "\n".join(to) if isinstance(to, list) else to,
        # One line: a CR/LF from a lead's name would start another header (core.text).
        "subject": one_line(subject)[:255],
        "text": text,
        "html": html,
        "adf": adf,
        "images": images or [],
        "account": account,
        "call": call,
        "user": user,
        "alert": alert,
        "due_at": now,
        "status_at": now,
    }
    if held:
        fields.update(status=MessageStatus.HELD, error=held)
    with transaction.atomic():
        message, created = Message.objects.get_or_create(key=key, defaults=fields)
    if not created:
        return None
    log_event_on_commit(
        log,
        "notify.stored",
        message_id=message.pk,
        kind=kind,
        channel=channel,
        held=held or None,
    )
    if channel == Channel.EMAIL and not held:
        message_hand_over.on_commit(message.pk)
    return message


def message_id_header(message: Message) -> str:
    """The same Message-ID for every try of a message."""
    digest = hashlib.sha256(message.key.encode()).hexdigest()[:16]
    domain = settings.DEFAULT_FROM_EMAIL.rpartition("@")[2] or "localhost"
    return f"<notify-{message.pk}-{digest}@{domain}>"


class _WithInlineImages(EmailMultiAlternatives):
    """The HTML part and the images it shows by Content-ID, as one multipart/related."""

    mixed_subtype = "related"


def message_email(message: Message) -> EmailMultiAlternatives:
    """The e-mail of a message: the plain text, the HTML with its inline images, and a
    CRM write-back's ADF document as ``lead.xml``."""
    email = (_WithInlineImages if message.images else EmailMultiAlternatives)(
        subject=one_line(message.subject),  # a row stored before subjects were cleaned
        body=message.text,
        from_email=settings.NOTIFY_FROM_EMAIL,
        to=message.recipients,
        headers={"Message-ID": message_id_header(message)},
    )
    if message.html:
        email.attach_alternative(message.html, "text/html")
    for image in message.images:
        part = MIMEImage(base64.b64decode(image["data"]), _subtype=image["subtype"])
        part.add_header("Content-ID", f"<{image['cid']}>")
        part.add_header("Content-Disposition", "inline", filename=image["cid"])
        email.attach(part)
    if message.adf:
        email.attach(ADF_FILENAME, message.adf, "text/xml")
    return email


def message_send(*, message_id: int) -> str:
    """Send one due message: a message already sent, being sent, held or given up is
    left alone. A failed try waits and is tried again, up to ``MAX_TRIES``."""
    now = timezone.now()
    with transaction.atomic():
        message = Message.objects.select_for_update().filter(pk=message_id).first()
        if message is None or message.status != MessageStatus.PENDING:
            return "done"
        if message.due_at > now:
            return "not due"
        message.status, message.status_at = MessageStatus.SENDING, now
        message.attempts += 1
        message.save(update_fields=["status", "status_at", "attempts"])
    return outbox.send(message, lambda: message_email(message), kind=message.kind)


def message_send_again(*, message: Message) -> Message:
    """Send a message again (support's "send again"): a new try now, whatever happened
    to the last one; the same Message-ID."""
    now = timezone.now()
    with transaction.atomic():
        Message.objects.filter(pk=message.pk).exclude(
            status=MessageStatus.SENDING
        ).update(
            status=MessageStatus.PENDING,
            due_at=now,
            dispatched_at=None,
            status_at=now,
            attempts=0,
        )
        message_hand_over.on_commit(message.pk)
    message.refresh_from_db()
    return message


def messages_sweep(*, now: datetime | None = None) -> int:
    """Hand over every due message the broker never got, and try again those whose
    worker was lost mid-send. Returns the messages handed over."""
    now = now or timezone.now()
    lost = Message.objects.filter(
        status=MessageStatus.SENDING, status_at__lt=now - SENDING_LOST_AFTER
    )
    # Each lost send was a try (counted when it was claimed): the last one fails the message.
    lost.filter(attempts__gte=MAX_TRIES).update(
        status=MessageStatus.FAILED,
        status_at=now,
        error=f"The worker was lost while sending, {MAX_TRIES} times.",
    )
    lost.update(
        status=MessageStatus.PENDING, status_at=now, due_at=now, dispatched_at=REFUSED
    )
    # Never handed over, or a hand-over that may have been lost (core.handover): never a
    # message merely waiting in the queue, so a stopped worker leaves one task for each.
    due = list(
        Message.objects.filter(status=MessageStatus.PENDING, due_at__lte=now)
        .filter(to_hand_over(now))
        .order_by("due_at")
        .values_list("pk", flat=True)[:1000]
    )
    each(sweep="messages", items=due, handle=message_hand_over)
    return len(due)
