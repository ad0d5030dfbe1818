"""E-mail to a lead through real processes: a lead posted over HTTP, a Celery worker on
Redis running the outbox's effect and the send task, and a real SMTP server on loopback
that receives the first-touch e-mail once, also when it was down for the first try."""

from __future__ import annotations

import pytest

from config.celery import app
from emails.models import EmailSettings, EmailStatus, LeadEmail
from tests.emails.conftest import LEAD_EMAIL
from tests.leads.factories import ParsingRuleFactory, VendorRegistrationFactory, adf
from tests.processes import service_env, start_worker, wait_for
from tests.smtp import SmtpServer

pytestmark = [pytest.mark.slow, pytest.mark.django_db(transaction=True)]


def test_a_posted_leads_email_arrives_once_after_the_mail_server_comes_back(
    tenant, tmp_path
):
    VendorRegistrationFactory(account=tenant.account, vendor_id="V-1000")
    ParsingRuleFactory(account=tenant.account)
    EmailSettings.objects.create(
        account=tenant.account, enabled=True, reply_to="sales@frontrange.example"
    )
    server = SmtpServer()  # not started: the first try finds the mail server down
    app.control.purge()
    worker = start_worker(
        tmp_path,
        env=service_env(EMAIL_URL=server.url, EMAIL_TIMEOUT="2", LOG_LEVEL="INFO"),
    )
    try:
        response = tenant.client().post(
            "/api/nl", {"xml": adf(vendor_id="V-1000"), **tenant.headers}
        )
        assert response.status_code == 200, response.json()
        wait_for(
            lambda: (
                LeadEmail.objects.filter(attempts__gte=1, error__contains="Refused")
                .exclude(status=EmailStatus.SENDING)
                .exists()
            ),
            timeout=60,
            what="the e-mail tried while the mail server is down",
            process=worker,
        )
        server.start()
        wait_for(
            lambda: LeadEmail.objects.filter(status=EmailStatus.SENT).exists(),
            timeout=60,
            what="the e-mail sent",
            process=worker,
        )
    finally:
        worker.stop()
        server.stop()

    (email,) = LeadEmail.objects.all()
    assert email.attempts == 2
    (mail,) = server.mailbox.to(LEAD_EMAIL)
    assert mail["Reply-To"] == "sales@frontrange.example"
    assert mail["Message-ID"] == email.message_id
