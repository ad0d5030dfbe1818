"""Every event type, produced by the real workflows (lead intake over HTTP, the call
pipeline on the simulator, scoring, coaching, transcription, texts sent and received),
reaches a local HTTPS
receiver with the body the integrator's guide documents and a signature the guide's own
verification code accepts."""

import datetime as dt
from zoneinfo import ZoneInfo

import pytest

from appointments.models import Actor, Status
from appointments.services import appointment_change, appointment_set_for_call
from calls.models import Call, CallStatus
from calls.services import call_transcription_save
from leads.services import NO_RULE
from scoring.services import coaching_save, score_save
from tests.calls.harness import World
from tests.handover import hold_hand_overs
from tests.leads.factories import VendorRegistrationFactory, adf, catch_all_rule
from tests.scoring.factories import in_role
from tests.users.factories import agent
from tests.webhooks.conftest import guide_examples, guide_verifier, keys
from texting import providers
from texting import services as texting
from texting.inbound import text_receive
from texting.models import OptOut, Text, TextingSettings
from webhooks.models import EventType, WebhookEvent
from webhooks.services import webhook_endpoint_create, webhook_test_send
from webhooks.signing import secret_new

pytestmark = pytest.mark.django_db


@pytest.fixture
def world(monkeypatch, django_capture_on_commit_callbacks):
    return World(monkeypatch, django_capture_on_commit_callbacks)


