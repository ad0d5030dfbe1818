"""The CRM write-back through real processes: a lead posted over HTTP, a Celery worker on
Redis running the call and the outbox, and a real SMTP server on loopback that receives
the ADF document, once, also when it was down for the first tries."""

from __future__ import annotations

import pytest

from calls.models import Call, CallStatus, DialingSettings
from config.celery import app
from leads.adf import parse_adf
from leads.models import Lead
from notify.models import Message, MessageStatus, NotifySettings
from tests.leads.factories import ParsingRuleFactory, VendorRegistrationFactory, adf
from tests.notify.conftest import SmtpServer, parts
from tests.processes import service_env, start_worker, wait_for
from tests.users.factories import agent

pytestmark = [pytest.mark.slow, pytest.mark.django_db(transaction=True)]

CRM = "leads@crm.frontrange.example"


@pytest.fixture
def dealer(tenant):
    VendorRegistrationFactory(account=tenant.account, vendor_id="V-1000")
    ParsingRuleFactory(account=tenant.account)
    DialingSettings.objects.create(account=tenant.account, lead_attempt_limit=1)
    NotifySettings.objects.create(account=tenant.account, crm_addresses=CRM)
    agent(tenant.account, phone="+13035550140")
    return tenant


def post_lead(tenant, **kwargs) -> Lead:
    form = {"xml": adf(**kwargs), **tenant.headers}
    response = tenant.client().post("/api/nl", form)
    assert response.status_code == 200, response.json()
    return Lead.objects.get(pk=response.json()["leadId"])


def test_a_posted_leads_outcome_reaches_the_crm_once_after_the_mail_server_comes_back(
    dealer, tmp_path
):
    server = SmtpServer()  # not started: the first tries find the mail server down
    app.control.purge()
    worker = start_worker(
        tmp_path,
        env=service_env(EMAIL_URL=server.url, EMAIL_TIMEOUT="2", LOG_LEVEL="INFO"),
    )
    try:
        answered = post_lead(dealer, prospect_id="E2E-ANSWER")
        missed = post_lead(dealer, prospect_id="E2E-MISSED", phone="303-555-0000")
        wait_for(
            lambda: (
                Message.objects.filter(
                    attempts__gte=1, error__contains="Refused"
                ).count()
                == 2
            ),
            timeout=60,
            what="both write-backs tried while the mail server is down",
            process=worker,
        )
        server.start()
        wait_for(
            lambda: Message.objects.filter(status=MessageStatus.SENT).count() == 2,
            timeout=60,
            what="both write-backs sent",
            process=worker,
        )
    finally:
        worker.stop()
        server.stop()

    statuses = dict(
        Call.objects.filter(pk__in=[answered.call_id, missed.call_id]).values_list(
            "altid", "status"
        )
    )
    assert statuses == {
        "E2E-ANSWER": CallStatus.ANSWER,
        "E2E-MISSED": CallStatus.NOANSWER,
    }
    received = server.mailbox.to(CRM)
    assert len(received) == 2
    documents = {
        lead.prospect_id: lead
        for mail in received
        for lead in parse_adf(parts(mail)["text/xml"])
    }
    assert documents["E2E-ANSWER"].customer.comments.startswith("Status: ANSWER\n")
    assert documents["E2E-MISSED"].customer.comments.startswith("Status: NOANSWER\n")
    for message in Message.objects.all():
        assert message.attempts >= 2
        assert message.sent_at is not None
