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

import smtplib
import sys
import threading
from collections.abc import Sequence
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