def test_every_event_type_is_sent_as_documented_and_signed(
    tenant, hooks, broker, world, django_capture_on_commit_callbacks, monkeypatch
):
    capture = django_capture_on_commit_callbacks
    # Texts are sent here, not by a worker, and the simulator plays no callbacks.
    hold_hand_overs(monkeypatch, "texting.tasks.text_send_task")
    monkeypatch.setattr(providers, "_later", lambda *args, **kwargs: None)
    VendorRegistrationFactory(account=tenant.account, vendor_id="V-1000")
    catch_all_rule(tenant.account, department="Sales")
    VendorRegistrationFactory(account=tenant.other_account, vendor_id="V-2000")
    taker = agent(tenant.account, phone="+13035550140")
    endpoint, secret = webhook_endpoint_create(
        organization=tenant.organization, url=hooks.url("/hook")
    )

    with capture(execute=True) as callbacks:
        accepted = tenant.client().post(
            "/api/nl", {"xml": adf(prospect_id="WEB-1", vendor_id="V-1000")}
        )
        refused = tenant.client().post(
            "/api/nl", {"xml": adf(prospect_id="WEB-2", vendor_id="V-2000")}
        )
    assert accepted.status_code == 200
    assert refused.status_code == 422
    assert callbacks  # the deliveries are handed over only once intake committed
    world.run()  # the call: an agent presses 1, the lead answers, the call ends
    call = Call.objects.get()
    assert call.status == CallStatus.ANSWER
    assert call.agent == taker
    scorer = in_role("Scorer", accounts=[tenant.account])
    coach = in_role("Manager", accounts=[tenant.account])
    TextingSettings.objects.create(
        account=tenant.account, enabled=True, sender="+13035550100"
    )
    with capture(execute=True):
        call_transcription_save(
            call=call, transcription="Agent: Hi Sam...", summary="Booked."
        )
        score_save(call=call, scorer=scorer, values={"cat1": True, "wow": True})
        coaching_save(call=call, coach=coach, notes="Confirm by text next time.")
        # An appointment set, confirmed, kept, corrected to a no-show; a second cancelled.
        saturday = dt.datetime(2026, 11, 28, 10, 30, tzinfo=ZoneInfo("America/Denver"))
        booked = appointment_set_for_call(
            call=call, starts_at=saturday, by=Actor.AGENT, by_user=taker
        )
        for status in (Status.CONFIRMED, Status.KEPT, Status.NO_SHOW):
            appointment_change(
                appointment=booked, to=status, by=Actor.MANAGER, by_user=coach
            )
        again = appointment_set_for_call(
            call=call, starts_at=saturday + dt.timedelta(days=2), by=Actor.AGENT
        )
        appointment_change(appointment=again, to=Status.CANCELLED, by=Actor.AGENT)
        reply = texting.text_reply_send(call=call, user=taker, body="See you Saturday.")
        assert texting.text_send(text_id=reply.pk) == "sent"
        answer = text_receive(
            to_number="+13035550100",
            from_number=call.phone,
            body="Great, see you then!",
            provider="simulator",
            provider_id="SIMIN-1",
        )
        stop = text_receive(
            to_number="+13035550100",
            from_number=call.phone,
            body="STOP",
            provider="simulator",
            provider_id="SIMIN-2",
        )
        webhook_test_send(endpoint=endpoint)

    outcomes = broker.deliver(capture)

    # A call's next event is handed over again when the one before it is done (it may
    # have waited for it); a delivery already sent is then left alone.
    assert outcomes.count("succeeded") == 20
    assert set(outcomes) <= {"succeeded", "done"}
    received = hooks.received
    assert [r.event["type"] for r in received] == [
        "consent_given",  # the lead's consent to calls, recorded as intake stores it
        "lead_received",
        "lead_refused",
        "agent_presses_one",
        "call_completed",
        "transcription_ready",
        "call_scored",
        "call_coached",
        "appointment_set",
        "appointment_confirmed",
        "appointment_kept",
        "appointment_no_show",
        "appointment_set",  # the second
        "appointment_cancelled",
        "text_sent",
        "text_received",  # the lead's answer
        "text_received",  # the lead's STOP
        "consent_revoked",  # the STOP in the consent ledger
        "lead_opted_out",
        "test_event",
    ]
    assert {t.value for t in EventType} == {r.event["type"] for r in received}
    documented = guide_examples()
    verify = guide_verifier()
    for delivery in received:
        event = delivery.event
        assert keys(event) == keys(documented[event["type"]]), event["type"]
        assert verify(secret, delivery.headers, delivery.body)
        assert delivery.headers["webhook-id"] == event["id"]
        assert delivery.headers["content-type"] == "application/json"
    first = received[0]
    assert not verify(secret_new(), first.headers, first.body)  # another secret
    assert not verify(secret, first.headers, b"{}")  # another body
    # The bodies are the records' own, as documented.
    by_type = {r.event["type"]: r.event for r in received}
    assert by_type["lead_received"]["lead_id"] == accepted.json()["leadId"]
    assert by_type["lead_received"]["call_id"] == call.pk
    assert by_type["lead_received"]["account"] == {
        "id": tenant.account.pk,
        "name": tenant.account.name,
    }
    refusal = by_type["lead_refused"]
    assert refusal["reason"] == "no_rule"
    assert refusal["message"] == NO_RULE
    assert refusal["account"]["id"] == tenant.other_account.pk
    assert refusal["lead"]["prospect_id"] == "WEB-2"
    assert refusal["call_id"] is None
    assert by_type["agent_presses_one"]["call"]["status"] == "DIALING"
    assert by_type["agent_presses_one"]["agent"]["email"] == taker.email
    completed = by_type["call_completed"]["call"]
    assert completed["status"] == "ANSWER"
    assert completed["duration"] == call.duration
    assert completed["response_time"] == call.response_time
    assert completed["attempts"] == 1
    assert completed["click_to_call"] == 0
    assert completed["outbound"] == call.phone
    assert by_type["call_scored"]["call"]["recording"] == call.recording_url
    scored = by_type["call_scored"]["scored_call"]
    assert scored["wow"] is True
    assert scored["categories"][0]["applied"] is True
    assert all(c["applied"] is False for c in scored["categories"][1:])
    assert by_type["call_coached"]["coaching"]["notes"] == "Confirm by text next time."
    appointments = [r.event for r in received if r.event["type"].startswith("appoint")]
    assert [a["appointment"]["id"] for a in appointments] == [booked.pk] * 4 + [
        again.pk
    ] * 2
    assert [a["appointment"]["status"] for a in appointments] == [
        "set",
        "confirmed",
        "kept",
        "no_show",
        "set",
        "cancelled",
    ]
    set_first = appointments[0]["appointment"]
    assert set_first["date"] == "2026-11-28"
    assert set_first["time"] == "10:30"  # in the account's timezone
    assert set_first["starts_at"] == "2026-11-28T17:30:00Z"
    assert set_first["set_by"] == "agent"
    assert set_first["call_id"] == call.pk
    assert appointments[0]["lead"]["phone"] == call.phone
    assert by_type["transcription_ready"]["transcription"] == {
        "text": "Agent: Hi Sam...",
        "summary": "Booked.",
    }
    assert answer is not None
    assert stop is not None
    sent = by_type["text_sent"]
    assert sent["text"] == {
        "id": reply.pk,
        "direction": "out",
        "purpose": "reply",
        "from": "+13035550100",
        "to": call.phone,
        "body": "See you Saturday.",
        "status": "queued",
        "created": sent["text"]["created"],
    }
    assert sent["call"]["id"] == call.pk
    assert sent["agent"]["email"] == taker.email
    assert sent["lead"]["phone"] == call.phone
    texts_received = [r.event for r in received if r.event["type"] == "text_received"]
    assert [(t["text"]["id"], t["text"]["body"]) for t in texts_received] == [
        (answer.pk, "Great, see you then!"),
        (stop.pk, "STOP"),
    ]
    assert texts_received[0]["text"]["direction"] == "in"
    assert texts_received[0]["text"]["status"] == "received"
    given = by_type["consent_given"]["consent"]
    assert (given["kind"], given["phone"], given["channel"], given["source"]) == (
        "consent",
        call.phone,
        "calls",
        "lead",
    )
    assert given["reference"] == f"lead {accepted.json()['leadId']}"
    revoked = by_type["consent_revoked"]["consent"]
    assert (revoked["kind"], revoked["phone"], revoked["channel"]) == (
        "revocation",
        call.phone,
        "texts",
    )
    assert (revoked["source"], revoked["detail"], revoked["reference"]) == (
        "text",
        "STOP",
        f"text {stop.pk}",
    )
    assert by_type["consent_revoked"]["account"]["id"] == tenant.account.pk
    opted_out = by_type["lead_opted_out"]
    assert opted_out["text"]["id"] == stop.pk
    opt_out = OptOut.objects.get()
    assert opted_out["opt_out"] == {
        "phone": call.phone,
        "at": opted_out["text"]["created"],
        "message": "STOP",
    }
    assert opt_out.phone == call.phone
    # The lead's answer was forwarded to the agent, and the STOP confirmed: stored,
    # and reported once a worker sends them (not here).
    assert set(Text.objects.values_list("purpose", flat=True)) == {
        "reply",
        "inbound",
        "forward",
        "opt_out",
    }
    assert WebhookEvent.objects.count() == 20


def test_the_schema_documents_every_event_type_with_the_guides_example(client):
    schema = client.get("/api/schema/?format=json").json()
    webhooks = schema["webhooks"]
    documented = guide_examples()
    assert set(webhooks) == set(documented) == {t.value for t in EventType}
    for name, example in documented.items():
        body = webhooks[name]["post"]["requestBody"]["content"]["application/json"]
        assert next(iter(body["examples"].values()))["value"] == example
