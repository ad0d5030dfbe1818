"""E-mail printed for a person to read: the default backend when no mail server is set.

Django's console backend writes each message's raw MIME source to ``sys.stdout``. Inside
a Celery worker ``sys.stdout`` is a logger (the worker sends what tasks print to its log
at WARNING), so every message the service sends under ``make run`` (the morning report,
alerts, CRM write-backs, password resets) became one escaped WARNING line. This backend
writes to the process's own standard output instead (``sys.__stdout__``), one framed
block a message, in one write: the headers that matter, the plain-text body decoded, and
one line for each other part (the HTML, an attachment) with its type and size.
"""

from __future__ import annotations

import logging
import smtplib
import sys
import threading
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from datetime import timedelta
from email.header import decode_header, make_header
from email.message import Message
from typing import IO, Any

from anymail.exceptions import (
    AnymailError,
    AnymailInvalidAddress,
    AnymailRecipientsRefused,
)
from django.core.mail import EmailMessage, EmailMultiAlternatives
from django.core.mail.backends.base import BaseEmailBackend
from django.utils import timezone

from core.handover import HELD_BY_BROKER
from core.logging import log_event

RULE = "=" * 72
# What a send through Django's backends raises when it did not go: a mail server or a
# provider refused it or was out of reach (``refused_for_good`` tells which).
SEND_ERRORS = (smtplib.SMTPException, OSError, AnymailError)
HEADERS = ("From", "To", "Cc", "Reply-To", "Subject", "Date", "Message-ID")


class ConsoleEmailBackend(BaseEmailBackend):
    """Prints each message readably on the process's standard output (never a log line)."""

    def __init__(self, *args: Any, stream: IO[str] | None = None, **kwargs: Any):
        super().__init__(*args, **kwargs)
        self.stream = stream
        self._lock = threading.RLock()

    def send_messages(self, email_messages: Sequence[EmailMessage]) -> int:
        stream = self.stream or sys.__stdout__ or sys.stdout
        sent = 0
        with self._lock:
            for email in email_messages:
                if not email.recipients():
                    continue
                try:
                    # One write a message: processes sharing a pipe (honcho's) interleave
                    # whole writes, never their lines.
                    stream.write(readable(email))
                    stream.flush()
                except Exception:
                    if not self.fail_silently:
                        raise
                    continue
                sent += 1
        return sent


def readable(email: EmailMessage) -> str:
    """A message as a person reads it: headers, the text body, then its other parts."""
    mime = email.message()
    lines = [RULE, f"E-mail (not sent: printed by {__name__})"]
    for name in HEADERS:
        value = mime.get(name)
        if value:
            lines.append(f"{name}: {_decoded_header(str(value))}")
    if email.bcc:
        lines.append(f"Bcc: {', '.join(email.bcc)}")
    lines += ["", email.body.rstrip("\n")]
    others = []
    if isinstance(email, EmailMultiAlternatives):
        others += [
            f"[{mimetype}, {len(str(content))} characters]"
            for content, mimetype in email.alternatives
        ]
    for attachment in email.attachments:
        others.append(_attachment_line(attachment))
    if others:
        lines += ["", *others]
    lines += [RULE, ""]
    return "\n".join(lines)


def _decoded_header(value: str) -> str:
    try:
        return str(make_header(decode_header(value)))
    except (ValueError, LookupError):
        return value


def _attachment_line(attachment: Any) -> str:
    if isinstance(attachment, Message):
        payload = attachment.get_payload(decode=True)
        size = len(payload) if isinstance(payload, bytes) else 0
        name = attachment.get_filename() or "(no name)"
        return f"[attached {name}: {attachment.get_content_type()}, {size} bytes]"
    filename, content, mimetype = attachment
    size = len(content.encode() if isinstance(content, str) else content)
    return (
        f"[attached {filename}: {mimetype or 'application/octet-stream'}, {size} bytes]"
    )


