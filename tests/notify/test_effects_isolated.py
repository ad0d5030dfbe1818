"""A call's state moves on whatever its side effects do (issue 35): the write-back, the
alerts and the lead's text are recorded in the call's final transaction and built by their
own tasks (core.outbox). One that raises fails alone, with its reason, never the call."""

from __future__ import annotations

from email.header import decode_header, make_header

import pytest
from django.utils import timezone
from lxml import etree

from calls.models import CallStatus, DialingSettings
from core.models import Effect, EffectStatus
from leads.adf import parse_adf
from notify.models import Message, MessageKind, NotifySettings
from notify.services import message_send
from tests.accounts.factories import AccountFactory
from tests.calls.harness import World
from tests.handover import hold_hand_overs
from tests.scoring.factories import in_role
from tests.users.factories import agent
from texting.models import Purpose, Text, TextingSettings

pytestmark = pytest.mark.django_db

CRM = "leads@crm.frontrange.example"
NO_ANSWER = "+13035550000"  # the simulator's lead that never answers
ANSWERS = "+13035550123"
POISON = "Ctl\u0001\u000bchar"
XML_ERROR = "All strings must be XML compatible: Unicode or ASCII, no NULL bytes or control characters"


@pytest.fixture
def world(monkeypatch, django_capture_on_commit_callbacks):
    hold_hand_overs(monkeypatch, "notify.tasks.message_send_task")
    hold_hand_overs(monkeypatch, "texting.tasks.text_send_task")
    return World(monkeypatch, django_capture_on_commit_callbacks)


@pytest.fixture
def account(db):
    account = AccountFactory(name="Front Range Toyota")
    DialingSettings.objects.create(account=account, lead_attempt_limit=1)
    NotifySettings.objects.create(account=account, crm_addresses=CRM)
    TextingSettings.objects.create(account=account, enabled=True, sender="+13035550999")
    in_role(
        "Manager", accounts=[account], email="boss@frontrange.example", phone_number=""
    )
    agent(account, phone="+13035550140", first_name="Ada", last_name=f"Agent{POISON}")
    return account


def finished_call(world, account, phone, first_name="Sam"):
    """A call queued with a name stored before the interfaces refused control
    characters, played by the simulator to its end."""
    call = world.queue_call(
        account=account,
        phone=phone,
        received_at=timezone.now(),
        first_name=first_name,
        last_name="Rivera",
    )
    world.run()
    call.refresh_from_db()
    return call


def raising(*args, **kwargs):
    raise ValueError(XML_ERROR)


# Each builder the effect's task calls, and what it makes when it works.
BUILDERS = {
    "notify.crm_final": "notify.effects.crm_writeback_queue",
    "notify.call_alerts": "notify.effects.alerts_for_call",
    "texting.automatic": "texting.effects.text_automatic",
}


def made(call) -> dict[str, bool]:
    return {
        "notify.crm_final": Message.objects.filter(
            call=call, kind=MessageKind.CRM
        ).exists(),
        "notify.call_alerts": Message.objects.filter(
            call=call, kind=MessageKind.ALERT
        ).exists(),
        "texting.automatic": Text.objects.filter(
            call=call, purpose=Purpose.NOT_REACHED
        ).exists(),
    }


@pytest.mark.parametrize("failing", sorted(BUILDERS))
def test_one_effect_that_raises_fails_alone_and_the_call_still_ends(
    world, account, monkeypatch, failing
):
    monkeypatch.setattr(BUILDERS[failing], raising)

    call = finished_call(world, account, NO_ANSWER, first_name=POISON)

    assert call.status == CallStatus.NOANSWER
    assert call.ended_at is not None
    assert call.next_attempt_at is None
    effects = {e.kind: e for e in Effect.objects.filter(about=f"call {call.pk}")}
    assert {kind: e.status for kind, e in effects.items()} == {
        kind: EffectStatus.FAILED if kind == failing else EffectStatus.DONE
        for kind in BUILDERS
    }
    assert effects[failing].error == f"ValueError: {XML_ERROR}"
    assert effects[failing].tries == 1  # not transient: failed at once
    assert made(call) == {kind: kind != failing for kind in BUILDERS}


