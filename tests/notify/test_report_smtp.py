"""The morning report received over real SMTP (aiosmtpd on loopback): a plain-text part,
an HTML part, and the charts as inline images the HTML names by Content-ID."""

from __future__ import annotations

import email
import io
import re
import socket
from email import policy
from email.message import EmailMessage

import pytest
from aiosmtpd.controller import Controller
from PIL import Image

from notify.models import Message, MessageStatus
from notify.report import report_store
from notify.services import message_send
from tests.notify.test_report import DAY, make_world

pytestmark = pytest.mark.django_db


class Inbox:
    def __init__(self) -> None:
        self.received: list[tuple[list[str], bytes]] = []

    async def handle_DATA(self, server, session, envelope) -> str:
        self.received.append((list(envelope.rcpt_tos), envelope.content))
        return "250 OK"


def _free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


@pytest.fixture
def inbox(settings):
    handler = Inbox()
    controller = Controller(handler, hostname="127.0.0.1", port=_free_port())
    controller.start()
    settings.EMAIL_BACKEND = "django.core.mail.backends.smtp.EmailBackend"
    settings.EMAIL_HOST = "127.0.0.1"
    settings.EMAIL_PORT = controller.port
    settings.EMAIL_USE_TLS = settings.EMAIL_USE_SSL = False
    settings.EMAIL_HOST_USER = settings.EMAIL_HOST_PASSWORD = ""
    try:
        yield handler
    finally:
        controller.stop()


def test_the_report_arrives_with_text_html_and_inline_charts(inbox):
    world = make_world()
    stored = report_store(user=world.global_manager, day=DAY)
    assert stored is not None
    assert message_send(message_id=stored.pk) == "sent"
    assert Message.objects.get(pk=stored.pk).status == MessageStatus.SENT

    [(recipients, raw)] = inbox.received
    assert recipients == ["gale@example.com"]
    mail = email.message_from_bytes(raw, policy=policy.default)
    assert isinstance(mail, EmailMessage)
    assert mail["Subject"] == stored.subject
    text = mail.get_body(preferencelist=("plain",))
    html = mail.get_body(preferencelist=("html",))
    assert text is not None
    assert html is not None
    assert "Leads" in text.get_content()
    assert "North: 6" in text.get_content()
    body = html.get_content()
    assert "<table" in body
    referenced = set(re.findall(r'src="cid:([^"]+)"', body))
    images = {
        part["Content-ID"].strip("<>"): part.get_content()
        for part in mail.walk()
        if part.get_content_type() == "image/png"
    }
    assert (
        referenced
        == set(images)
        == {
            "hours-2026-03-04.png",
            "responses-2026-03-04.png",
        }
    )
    for data in images.values():
        assert Image.open(io.BytesIO(data)).format == "PNG"
    # The images and the HTML travel together (multipart/related), text as the alternative.
    assert mail.get_content_type() == "multipart/related"
