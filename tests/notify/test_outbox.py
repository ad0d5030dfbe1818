"""The outbox: a message is stored once per event, sent once, tried again while the mail
server is down, given up on a refusal, swept when the broker never got it, and shown
with "send again" in the admin."""

from __future__ import annotations

from datetime import timedelta

import pytest
from anymail.backends.test import EmailBackend as AnymailTestBackend
from anymail.exceptions import AnymailRecipientsRefused
from django.core import mail
from django.core.mail import BadHeaderError
from django.utils import timezone

from core.handover import REFUSED
from core.mail import FIRST_WAIT, MAX_TRIES
from notify import services
from notify.models import Message, MessageKind, MessageStatus
from notify.services import message_queue, message_send, messages_sweep
from tests.accounts.factories import AccountFactory
from tests.handover import hold_hand_overs

pytestmark = pytest.mark.django_db

TO = "leads@crm.example"


@pytest.fixture
def dispatched(monkeypatch):
    """(message id, countdown) for each hand-over to the broker."""
    handed: list[tuple[int, float | None]] = []
    hold_hand_overs(
        monkeypatch,
        "notify.tasks.message_send_task",
        then=lambda message_id, countdown: handed.append((message_id, countdown)),
    )
    return handed


def store(django_capture_on_commit_callbacks, key="crm:final:1:" + TO, **fields):
    with django_capture_on_commit_callbacks(execute=True):
        return message_queue(
            key=key,
            kind=MessageKind.CRM,
            to=[TO],
            subject="Lead call outcome",
            text="Status: ANSWER\n",
            adf="<adf><prospect/></adf>",
            account=fields.pop("account", None) or AccountFactory(),
            **fields,
        )


def test_one_event_is_stored_once_and_handed_over_on_commit(
    django_capture_on_commit_callbacks, dispatched
):
    message = store(django_capture_on_commit_callbacks)
    assert message is not None
    assert dispatched == [(message.pk, None)]
    assert store(django_capture_on_commit_callbacks) is None
    assert Message.objects.count() == 1
    assert dispatched == [(message.pk, None)]


def test_while_the_mail_server_is_down_it_is_tried_again_then_sent_once(
    django_capture_on_commit_callbacks, dispatched, smtp_server
):
    message = store(django_capture_on_commit_callbacks)
    assert message is not None
    smtp_server.stop()

    assert message_send(message_id=message.pk) == "retry"
    message.refresh_from_db()
    assert message.status == MessageStatus.PENDING
    assert message.attempts == 1
    assert "ConnectionRefusedError" in message.error
    assert message.due_at > timezone.now()
    # The next try is handed to the broker with its wait, and is not due before it.
    assert dispatched[-1] == (message.pk, FIRST_WAIT)
    assert message_send(message_id=message.pk) == "not due"

    Message.objects.filter(pk=message.pk).update(due_at=timezone.now())
    assert message_send(message_id=message.pk) == "retry"
    message.refresh_from_db()
    assert message.attempts == 2
    assert dispatched[-1] == (message.pk, 2 * FIRST_WAIT)

    smtp_server.start()
    Message.objects.filter(pk=message.pk).update(due_at=timezone.now())
    assert message_send(message_id=message.pk) == "sent"
    # Delivered twice by the broker: sent once.
    assert message_send(message_id=message.pk) == "done"
    assert len(smtp_server.mailbox.to(TO)) == 1
    message.refresh_from_db()
    assert (message.status, message.attempts, message.error) == (
        MessageStatus.SENT,
        3,
        "",
    )
    assert message.sent_at is not None


def test_every_try_carries_the_same_message_id(
    django_capture_on_commit_callbacks, dispatched, smtp_server
):
    message = store(django_capture_on_commit_callbacks)
    assert message is not None
    message_send(message_id=message.pk)
    services.message_send_again(message=message)
    message_send(message_id=message.pk)
    first, second = smtp_server.mailbox.to(TO)
    assert first["Message-ID"] == second["Message-ID"]
    assert first["Message-ID"].startswith(f"<notify-{message.pk}-")


def test_a_refused_recipient_is_given_up_not_tried_again(
    django_capture_on_commit_callbacks, dispatched, smtp_server
):
    async def refuse(server, session, envelope, address, options):
        return "550 No such mailbox"

    smtp_server.mailbox.handle_RCPT = refuse
    smtp_server.stop()
    smtp_server.start()
    message = store(django_capture_on_commit_callbacks)
    assert message is not None
    dispatched.clear()

    assert message_send(message_id=message.pk) == "failed"
    message.refresh_from_db()
    assert message.status == MessageStatus.FAILED
    assert "550" in message.error
    assert dispatched == []


def test_after_the_last_try_it_is_given_up(
    django_capture_on_commit_callbacks, dispatched, smtp_server
):
    message = store(django_capture_on_commit_callbacks)
    assert message is not None
    smtp_server.stop()
    Message.objects.filter(pk=message.pk).update(attempts=MAX_TRIES - 1)
    assert message_send(message_id=message.pk) == "failed"
    message.refresh_from_db()
    assert (message.status, message.attempts) == (
        MessageStatus.FAILED,
        MAX_TRIES,
    )


