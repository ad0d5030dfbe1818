"""A real SMTP server on loopback (aiosmtpd) that keeps what it receives and refuses the
recipients a test names, and the settings that point Django's SMTP backend at it."""

from __future__ import annotations

import email
import email.policy
from email.message import EmailMessage
from typing import Any

from aiosmtpd.controller import Controller

from tests.processes import free_port


class Mailbox:
    """What the server received: each message parsed, with its envelope."""

    def __init__(self) -> None:
        self.received: list[tuple[list[str], EmailMessage]] = []
        self.refused: set[str] = set()  # recipients answered 550 (a refusal for good)

    async def handle_RCPT(
        self, server: Any, session: Any, envelope: Any, address: str, options: Any
    ) -> str:
        if address in self.refused:
            return "550 5.1.1 No such mailbox here"
        envelope.rcpt_tos.append(address)
        return "250 OK"

    async def handle_DATA(self, server: Any, session: Any, envelope: Any) -> str:
        message = email.message_from_bytes(
            envelope.content, policy=email.policy.default
        )
        assert isinstance(message, EmailMessage)
        self.received.append((list(envelope.rcpt_tos), message))
        return "250 Message accepted for delivery"

    def to(self, address: str) -> list[EmailMessage]:
        return [m for rcpts, m in self.received if address in rcpts]


class SmtpServer:
    """An aiosmtpd server on a fixed loopback port, which a test may stop and start
    again (a mail server down, then back)."""

    def __init__(self) -> None:
        self.port = free_port()
        self.mailbox = Mailbox()
        self.controller: Controller | None = None

    def start(self) -> None:
        self.controller = Controller(self.mailbox, hostname="127.0.0.1", port=self.port)
        self.controller.start()

    def stop(self) -> None:
        if self.controller is not None:
            self.controller.stop()
            self.controller = None

    @property
    def url(self) -> str:
        return f"smtp://127.0.0.1:{self.port}"


def smtp_settings(settings: Any, server: SmtpServer) -> None:
    """Django's SMTP backend pointed at ``server`` (pytest-django's ``settings``)."""
    settings.EMAIL_BACKEND = "django.core.mail.backends.smtp.EmailBackend"
    settings.EMAIL_HOST = "127.0.0.1"
    settings.EMAIL_PORT = server.port
    settings.EMAIL_USE_TLS = settings.EMAIL_USE_SSL = False
    settings.EMAIL_HOST_USER = settings.EMAIL_HOST_PASSWORD = ""
    settings.EMAIL_TIMEOUT = 5


def parts(message: EmailMessage) -> dict[str, str]:
    """The message's text parts by content type (text/plain, text/html, text/xml)."""
    found: dict[str, str] = {}
    for part in message.walk():
        if part.get_content_maintype() == "text":
            found.setdefault(part.get_content_type(), part.get_content())
    return found
