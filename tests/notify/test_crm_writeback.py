"""The call's outcome written back to the dealer's CRM: an ADF document by e-mail, stored
in the transaction that finished the call (or saved the score), sent to a real SMTP
server on loopback and read back with our own ADF parser."""

from __future__ import annotations

from datetime import date, time

import pytest
from django.urls import reverse
from rest_framework.test import APIClient

from calls.models import Call, CallStatus, DialingSettings
from leads.adf import parse_adf
from leads.models import Lead
from notify.models import CrmSendOn, Message, MessageKind, MessageStatus, NotifySettings
from notify.services import message_send
from scoring.services import score_save
from tests.calls.harness import World
from tests.handover import hold_hand_overs
from tests.leads.factories import (
    ParsingRuleFactory,
    VendorRegistrationFactory,
    adf,
    catch_all_rule,
)
from tests.notify.conftest import parts
from tests.scoring.factories import in_role
from tests.users.factories import agent

pytestmark = pytest.mark.django_db

CRM = "leads@crm.frontrange.example"
OTHER_CRM = "adf@dealersocket.other.example"


@pytest.fixture
def dispatched(monkeypatch):
    """The messages handed to the broker (tasks never run eagerly): their ids."""
    ids: list[int] = []
    hold_hand_overs(
        monkeypatch,
        "notify.tasks.message_send_task",
        then=lambda message_id, countdown: ids.append(message_id),
    )
    return ids


@pytest.fixture
def world(monkeypatch, django_capture_on_commit_callbacks, dispatched):
    return World(monkeypatch, django_capture_on_commit_callbacks)


def dealer(tenant, account, vendor_id: str, crm: str, send_on=CrmSendOn.FINAL):
    account.timezone = "America/Denver"
    account.save(update_fields=["timezone"])
    VendorRegistrationFactory(account=account, vendor_id=vendor_id)
    catch_all_rule(account)
    DialingSettings.objects.create(account=account, lead_attempt_limit=1)
    NotifySettings.objects.create(
        account=account, crm_addresses=crm, crm_send_on=send_on
    )
    return account


def post_lead(world, tenant, **kwargs) -> Call:
    """A lead posted as an integrator posts it, then the pipeline run to the call's end."""
    form = {"xml": adf(**kwargs), **tenant.headers}
    with world.capture(execute=True):
        response = APIClient().post("/api/nl", form)
    assert response.status_code == 200, response.json()
    world.run()
    lead = Lead.objects.get(pk=response.json()["leadId"])
    assert lead.call_id is not None
    return Call.objects.get(pk=lead.call_id)


def received_adf(smtp_server, address: str):
    (message,) = smtp_server.mailbox.to(address)
    found = parts(message)
    return message, found, parse_adf(found["text/xml"])


def test_an_answered_call_is_written_back_as_adf_the_parser_reads_member_by_member(
    world, tenant, smtp_server, dispatched
):
    account = dealer(tenant, tenant.account, "V-1000", f"{CRM}\n{OTHER_CRM}")
    taker = agent(account, phone="+13035550140", first_name="Ada", last_name="Agent")
    call = post_lead(world, tenant, prospect_id="CRM-77", source="eLeads")
    assert call.status == CallStatus.ANSWER

    messages = list(Message.objects.filter(call=call).order_by("to"))
    assert [m.to for m in messages] == [OTHER_CRM, CRM]
    assert sorted(dispatched) == sorted(m.pk for m in messages)
    for message in messages:
        assert message_send(message_id=message.pk) == "sent"

    mail, found, (lead,) = received_adf(smtp_server, CRM)
    assert len(smtp_server.mailbox.to(OTHER_CRM)) == 1
    assert mail["Subject"] == "Lead call outcome: Maria Lopez - ANSWER"
    original = parse_adf(adf(prospect_id="CRM-77", source="eLeads"))[0]
    assert lead.prospect_id == "CRM-77"
    assert lead.prospect_source == "eLeads"
    # ADF 1.0 has no requesttype: it is a line of the comments (test_writeback_adf.py).
    assert lead.request_type == ""
    assert "Request type: sales" in lead.customer.comments.splitlines()
    assert lead.customer.full_name == "Maria Lopez"
    assert lead.customer.email == "maria@example.com"
    assert lead.customer.phone == call.phone == "+13035550123"
    assert [(v.interest, v.status, v.year, v.make, v.model) for v in lead.vehicles] == [
        (v.interest, v.status, v.year, v.make, v.model) for v in original.vehicles
    ]
    assert lead.vendor.id == "V-1000"
    assert lead.provider.url == "https://leads.example.test" + reverse(
        "pages:call-detail", args=[call.pk]
    )
    call.refresh_from_db()
    comments = lead.customer.comments.splitlines()
    assert comments[:3] == ["Status: ANSWER", "Attempts: 1", "Agent: Ada Agent"]
    assert f"Response time: {call.response_time} s" in comments
    assert f"Duration: {call.duration} s" in comments
    # Written back at the call's end, before the recording is stored.
    assert "Recording: being stored; it plays on the call page" in comments
    assert any(line.startswith("Ended: ") for line in comments)
    text = found["text/plain"]
    assert "Prospect id: CRM-77 (eLeads)" in text
    assert "Vehicle: buy 2025 Toyota Camry" in text
    assert "Status: ANSWER" in text
    assert taker.get_full_name() in text
    assert Message.objects.get(pk=messages[1].pk).status == MessageStatus.SENT


