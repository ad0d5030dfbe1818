"""A real SMTP server on loopback (aiosmtpd) that keeps what it receives (``tests.smtp``),
and the settings that point Django's SMTP backend at it."""

from __future__ import annotations

import pytest

from tests.smtp import Mailbox, SmtpServer, parts, smtp_settings

__all__ = ["Mailbox", "SmtpServer", "parts"]


@pytest.fixture
def smtp_server(settings):
    """A running SMTP server on loopback, and Django's SMTP backend pointed at it."""
    server = SmtpServer()
    server.start()
    smtp_settings(settings, server)
    yield server
    server.stop()
