"""E-mail to leads through the real path: a lead posted to ``/api/nl`` on an account that
e-mails its leads, the e-mail handed over (held here, never run eagerly) and sent by the
service the task calls, to a real SMTP server on loopback."""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from calls.models import Call, DialingSettings
from emails.models import EmailSettings
from leads.models import Lead
from tests.calls.harness import World
from tests.handover import hold_hand_overs
from tests.leads.factories import ParsingRuleFactory, VendorRegistrationFactory, adf
from tests.smtp import SmtpServer, smtp_settings

LEAD_EMAIL = "maria@example.com"  # tests.leads.factories.adf's


@pytest.fixture
def smtp_server(settings) -> Iterator[SmtpServer]:
    server = SmtpServer()
    server.start()
    smtp_settings(settings, server)
    yield server
    server.stop()


@pytest.fixture
def handed_over(monkeypatch) -> list[tuple[int, float | None]]:
    """The e-mails handed to the broker: (id, countdown), in order."""
    ids: list[tuple[int, float | None]] = []
    hold_hand_overs(
        monkeypatch,
        "emails.tasks.lead_email_send_task",
        then=lambda email_id, countdown: ids.append((email_id, countdown)),
    )
    return ids


@pytest.fixture
def world(monkeypatch, django_capture_on_commit_callbacks) -> World:
    return World(monkeypatch, django_capture_on_commit_callbacks)


def dealer(account, vendor_id: str, **settings) -> EmailSettings:
    """An account that receives leads from ``vendor_id`` and e-mails them."""
    VendorRegistrationFactory(account=account, vendor_id=vendor_id)
    ParsingRuleFactory(account=account)
    DialingSettings.objects.create(account=account, lead_attempt_limit=1)
    return EmailSettings.objects.create(
        account=account, **{"enabled": True, **settings}
    )


def post_lead(
    tenant, capture, *, vendor_id: str, email: str = LEAD_EMAIL, **kwargs
) -> Call:
    """Post a lead as an integrator does (what it records on commit runs); its call."""
    xml = adf(vendor_id=vendor_id, **kwargs).replace(LEAD_EMAIL, email)
    with capture(execute=True):
        response = tenant.client().post("/api/nl", {"xml": xml, **tenant.headers})
    assert response.status_code == 200, response.json()
    lead = Lead.objects.get(pk=response.json()["leadId"])
    assert lead.call_id is not None
    return Call.objects.get(pk=lead.call_id)
