"""The first-touch and not-reached messages by e-mail: a lead posted to ``/api/nl`` with an
e-mail address, on an account that e-mails its leads, ends up in a real SMTP server's
mailbox, from the account's address, replying to its CRM, with the opt-out link."""

from __future__ import annotations

import re

import pytest

from calls.models import Call, CallStatus
from emails.models import EmailStatus, LeadEmail
from emails.services import lead_email_send
from tests.emails.conftest import LEAD_EMAIL, dealer, post_lead
from tests.smtp import parts
from tests.users.factories import agent

pytestmark = pytest.mark.django_db

OPT_OUT_LINK = re.compile(r"https://leads\.example\.test/emails/opt-out/[\w:.-]+")


def texts(mail) -> tuple[str, str]:
    """The plain text and the HTML, with the line ends SMTP gave them made ``\n``."""
    found = parts(mail)
    return (
        found["text/plain"].replace("\r\n", "\n"),
        found["text/html"].replace("\r\n", "\n"),
    )


def send_all(handed_over) -> list[str]:
    return [lead_email_send(email_id=email_id) for email_id, _ in handed_over]


def test_a_posted_lead_gets_the_first_touch_email_from_the_account_replying_to_its_crm(
    tenant, smtp_server, handed_over, django_capture_on_commit_callbacks
):
    tenant.account.name = "Front Range Toyota"
    tenant.account.save(update_fields=["name"])
    dealer(
        tenant.account,
        "V-1000",
        from_email="sales@frontrange.example",
        reply_to="leads@crm.frontrange.example",
    )

    call = post_lead(tenant, django_capture_on_commit_callbacks, vendor_id="V-1000")

    (stored,) = LeadEmail.objects.all()
    assert handed_over == [(stored.pk, None)]
    assert (stored.account, stored.call_id, stored.purpose) == (
        tenant.account,
        call.pk,
        "instant",
    )
    assert send_all(handed_over) == ["sent"]

    (mail,) = smtp_server.mailbox.to(LEAD_EMAIL)
    assert mail["From"] == "Front Range Toyota <sales@frontrange.example>"
    assert mail["To"] == LEAD_EMAIL
    assert mail["Reply-To"] == "leads@crm.frontrange.example"
    assert mail["Subject"] == "Front Range Toyota: thanks for your enquiry, Maria"
    assert mail["List-Unsubscribe-Post"] == "List-Unsubscribe=One-Click"
    link = OPT_OUT_LINK.fullmatch(mail["List-Unsubscribe"].strip().strip("<>"))
    assert link is not None
    text, html = texts(mail)
    assert text.startswith(
        "Hi Maria,\n\nThanks for your enquiry about the 2025 Toyota Camry. This is "
        "Front Range Toyota: one of our team is calling you right now."
    )
    assert f"Unsubscribe: {link.group(0)}\n" in text
    assert "<p>Hi Maria,</p>" in html
    assert f'<a href="{link.group(0)}">Unsubscribe</a>' in html

    stored.refresh_from_db()
    assert stored.status == EmailStatus.SENT
    assert stored.attempts == 1
    assert stored.sent_at is not None
    assert mail["Message-ID"] == stored.message_id
    assert stored.message_id.endswith("@frontrange.example>")
    # Delivered twice (a redelivered task): sent once.
    assert lead_email_send(email_id=stored.pk) == "done"
    assert len(smtp_server.mailbox.received) == 1


def test_without_an_address_of_its_own_the_account_sends_from_the_default(
    tenant, smtp_server, handed_over, django_capture_on_commit_callbacks, settings
):
    settings.DEFAULT_FROM_EMAIL = "leadcall@service.example"
    dealer(tenant.account, "V-1000")

    post_lead(tenant, django_capture_on_commit_callbacks, vendor_id="V-1000")
    assert send_all(handed_over) == ["sent"]

    (mail,) = smtp_server.mailbox.to(LEAD_EMAIL)
    assert mail["From"] == f"{tenant.account.name} <leadcall@service.example>"
    assert mail["Reply-To"] is None


def test_nothing_is_emailed_when_the_account_has_it_off_or_the_lead_gave_no_address(
    tenant, smtp_server, handed_over, django_capture_on_commit_callbacks
):
    config = dealer(tenant.account, "V-1000", enabled=False)
    post_lead(tenant, django_capture_on_commit_callbacks, vendor_id="V-1000")
    config.enabled = True  # as the admin saves it: the cached settings go stale
    config.save()
    post_lead(
        tenant,
        django_capture_on_commit_callbacks,
        vendor_id="V-1000",
        email="",
        prospect_id="P-2",
    )
    post_lead(
        tenant,
        django_capture_on_commit_callbacks,
        vendor_id="V-1000",
        email="not an address",
        prospect_id="P-3",
    )

    assert Call.objects.count() == 3
    assert LeadEmail.objects.count() == 0
    assert handed_over == []


def test_the_limit_per_address_holds_across_the_accounts_leads(
    tenant, smtp_server, handed_over, django_capture_on_commit_callbacks
):
    dealer(tenant.account, "V-1000", automatic_limit=1)
    post_lead(tenant, django_capture_on_commit_callbacks, vendor_id="V-1000")
    post_lead(
        tenant,
        django_capture_on_commit_callbacks,
        vendor_id="V-1000",
        prospect_id="P-2",
    )

    assert send_all(handed_over) == ["sent"]
    assert LeadEmail.objects.count() == 1
    assert len(smtp_server.mailbox.to(LEAD_EMAIL)) == 1


def test_a_lead_not_reached_gets_the_not_reached_email_too(
    tenant, smtp_server, handed_over, world
):
    dealer(tenant.account, "V-1000", reply_to="sales@frontrange.example")
    agent(tenant.account, phone="+13035550140")

    # The simulator never answers 0000: the one attempt ends NOANSWER.
    call = post_lead(tenant, world.capture, vendor_id="V-1000", phone="303-555-0000")
    world.run()

    call.refresh_from_db()
    assert call.status == CallStatus.NOANSWER
    assert sorted(LeadEmail.objects.values_list("purpose", flat=True)) == [
        "instant",
        "not_reached",
    ]
    assert send_all(handed_over) == ["sent", "sent"]
    subjects = sorted(mail["Subject"] for mail in smtp_server.mailbox.to(LEAD_EMAIL))
    assert subjects == [
        f"{tenant.account.name}: thanks for your enquiry, Maria",
        f"{tenant.account.name}: we tried to call you, Maria",
    ]
    (missed,) = [
        mail
        for mail in smtp_server.mailbox.to(LEAD_EMAIL)
        if "tried" in mail["Subject"]
    ]
    assert texts(missed)[0].startswith(
        f"Hi Maria,\n\nThis is {tenant.account.name}. We just tried to call you about "
        "the 2025 Toyota Camry and could not reach you."
    )


def test_a_name_with_a_line_break_stays_in_the_subject(
    tenant, smtp_server, handed_over, django_capture_on_commit_callbacks
):
    dealer(tenant.account, "V-1000")
    call = post_lead(tenant, django_capture_on_commit_callbacks, vendor_id="V-1000")
    (stored,) = LeadEmail.objects.all()
    LeadEmail.objects.filter(pk=stored.pk).update(subject="Hi\r\nBcc: x@evil.example")

    assert send_all(handed_over) == ["sent"]
    (mail,) = smtp_server.mailbox.to(call.email)
    assert mail["Subject"] == "Hi Bcc: x@evil.example"
    assert mail["Bcc"] is None
    assert [rcpts for rcpts, _ in smtp_server.mailbox.received] == [[LEAD_EMAIL]]