def test_the_sweep_hands_over_what_the_broker_never_got_and_a_lost_send(
    django_capture_on_commit_callbacks, dispatched
):
    waiting = store(django_capture_on_commit_callbacks, key="a")
    lost = store(django_capture_on_commit_callbacks, key="b")
    recent = store(django_capture_on_commit_callbacks, key="c")
    later = store(django_capture_on_commit_callbacks, key="d")
    assert waiting is not None
    assert lost is not None
    assert recent is not None
    assert later is not None
    now = timezone.now()
    # The broker refused its hand-over (core.handover); "recent" was never handed over
    # (the fixture stands in for the publish) and is left a moment to its publish.
    Message.objects.filter(pk=waiting.pk).update(dispatched_at=REFUSED)
    Message.objects.filter(pk=lost.pk).update(
        status=MessageStatus.SENDING, status_at=now - timedelta(minutes=6)
    )
    Message.objects.filter(pk=later.pk).update(
        due_at=now + timedelta(hours=1), dispatched_at=None
    )
    dispatched.clear()

    assert messages_sweep(now=now) == 2
    assert sorted(pk for pk, _ in dispatched) == sorted([waiting.pk, lost.pk])
    lost.refresh_from_db()
    assert lost.status == MessageStatus.PENDING


def test_the_admin_lists_messages_shows_the_mail_sent_and_sends_one_again(
    admin_client, django_capture_on_commit_callbacks, dispatched, smtp_server
):
    message = store(django_capture_on_commit_callbacks)
    assert message is not None
    assert message_send(message_id=message.pk) == "sent"

    listing = admin_client.get("/admin/notify/message/")
    assert listing.status_code == 200
    assert TO in listing.content.decode()
    page = admin_client.get(f"/admin/notify/message/{message.pk}/change/")
    assert page.status_code == 200
    body = page.content.decode()
    assert "Content-Type: text/xml" in body
    assert "lead.xml" in body

    dispatched.clear()
    with django_capture_on_commit_callbacks(execute=True):
        response = admin_client.post(
            "/admin/notify/message/",
            {"action": "send_again", "_selected_action": [message.pk]},
        )
    assert response.status_code == 302
    assert dispatched == [(message.pk, None)]
    message.refresh_from_db()
    assert message.status == MessageStatus.PENDING
    assert message_send(message_id=message.pk) == "sent"
    assert len(smtp_server.mailbox.to(TO)) == 2


def test_a_provider_through_django_anymail_sends_it_and_a_refusal_is_final(
    settings, monkeypatch, django_capture_on_commit_callbacks, dispatched
):
    """EMAIL_BACKEND naming a django-anymail backend (its test backend: no network)."""
    settings.EMAIL_BACKEND = "anymail.backends.test.EmailBackend"
    message = store(django_capture_on_commit_callbacks)
    assert message is not None
    assert message_send(message_id=message.pk) == "sent"
    (sent,) = mail.outbox
    assert sent.to == [TO]
    assert getattr(sent, "anymail_status").status == {"sent"}  # noqa: B009  (set by anymail)
    assert [name for name, _, _ in sent.attachments] == ["lead.xml"]

    def refuse(*args, **kwargs):
        raise AnymailRecipientsRefused("every recipient refused")

    monkeypatch.setattr(AnymailTestBackend, "send_messages", refuse)
    refused = store(django_capture_on_commit_callbacks, key="refused")
    assert refused is not None
    assert message_send(message_id=refused.pk) == "failed"
    refused.refresh_from_db()
    assert refused.status == MessageStatus.FAILED
    assert "every recipient refused" in refused.error


def test_a_message_that_cannot_be_built_fails_at_once_with_its_reason(
    django_capture_on_commit_callbacks, dispatched, monkeypatch
):
    """A header Django refuses (a CR/LF stored in a row before subjects were cleaned, or
    any error that is not the network's) is the same on every try: failed, not retried."""
    message = store(django_capture_on_commit_callbacks)

    def refused(message):
        raise BadHeaderError("Header values can't contain newlines")

    monkeypatch.setattr(services, "message_email", refused)

    assert message_send(message_id=message.pk) == "failed"
    message.refresh_from_db()
    assert (message.status, message.attempts) == (MessageStatus.FAILED, 1)
    assert message.error == "BadHeaderError: Header values can't contain newlines"
    assert messages_sweep(now=timezone.now() + timedelta(hours=2)) == 0


def test_a_subject_stored_with_a_line_break_goes_out_on_one_line(
    django_capture_on_commit_callbacks, dispatched, settings
):
    settings.EMAIL_BACKEND = "django.core.mail.backends.locmem.EmailBackend"
    message = store(django_capture_on_commit_callbacks)
    Message.objects.filter(pk=message.pk).update(subject="Eve\r\nBcc: evil@x.example")

    assert message_send(message_id=message.pk) == "sent"
    (sent,) = mail.outbox
    assert sent.subject == "Eve Bcc: evil@x.example"
    assert sent.bcc == []


def test_a_send_lost_again_and_again_is_given_up_not_retried_forever(
    django_capture_on_commit_callbacks, dispatched
):
    """Each lost send counted as a try: the sweep that finds the last one lost fails it."""
    message = store(django_capture_on_commit_callbacks)
    dispatched.clear()
    now = timezone.now()
    for tries in range(1, MAX_TRIES + 1):
        Message.objects.filter(pk=message.pk).update(
            status=MessageStatus.SENDING,
            status_at=now - services.SENDING_LOST_AFTER - timedelta(seconds=1),
            attempts=tries,
        )
        messages_sweep(now=now)
        message.refresh_from_db()
        expected = MessageStatus.FAILED if tries == MAX_TRIES else "pending"
        assert message.status == expected, tries

    assert len(dispatched) == MAX_TRIES - 1
    assert message.error == (f"The worker was lost while sending, {MAX_TRIES} times.")
