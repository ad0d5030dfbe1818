"""The call page lists who was told of the call and when: the managers' alerts and the
CRM write-backs, to those who may coach the call; never to its agent."""

from __future__ import annotations

from zoneinfo import ZoneInfo

import pytest
from django.urls import reverse

from calls.models import CallStatus
from notify.alerts import alerts_for_call
from notify.crm import crm_writeback_queue
from notify.models import Message, NotifySettings
from notify.services import message_send
from tests.accounts.factories import AccountFactory
from tests.handover import hold_hand_overs
from tests.scoring.factories import CallFactory, in_role
from tests.users.factories import agent

pytestmark = pytest.mark.django_db


@pytest.fixture(autouse=True)
def no_broker(monkeypatch):
    hold_hand_overs(monkeypatch, "notify.tasks.message_send_task")


def test_a_manager_reads_who_was_told_and_when_the_agent_does_not(
    client, smtp_server, django_capture_on_commit_callbacks
):
    account = AccountFactory(name="Front Range Toyota", timezone="America/Denver")
    NotifySettings.objects.create(account=account, crm_addresses="leads@crm.example")
    boss = in_role(
        "Manager",
        accounts=[account],
        email="boss@frontrange.example",
        first_name="Bea",
        last_name="Boss",
    )
    taker = agent(account, phone="+13035550140")
    call = CallFactory(account=account, status=CallStatus.NOANSWER, agent=taker)
    alerts_for_call(call=call)
    crm_writeback_queue(call=call, moment="final")
    alert = Message.objects.get(kind="alert")
    message_send(message_id=alert.pk)
    alert.refresh_from_db()
    assert alert.sent_at is not None

    client.force_login(boss)
    page = " ".join(
        client.get(reverse("pages:call-detail", args=[call.pk]))
        .content.decode()
        .split()
    )
    assert "Who was told" in page
    sent = alert.sent_at.astimezone(ZoneInfo("America/Denver"))
    assert (
        f"Bea Boss told (lead not reached after the last attempt) by e-mail: "
        f"sent {sent:%H:%M}"
    ) in page
    assert "CRM write-back to leads@crm.example: pending" in page

    client.force_login(taker)
    page = client.get(reverse("pages:call-detail", args=[call.pk])).content.decode()
    assert "Who was told" not in page


def test_a_call_nobody_was_told_of_says_so(client):
    account = AccountFactory()
    boss = in_role("Manager", accounts=[account])
    call = CallFactory(account=account)
    client.force_login(boss)
    page = client.get(reverse("pages:call-detail", args=[call.pk])).content.decode()
    assert "Nobody was told of this call" in page
