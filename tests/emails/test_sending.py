"""Sending, once: a mail server down is tried again with a growing wait (under the same
Message-ID), a refusal is final, the sweep hands over what the broker never got and what
a lost worker left; and support's admin pages."""

from __future__ import annotations

from datetime import timedelta

import pytest
from django.urls import reverse
from django.utils import timezone

from core.mail import FIRST_WAIT, MAX_TRIES
from emails import services
from emails.models import EmailSettings, EmailStatus, LeadEmail
from emails.services import lead_email_send, lead_emails_sweep
from tests.emails.conftest import LEAD_EMAIL, dealer, post_lead
from tests.scoring.factories import CallFactory

pytestmark = pytest.mark.django_db


@pytest.fixture
def stored(tenant, handed_over, django_capture_on_commit_callbacks) -> LeadEmail:
    """The first-touch e-mail of a posted lead, handed over and not sent yet."""
    dealer(tenant.account, "V-1000")
    post_lead(tenant, django_capture_on_commit_callbacks, vendor_id="V-1000")
    (email,) = LeadEmail.objects.all()
    assert handed_over == [(email.pk, None)]
    handed_over.clear()
    return email


def make_due(email: LeadEmail) -> None:
    LeadEmail.objects.filter(pk=email.pk).update(due_at=timezone.now())


def test_a_refused_recipient_fails_the_email_for_good(stored, smtp_server, handed_over):
    smtp_server.mailbox.refused.add(LEAD_EMAIL)

    assert lead_email_send(email_id=stored.pk) == "failed"

    stored.refresh_from_db()
    assert stored.status == EmailStatus.FAILED
    assert stored.attempts == 1
    assert "550" in stored.error
    assert "No such mailbox here" in stored.error
    assert handed_over == []  # never tried again
    assert lead_email_send(email_id=stored.pk) == "done"
    assert lead_emails_sweep(now=timezone.now() + timedelta(days=1)) == 0
    assert smtp_server.mailbox.received == []


def test_a_mail_server_down_is_tried_again_and_the_email_arrives_once_it_is_back(
    stored, smtp_server, handed_over
):
    smtp_server.stop()

    assert lead_email_send(email_id=stored.pk) == "retry"
    stored.refresh_from_db()
    assert stored.status == EmailStatus.QUEUED
    assert stored.attempts == 1
    assert "Connection refused" in stored.error or "Errno" in stored.error
    assert handed_over == [(stored.pk, FIRST_WAIT)]
    assert lead_email_send(email_id=stored.pk) == "not due"

    make_due(stored)
    assert lead_email_send(email_id=stored.pk) == "retry"
    assert handed_over[-1] == (stored.pk, 2 * FIRST_WAIT)

    smtp_server.start()
    make_due(stored)
    assert lead_email_send(email_id=stored.pk) == "sent"

    stored.refresh_from_db()
    assert (stored.status, stored.attempts, stored.error) == (EmailStatus.SENT, 3, "")
    (mail,) = smtp_server.mailbox.to(LEAD_EMAIL)
    assert mail["Message-ID"] == stored.message_id


def test_the_last_try_fails_the_email(stored, smtp_server, handed_over):
    smtp_server.stop()
    LeadEmail.objects.filter(pk=stored.pk).update(attempts=MAX_TRIES - 1)

    assert lead_email_send(email_id=stored.pk) == "failed"

    stored.refresh_from_db()
    assert (stored.status, stored.attempts) == (EmailStatus.FAILED, MAX_TRIES)
    assert handed_over == []


def test_email_turned_off_before_it_went_cancels_it(stored, smtp_server, tenant):
    config = EmailSettings.objects.get(account=tenant.account)
    config.enabled = False  # as the admin saves it
    config.save()

    assert lead_email_send(email_id=stored.pk) == "canceled"

    stored.refresh_from_db()
    assert stored.status == EmailStatus.CANCELED
    assert stored.error == (
        "E-mail to leads was turned off for the account before it was due."
    )
    assert smtp_server.mailbox.received == []


