"""The default e-mail backend (no mail server set, as under `make run`) prints each message
for a person to read: headers, the text body as written and a line for each other part,
on the process's own standard output even inside a Celery worker, where ``sys.stdout``
is a logger that would make it one escaped WARNING line."""

from __future__ import annotations

import logging
import sys

from celery.utils.log import LoggingProxy
from django.core.mail import EmailMultiAlternatives, get_connection

BACKEND = "core.mail.ConsoleEmailBackend"


def morning_report() -> EmailMultiAlternatives:
    email = EmailMultiAlternatives(
        subject="Morning report — Demo Motors North",
        body="Good morning Mia,\n\n3 leads yesterday; Zoë answered 2 within 30 s.\n",
        from_email="leadcall@localhost",
        to=["mia@example.test"],
        cc=["owner@example.test"],
        headers={"Message-ID": "<notify-1@localhost>"},
    )
    email.attach_alternative("<p>Good morning Mia</p>", "text/html")
    email.attach("lead.xml", "<adf/>", "text/xml")
    return email


def test_default_backend_is_the_readable_console():
    from django.conf import settings

    from config.settings import base

    assert base.EMAIL_BACKEND == BACKEND
    # The test runner swaps in its own outbox; the setting it replaced is ours.
    assert settings.EMAIL_BACKEND == "django.core.mail.backends.locmem.EmailBackend"


def test_console_prints_headers_text_body_and_parts_readably(capfd):
    assert get_connection(BACKEND).send_messages([morning_report()]) == 1

    out = capfd.readouterr().out
    assert "From: leadcall@localhost\n" in out
    assert "To: mia@example.test\n" in out
    assert "Cc: owner@example.test\n" in out
    assert "Subject: Morning report — Demo Motors North\n" in out
    assert "Message-ID: <notify-1@localhost>\n" in out
    # The body as written: not quoted-printable, not base64.
    assert (
        "\nGood morning Mia,\n\n3 leads yesterday; Zoë answered 2 within 30 s.\n" in out
    )
    assert "[text/html, 23 characters]" in out
    assert "[attached lead.xml: text/xml, 6 bytes]" in out
    assert "=C3" not in out
    assert "Content-Transfer-Encoding" not in out


def test_console_inside_a_celery_worker_prints_instead_of_logging(
    capfd, caplog, monkeypatch
):
    # What a worker does to sys.stdout (worker_redirect_stdouts, at WARNING).
    proxy = LoggingProxy(logging.getLogger("celery.redirected"), logging.WARNING)
    monkeypatch.setattr(sys, "stdout", proxy)
    with caplog.at_level(logging.DEBUG):
        assert get_connection(BACKEND).send_messages([morning_report()]) == 1

    assert not [r for r in caplog.records if "Morning report" in r.getMessage()]
    out = capfd.readouterr().out
    assert "Subject: Morning report — Demo Motors North\n" in out
    assert "\n3 leads yesterday; Zoë answered 2 within 30 s.\n" in out


def test_console_skips_a_message_without_recipients(capfd):
    email = EmailMultiAlternatives(subject="Nobody", body="x", to=[])
    assert get_connection(BACKEND).send_messages([email]) == 0
    assert "Nobody" not in capfd.readouterr().out