def refused_for_good(error: Exception) -> bool:
    """A mail server's 5xx answer to the sender, the recipients or the data, or a
    provider's refusal of the addresses: trying again meets the same refusal (anything
    else of ``SEND_ERRORS``, a server down or a 4xx, is worth another try)."""
    if isinstance(error, AnymailRecipientsRefused | AnymailInvalidAddress):
        return True
    if isinstance(error, smtplib.SMTPRecipientsRefused):
        return all(code >= 500 for code, _ in error.recipients.values())
    code = getattr(error, "smtp_code", 0)
    return isinstance(code, int) and code >= 500


def retry_wait(
    tries: int, *, first: float = 10.0, longest: float = 3600.0
) -> timedelta:
    """The wait before the next try of a send after ``tries`` failed ones: ``first``
    seconds, doubled each time, at most ``longest``."""
    return timedelta(seconds=min(longest, first * 2 ** max(0, tries - 1)))


# Waits between tries: 10 s, 20 s, 40 s, ... at most an hour; given up after MAX_TRIES.
FIRST_WAIT = 10.0
LONGEST_WAIT = 3600.0
MAX_TRIES = 12


@dataclass(frozen=True)
class MailOutbox:
    """A table of e-mails workers send (notify's messages to staff, emails' to leads): how
    a row, once claimed (``sending``, its try counted), is sent, and how a failed try is
    tried again or given up. Each row has ``status``, ``status_at``, ``sent_at``,
    ``due_at``, ``dispatched_at``, ``attempts`` and ``error``."""

    log: logging.Logger
    event: str  # the log events' prefix: "notify", "emails"
    key: str  # the row's id in the log events: "message_id", "email_id"
    waiting: str  # the status of a row waiting for its (next) try
    hand_over: Callable[..., object]  # (pk, countdown=seconds): a try due soon

    def send(self, row: Any, email: Callable[[], EmailMessage], **fields: Any) -> str:
        """Send ``email()`` for the claimed ``row``; ``fields`` go to the log event."""
        try:
            email().send(fail_silently=False)
        except SEND_ERRORS as error:
            return self.failed(row, error)
        except Exception as error:  # one that cannot be built: the next try is the same
            return self.failed(row, error, for_good=True)
        now = timezone.now()
        type(row).objects.filter(pk=row.pk).update(
            status="sent", sent_at=now, status_at=now, error=""
        )
        ids = {self.key: row.pk}
        log_event(self.log, f"{self.event}.sent", **ids, **fields, tries=row.attempts)
        return "sent"

    def failed(self, row: Any, error: Exception, *, for_good: bool = False) -> str:
        """A failed try: final for a refusal, a row that cannot be built or the last try;
        else waiting again (handed to the broker now when its wait is short)."""
        now = timezone.now()
        rows = type(row).objects.filter(pk=row.pk)
        reason = f"{type(error).__name__}: {error}"[:2000]
        ids = {self.key: row.pk, "tries": row.attempts}
        # Only the error's type is logged: its text may quote an address (on the row only).
        if for_good or refused_for_good(error) or row.attempts >= MAX_TRIES:
            rows.update(status="failed", status_at=now, error=reason)
            log_event(
                self.log,
                f"{self.event}.failed",
                level=logging.WARNING,
                **ids,
                error=type(error).__name__,
            )
            return "failed"
        wait = retry_wait(row.attempts, first=FIRST_WAIT, longest=LONGEST_WAIT)
        rows.update(
            status=self.waiting,
            status_at=now,
            due_at=now + wait,
            dispatched_at=None,  # marked once handed over with its countdown, if soon
            error=reason,
        )
        log_event(
            self.log,
            f"{self.event}.retry",
            level=logging.WARNING,
            **ids,
            wait=wait.total_seconds(),
            error=type(error).__name__,
        )
        if wait <= HELD_BY_BROKER:
            self.hand_over(row.pk, countdown=wait.total_seconds())
        return "retry"