def test_a_lead_not_reached_is_written_back_with_its_status(world, tenant, smtp_server):
    dealer(tenant, tenant.account, "V-1000", CRM)
    agent(tenant.account, phone="+13035550140")
    call = post_lead(world, tenant, phone="303-555-0000")  # the simulator: no answer
    assert call.status == CallStatus.NOANSWER

    (message,) = Message.objects.filter(call=call)
    assert message_send(message_id=message.pk) == "sent"
    _, _, (lead,) = received_adf(smtp_server, CRM)
    comments = lead.customer.comments.splitlines()
    assert comments[:2] == ["Status: NOANSWER", "Attempts: 1"]
    assert not any(line.startswith("Duration") for line in comments)


def test_a_scored_call_is_written_back_with_the_scorers_notes_never_the_coaching(
    world, tenant, smtp_server
):
    account = dealer(tenant, tenant.account, "V-1000", CRM, send_on=CrmSendOn.BOTH)
    agent(account, phone="+13035550140")
    call = post_lead(world, tenant)
    scorer = in_role("Scorer", accounts=[account])
    final = Message.objects.get(call=call)

    with world.capture(execute=True):
        score_save(
            call=call,
            scorer=scorer,
            values={
                "call_end": "Appointment set",
                "appointment_date": date(2026, 12, 5),
                "appointment_time": time(10, 30),
                "notes": "Wants the blue one.",
            },
        )
    scored = Message.objects.exclude(pk=final.pk).get(call=call)
    assert scored.key == f"crm:scored:{call.pk}:{CRM}"
    assert message_send(message_id=scored.pk) == "sent"

    _, _, (lead,) = received_adf(smtp_server, CRM)
    comments = lead.customer.comments.splitlines()
    assert "Call end: Appointment set" in comments
    assert "Appointment: 2026-12-05 10:30" in comments
    assert "Scorer's notes: Wants the blue one." in comments
    call.refresh_from_db()
    assert f"Recording: {call.recording_url}" in comments
    assert not any("coach" in line.lower() for line in comments)

    # Scored again: the CRM heard of the score once.
    with world.capture(execute=True):
        score_save(call=call, scorer=scorer, values={"notes": "Blue, Saturday."})
    assert Message.objects.filter(call=call).count() == 2


def test_when_to_send_is_the_accounts_choice(world, tenant):
    account = dealer(tenant, tenant.account, "V-1000", CRM, send_on=CrmSendOn.SCORED)
    agent(account, phone="+13035550140")
    call = post_lead(world, tenant)
    assert not Message.objects.filter(call=call).exists()

    with world.capture(execute=True):
        score_save(
            call=call,
            scorer=in_role("Scorer", accounts=[account]),
            values={"call_end": "Not interested"},
        )
    (message,) = Message.objects.filter(call=call)
    assert message.kind == MessageKind.CRM
    assert message.key.startswith("crm:scored:")


def test_an_account_without_crm_addresses_sends_nothing(world, tenant):
    dealer(tenant, tenant.account, "V-1000", "")
    agent(tenant.account, phone="+13035550140")
    post_lead(world, tenant)
    assert not Message.objects.exists()


def test_a_lead_that_never_became_a_call_sends_nothing(world, tenant):
    account = dealer(tenant, tenant.account, "V-1000", CRM)
    ParsingRuleFactory(
        account=account, name="Do not call service", priority=1, action="do_not_process"
    ).conditions.create(
        field="prospect/requesttype", operator="equals", value="service"
    )
    form = {"xml": adf(request_type="service"), **tenant.headers}
    with world.capture(execute=True):
        response = APIClient().post("/api/nl", form)
    assert response.status_code == 200, response.json()
    world.run()
    (lead,) = Lead.objects.all()
    assert lead.outcome == "do_not_process", response.json()
    assert lead.call_id is None
    assert not Message.objects.exists()


def test_an_accounts_crm_never_receives_another_accounts_call(
    world, tenant, other_tenant, smtp_server
):
    dealer(tenant, tenant.account, "V-1000", CRM)
    dealer(other_tenant, other_tenant.account, "V-2000", OTHER_CRM)
    agent(tenant.account, phone="+13035550140")
    agent(other_tenant.account, phone="+13035550141")
    ours = post_lead(world, tenant, prospect_id="OURS", vendor_id="V-1000")
    theirs = post_lead(world, other_tenant, prospect_id="THEIRS", vendor_id="V-2000")

    for message in Message.objects.all():
        message_send(message_id=message.pk)

    assert [m.to for m in Message.objects.filter(call=ours)] == [CRM]
    assert [m.to for m in Message.objects.filter(call=theirs)] == [OTHER_CRM]
    (_, _, (mine,)) = received_adf(smtp_server, CRM)
    assert mine.prospect_id == "OURS"
    (_, _, (other,)) = received_adf(smtp_server, OTHER_CRM)
    assert other.prospect_id == "THEIRS"
