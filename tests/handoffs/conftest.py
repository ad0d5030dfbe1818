"""The notify tests' SMTP server on loopback, for the managers' escalation e-mails."""

from tests.notify.conftest import smtp_server

__all__ = ["smtp_server"]