def test_the_sweep_hands_over_what_the_broker_never_got_and_what_a_lost_worker_left(
    stored, smtp_server, handed_over
):
    now = timezone.now()
    # Not handed over yet within the grace of its publish on commit: left to it.
    assert lead_emails_sweep(now=now) == 0
    later = now + timedelta(minutes=1)
    assert lead_emails_sweep(now=later) == 1
    assert handed_over == [(stored.pk, None)]
    handed_over.clear()

    # Claimed by a worker that was lost mid-send: tried again, the try counted.
    LeadEmail.objects.filter(pk=stored.pk).update(
        status=EmailStatus.SENDING, status_at=now - timedelta(minutes=1), attempts=1
    )
    assert lead_emails_sweep() == 0
    LeadEmail.objects.filter(pk=stored.pk).update(status_at=now - timedelta(minutes=6))
    assert lead_emails_sweep() == 1
    assert handed_over == [(stored.pk, None)]
    assert lead_email_send(email_id=stored.pk) == "sent"
    stored.refresh_from_db()
    assert (stored.status, stored.attempts) == (EmailStatus.SENT, 2)
    assert len(smtp_server.mailbox.to(LEAD_EMAIL)) == 1


def test_an_email_due_later_waits_for_the_sweep(tenant, handed_over, smtp_server):
    dealer(tenant.account, "V-1000")
    call = CallFactory(account=tenant.account, email=LEAD_EMAIL, first_name="Sam")
    due = timezone.now() + timedelta(days=3)

    email = services.email_to_lead(call=call, purpose="not_reached", due_at=due)

    assert email is not None
    assert handed_over == []  # no worker holds it for days
    assert lead_email_send(email_id=email.pk) == "not due"
    assert lead_emails_sweep(now=due - timedelta(seconds=1)) == 0
    assert lead_emails_sweep(now=due) == 1
    # A cadence's step names itself: a second e-mail of the purpose for the call.
    assert (
        services.email_to_lead(call=call, purpose="not_reached", key="cadence:7")
        is not None
    )
    assert services.email_to_lead(call=call, purpose="not_reached") is None


def test_support_lists_the_emails_and_edits_the_settings(admin_client, stored, tenant):
    page = admin_client.get(reverse("admin:emails_leademail_changelist"))
    assert page.status_code == 200
    assert LEAD_EMAIL in page.content.decode()
    filtered = admin_client.get(
        reverse("admin:emails_leademail_changelist"),
        {"status__exact": "sent"},
    )
    assert LEAD_EMAIL not in filtered.content.decode()
    detail = admin_client.get(
        reverse("admin:emails_leademail_change", args=[stored.pk])
    )
    assert detail.status_code == 200
    assert admin_client.get(reverse("admin:emails_leademail_add")).status_code == 403

    settings_row = EmailSettings.objects.get(account=tenant.account)
    response = admin_client.post(
        reverse("admin:emails_emailsettings_change", args=[settings_row.pk]),
        {
            "enabled": "on",
            "from_email": "sales@frontrange.example",
            "from_name": "Front Range",
            "reply_to": "not an address",
            "automatic_limit": "3",
        },
    )
    assert response.status_code == 200
    assert "Enter a valid email address." in response.content.decode()
    settings_row.refresh_from_db()
    assert settings_row.reply_to == ""


def test_support_sends_a_failed_email_again_once_the_cause_is_mended(
    admin_client, stored, smtp_server, handed_over, django_capture_on_commit_callbacks
):
    smtp_server.mailbox.refused.add(LEAD_EMAIL)
    assert lead_email_send(email_id=stored.pk) == "failed"
    smtp_server.mailbox.refused.clear()

    with django_capture_on_commit_callbacks(execute=True):
        response = admin_client.post(
            reverse("admin:emails_leademail_changelist"),
            {"action": "send_again", "_selected_action": [str(stored.pk)]},
        )

    assert response.status_code == 302
    assert handed_over == [(stored.pk, None)]
    assert lead_email_send(email_id=stored.pk) == "sent"
    stored.refresh_from_db()
    assert (stored.status, stored.attempts) == (EmailStatus.SENT, 1)
    assert len(smtp_server.mailbox.to(LEAD_EMAIL)) == 1
    # A sent one is left alone.
    with django_capture_on_commit_callbacks(execute=True):
        admin_client.post(
            reverse("admin:emails_leademail_changelist"),
            {"action": "send_again", "_selected_action": [str(stored.pk)]},
        )
    assert handed_over == [(stored.pk, None)]