def test_an_answered_call_ends_with_its_duration_when_its_write_back_raises(
    world, account, monkeypatch
):
    monkeypatch.setattr("notify.crm.writeback_adf", raising)

    call = finished_call(world, account, ANSWERS, first_name=POISON)

    assert call.status == CallStatus.ANSWER
    assert call.ended_at is not None
    assert call.duration is not None
    assert call.duration > 0
    effect = Effect.objects.get(kind="notify.crm_final")
    assert (effect.status, effect.error) == (
        EffectStatus.FAILED,
        f"ValueError: {XML_ERROR}",
    )
    assert not Message.objects.filter(call=call).exists()


def test_names_with_control_characters_stored_before_are_written_back_cleaned(
    world, account, smtp_server
):
    call = finished_call(
        world, account, ANSWERS, first_name="Eve\r\nBcc: evil@x.example"
    )
    (message,) = Message.objects.filter(call=call, kind=MessageKind.CRM)

    assert message_send(message_id=message.pk) == "sent"

    (mail,) = smtp_server.mailbox.to(CRM)
    assert mail["Bcc"] is None
    assert str(make_header(decode_header(mail["Subject"]))) == (
        "Lead call outcome: Eve Bcc: evil@x.example Rivera - ANSWER"
    )
    document = message.adf.encode()
    etree.fromstring(document)  # well-formed: lxml refuses control characters
    (lead,) = parse_adf(document)
    assert lead.customer.full_name == "Eve Bcc: evil@x.example Rivera"
    assert "Agent: Ada AgentCtlchar" in lead.customer.comments.splitlines()


def test_a_score_whose_alert_raises_is_still_saved(world, account, monkeypatch):
    from scoring.models import Score
    from scoring.services import score_save

    monkeypatch.setattr("notify.effects.alerts_for_score", raising)
    call = finished_call(world, account, ANSWERS)
    scorer = in_role("Scorer", accounts=[account])

    with world.capture(execute=True):
        score_save(call=call, scorer=scorer, values={"alert": "Hot lead"})

    assert Score.objects.get(call=call).alert == "Hot lead"
    effect = Effect.objects.get(kind="notify.score_alerts")
    assert (effect.status, effect.error) == (
        EffectStatus.FAILED,
        f"ValueError: {XML_ERROR}",
    )


def test_a_webhook_event_that_cannot_be_built_fails_alone_and_is_sent_again(
    world, account, monkeypatch, settings
):
    """A webhook event is the change's snapshot, written with it: one that raises is
    rolled back alone (a savepoint) and recorded as a failed effect; "send again" builds
    it anew from the call."""
    from calls import payloads
    from core.outbox import effect_send_again
    from webhooks.models import WebhookEvent
    from webhooks.services import webhook_endpoint_create

    settings.WEBHOOK_ALLOWED_ADDRESSES = ["127.0.0.1"]
    hold_hand_overs(monkeypatch, "webhooks.tasks.webhook_deliver_task")
    webhook_endpoint_create(
        organization=account.organization, url="https://127.0.0.1:9/hook"
    )
    real_call_object = payloads.call_object

    def call_object(call):
        if call.status == CallStatus.ANSWER and call.ended_at:
            raise ValueError(XML_ERROR)
        return real_call_object(call)

    monkeypatch.setattr("calls.payloads.call_object", call_object)

    call = finished_call(world, account, ANSWERS, first_name=POISON)

    assert call.status == CallStatus.ANSWER
    assert call.ended_at is not None
    assert call.duration is not None
    events = WebhookEvent.objects.filter(subject=f"call:{call.pk}")
    assert "call_completed" not in set(events.values_list("type", flat=True))
    assert "agent_presses_one" in set(events.values_list("type", flat=True))
    failed = Effect.objects.get(kind="calls.webhook_event")
    assert (failed.status, failed.error, failed.params) == (
        EffectStatus.FAILED,
        f"ValueError: {XML_ERROR}",
        {"call_id": call.pk, "type": "call_completed"},
    )
    assert Effect.objects.get(kind="notify.crm_final").status == EffectStatus.DONE

    monkeypatch.setattr("calls.payloads.call_object", real_call_object)
    with world.capture(execute=True):
        effect_send_again(effect=failed)
    failed.refresh_from_db()
    assert failed.status == EffectStatus.DONE  # run as it was handed over (conftest)
    (completed,) = events.filter(type="call_completed")
    assert f'"id": {call.pk}' in completed.body
