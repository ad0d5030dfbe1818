"""Log lines: the kv and json formats exactly, LOG_FORMAT wiring, and a lead's and its
call's life told one event per line, with ids and never a key, a name or the document."""

import json
import logging
import os
import shlex
import subprocess
import sys
from pathlib import Path

import pytest
from celery._state import _task_stack
from rest_framework.test import APIClient

from calls.models import CallStatus
from calls.tasks import call_setup_task
from core.logging import EventFormatter, log_context, log_event, mask_phone
from leads.models import Lead, RuleAction
from leads.services import lead_receive
from tests.calls.harness import World
from tests.leads.factories import VendorRegistrationFactory, adf, catch_all_rule
from tests.users.factories import agent

ROOT = Path(__file__).resolve().parent.parent
# 2025-01-02T03:04:05.678Z
CREATED = 1735787045.678


def record(
    message="call.lead_answered",
    *,
    event=True,
    level=logging.INFO,
    exc_info=None,
    **fields,
):
    made = logging.LogRecord(
        "calls.services", level, __file__, 1, message, (), exc_info
    )
    made.created, made.msecs = CREATED, 678.0
    if event:
        made.event, made.event_fields = message, fields
    return made


KV = EventFormatter(log_format="kv")
JSON = EventFormatter(log_format="json")


# --- the two formats, exactly ------------------------------------------------------------


def test_kv_writes_fixed_names_then_fields_quoting_only_what_needs_it():
    line = KV.format(
        record(
            call_id=12,
            reason="No active account found!",
            status="ANSWER",
            empty="",
            agent_id=None,
            answered=True,
            ratio=0.5,
            quote='say "hi"',
            path="a=b",
        )
    )

    assert line == (
        "time=2025-01-02T03:04:05.678Z level=INFO logger=calls.services "
        'event=call.lead_answered call_id=12 reason="No active account found!" '
        'status=ANSWER empty="" agent_id= answered=true ratio=0.5 '
        'quote="say \\"hi\\"" path="a=b"'
    )


def test_kv_lines_split_back_into_their_fields():
    line = KV.format(
        record(call_id=12, reason="No active account found!", quote='say "hi"')
    )

    pairs = dict(part.split("=", 1) for part in shlex.split(line))

    assert pairs == {
        "time": "2025-01-02T03:04:05.678Z",
        "level": "INFO",
        "logger": "calls.services",
        "event": "call.lead_answered",
        "call_id": "12",
        "reason": "No active account found!",
        "quote": 'say "hi"',
    }


def test_kv_escapes_line_breaks_and_control_characters_so_one_record_is_one_line():
    line = KV.format(record(detail="first\nsecond\x1b[31m"))

    assert "\n" not in line
    assert "\x1b" not in line
    assert line.endswith('detail="first\\nsecond\\u001b[31m"')


def test_json_writes_one_object_with_fixed_names_then_fields():
    line = JSON.format(
        record(call_id=12, reason="No active account found!", agent_id=None, ok=True)
    )

    assert line == (
        '{"time": "2025-01-02T03:04:05.678Z", "level": "INFO", '
        '"logger": "calls.services", "event": "call.lead_answered", "call_id": 12, '
        '"reason": "No active account found!", "agent_id": null, "ok": true}'
    )
    assert json.loads(line)["call_id"] == 12


def test_a_record_that_is_not_an_event_carries_its_message():
    plain = record("broker %s is down", event=False, level=logging.WARNING)
    plain.args = ("redis",)

    assert KV.format(plain) == (
        "time=2025-01-02T03:04:05.678Z level=WARNING logger=calls.services "
        'message="broker redis is down"'
    )
    assert json.loads(JSON.format(plain)) == {
        "time": "2025-01-02T03:04:05.678Z",
        "level": "WARNING",
        "logger": "calls.services",
        "message": "broker redis is down",
    }


def test_an_exception_is_one_field_on_the_same_line():
    try:
        raise RuntimeError("boom")
    except RuntimeError:
        failed = record("call.failed", exc_info=sys.exc_info(), call_id=3)

    line = KV.format(failed)
    parsed = json.loads(JSON.format(failed))

    assert "\n" not in line
    assert shlex.split(line)[-1].startswith("exc=Traceback")
    assert parsed["exc"].endswith("RuntimeError: boom")


def test_event_fields_never_replace_the_fixed_names():
    line = json.loads(JSON.format(record(time="then", logger="me", call_id=3)))

    assert line == {
        "time": "2025-01-02T03:04:05.678Z",
        "level": "INFO",
        "logger": "calls.services",
        "event": "call.lead_answered",
        "call_id": 3,
    }


def test_an_unknown_format_is_refused():
    with pytest.raises(ValueError, match="LOG_FORMAT must be one of kv, json"):
        EventFormatter(log_format="xml")


@pytest.mark.parametrize(
    ("number", "masked"),
    [("+13035550147", "***0147"), ("303-555-0147", "***0147"), ("123", "***")],
)
def test_mask_phone_keeps_the_last_four_digits(number, masked):
    assert mask_phone(number) == masked


def test_log_context_adds_its_fields_inside_the_block_only(caplog):
    log = logging.getLogger("tests.logging")
    with caplog.at_level(logging.INFO, logger="tests.logging"):
        with log_context(key_prefix="lk_ab12"):
            log_event(log, "lead.accepted", lead_id=1)
        log_event(log, "lead.accepted", lead_id=2)

    inside, outside = (KV.format(r) for r in caplog.records)
    assert inside.endswith("event=lead.accepted lead_id=1 key_prefix=lk_ab12")
    assert outside.endswith("event=lead.accepted lead_id=2")


def test_lines_inside_a_task_name_the_task():
    call_setup_task.push_request(id="task-123")
    _task_stack.push(call_setup_task)
    try:
        line = KV.format(record(call_id=5))
    finally:
        _task_stack.pop()
        call_setup_task.pop_request()

    assert line.endswith("call_id=5 task=calls.tasks.call_setup_task task_id=task-123")


# --- LOG_FORMAT from the environment, through the settings' LOGGING ------------------------


def log_from_a_process(log_format: str | None) -> subprocess.CompletedProcess:
    env = {
        **os.environ,
        "DJANGO_SETTINGS_MODULE": "config.settings.test",
        "LOG_LEVEL": "INFO",
    }
    env.pop("LOG_FORMAT", None)
    if log_format is not None:
        env["LOG_FORMAT"] = log_format
    script = (
        "import django, logging; django.setup()\n"
        "from core.logging import log_event\n"
        "log_event(logging.getLogger('calls.services'), 'call.queued', call_id=7, origin='lead')\n"
    )
    return subprocess.run(
        [sys.executable, "-c", script],
        cwd=ROOT,
        env=env,
        capture_output=True,
        text=True,
        timeout=60,
    )


def test_the_service_logs_kv_by_default():
    result = log_from_a_process(None)

    assert result.returncode == 0, result.stderr
    [line] = result.stderr.splitlines()
    assert shlex.split(line)[1:] == [
        "level=INFO",
        "logger=calls.services",
        "event=call.queued",
        "call_id=7",
        "origin=lead",
    ]


def test_log_format_json_makes_every_line_a_json_object():
    result = log_from_a_process("json")

    assert result.returncode == 0, result.stderr
    [line] = result.stderr.splitlines()
    parsed = json.loads(line)
    del parsed["time"]
    assert parsed == {
        "level": "INFO",
        "logger": "calls.services",
        "event": "call.queued",
        "call_id": 7,
        "origin": "lead",
    }


def test_an_unknown_log_format_stops_the_service_at_start_up():
    result = log_from_a_process("xml")

    assert result.returncode != 0
    assert "LOG_FORMAT must be one of kv, json, not 'xml'" in result.stderr


# --- a lead's and its call's life ----------------------------------------------------------

VENDOR_ID = "DLR-7"
LEAD_PHONE = "303-555-0123"
AGENT_PHONE = "+13035550140"


@pytest.fixture
def dealer(tenant):
    VendorRegistrationFactory(account=tenant.account, vendor_id=VENDOR_ID)
    tenant.rule = catch_all_rule(tenant.account)
    return tenant


@pytest.fixture
def events(caplog):
    """Every event line logged, as (event, fields) in order; all lines are checked for
    what must never be logged."""
    caplog.set_level(logging.INFO)

    def collect():
        lines = [(r, KV.format(r), JSON.format(r)) for r in caplog.records]
        return [
            (json.loads(as_json)["event"], json.loads(as_json))
            for r, _, as_json in lines
            if getattr(r, "event", None)
        ], [text for _, kv, as_json in lines for text in (kv, as_json)]

    return collect


def post_lead(tenant, xml):
    return APIClient().post("/api/nl", {"xml": xml, **tenant.headers})


def assert_nothing_personal(lines, tenant):
    secret = tenant.key.rsplit("_", 1)[1]
    for line in lines:
        assert tenant.key not in line
        assert secret not in line
        assert "Maria" not in line
        assert "Lopez" not in line
        assert "maria@example.com" not in line
        assert "5550123" not in line
        assert "5550140" not in line
        assert "<adf>" not in line
        assert "<prospect" not in line


def only(found, name):
    [fields] = [fields for event, fields in found if event == name]
    return fields


def test_a_lead_and_its_call_are_told_one_event_per_line(
    dealer, events, monkeypatch, django_capture_on_commit_callbacks
):
    taker = agent(dealer.account, phone=AGENT_PHONE)
    world = World(monkeypatch, django_capture_on_commit_callbacks)

    with django_capture_on_commit_callbacks(execute=True):
        response = post_lead(dealer, adf(vendor_id=VENDOR_ID, phone=LEAD_PHONE))
    world.run()

    assert response.status_code == 200
    lead = Lead.objects.get()
    call = lead.call
    assert call is not None
    call.refresh_from_db()
    assert call.status == CallStatus.ANSWER
    found, lines = events()
    names = [event for event, _ in found]
    assert names == [
        "lead.accepted",
        "call.queued",
        "call.agent_offered",
        "call.agent_accepted",
        "call.lead_dialed",
        "call.lead_answered",
        "call.leg_ended",  # the lead's leg, answered
        "call.ended",
        "call.leg_ended",  # the agent's leg, hung up with the bridge
    ]
    key_prefix = dealer.key.rsplit("_", 1)[0]
    assert only(found, "lead.accepted") == {
        **only(found, "lead.accepted"),
        "level": "INFO",
        "logger": "leads.services",
        "lead_id": lead.pk,
        "call_id": call.pk,
        "account_id": dealer.account.pk,
        "organization_id": dealer.organization.pk,
        "credential_id": dealer.credential.pk,
        "api_user": dealer.credential.api_user,
        "key_prefix": key_prefix,
        "vendor_id": VENDOR_ID,
        "prospect_id": "P-1",
        "rule_id": dealer.rule.pk,
        "status": 200,
    }
    queued = only(found, "call.queued")
    del queued["time"]
    assert queued == {
        "level": "INFO",
        "logger": "calls.services",
        "event": "call.queued",
        "call_id": call.pk,
        "account_id": dealer.account.pk,
        "origin": "lead",
        "team_id": None,
        "requested_agent_id": None,
        "number": "***0123",
    }
    offered = only(found, "call.agent_offered")
    agent_leg = call.attempts_log.get(leg="agent")
    lead_leg = call.attempts_log.get(leg="lead")
    assert (
        offered["call_id"],
        offered["attempt_id"],
        offered["agent_id"],
        offered["round"],
        offered["number"],
    ) == (call.pk, agent_leg.pk, taker.pk, 1, "***0140")
    accepted = only(found, "call.agent_accepted")
    assert (accepted["attempt_id"], accepted["agent_id"]) == (agent_leg.pk, taker.pk)
    dialed = only(found, "call.lead_dialed")
    assert (dialed["attempt_id"], dialed["lead_attempt"], dialed["number"]) == (
        lead_leg.pk,
        1,
        "***0123",
    )
    answered = only(found, "call.lead_answered")
    assert (answered["attempt_id"], answered["response_time"]) == (
        lead_leg.pk,
        call.response_time,
    )
    ended = only(found, "call.ended")
    assert {
        k: ended[k] for k in ("call_id", "status", "duration", "response_time")
    } == {
        "call_id": call.pk,
        "status": "ANSWER",
        "duration": call.duration,
        "response_time": call.response_time,
    }
    assert ended["agent_id"] == taker.pk
    assert ended["lead_attempts"] == 1
    assert_nothing_personal(lines, dealer)


def test_an_agent_who_does_not_answer_is_logged_before_the_next_one_is_offered(
    dealer, events, monkeypatch, django_capture_on_commit_callbacks
):
    from calls.models import DialingSettings, RingMode

    DialingSettings.objects.create(
        account=dealer.account, ring_mode=RingMode.SEQUENTIAL
    )
    first = agent(dealer.account, phone="+13035550000")  # the simulator: no answer
    second = agent(dealer.account, phone=AGENT_PHONE)
    world = World(monkeypatch, django_capture_on_commit_callbacks)

    with django_capture_on_commit_callbacks(execute=True):
        post_lead(dealer, adf(vendor_id=VENDOR_ID, phone=LEAD_PHONE))
    world.run()

    found, lines = events()
    offers = [
        (event, fields.get("agent_id"), fields.get("outcome"))
        for event, fields in found
        if event in ("call.agent_offered", "call.leg_ended")
    ]
    assert offers[:3] == [
        ("call.agent_offered", first.pk, None),
        ("call.leg_ended", first.pk, "noanswer"),
        ("call.agent_offered", second.pk, None),
    ]
    assert only(found, "call.ended")["status"] == "ANSWER"
    assert_nothing_personal(lines, dealer)


@pytest.mark.parametrize(
    ("xml", "reason", "status"),
    [
        (adf(vendor_id="NOBODY"), "no_vendor", 422),
        (adf(vendor_id=VENDOR_ID, prospect_id=""), "no_prospect_id", 422),
        ("<adf><prospect>", "malformed", 400),
        ("<adf><lead/></adf>", "not_adf", 422),
    ],
    ids=["no-vendor", "no-prospect-id", "malformed", "not-adf"],
)
def test_a_refused_lead_is_logged_with_its_reason(dealer, events, xml, reason, status):
    response = post_lead(dealer, xml)

    assert response.status_code == status
    found, lines = events()
    refused = only(found, "lead.refused")
    assert (refused["level"], refused["reason"], refused["status"]) == (
        "WARNING",
        reason,
        status,
    )
    assert refused["lead_id"] == Lead.objects.get().pk
    assert refused["api_user"] == dealer.credential.api_user
    assert not any(event.startswith("call.") for event, _ in found)
    assert_nothing_personal(lines, dealer)


def test_a_document_over_one_mib_is_refused_as_too_large(dealer, events):
    # Over HTTP the body limit answers 413 before the view; the service refuses it too
    # (a re-run, the sweep), and says so.
    xml = adf(vendor_id=VENDOR_ID, extra_customer="x" * (1024 * 1024))

    answer = lead_receive(credential=dealer.credential, raw_xml=xml)

    assert answer.status == 413
    found, lines = events()
    refused = only(found, "lead.refused")
    assert (refused["reason"], refused["status"], refused["credential_id"]) == (
        "too_large",
        413,
        dealer.credential.pk,
    )
    assert_nothing_personal(lines, dealer)


def test_a_lead_no_rule_takes_is_refused_with_that_reason(dealer, events):
    dealer.rule.delete()

    post_lead(dealer, adf(vendor_id=VENDOR_ID))

    found, _ = events()
    refused = only(found, "lead.refused")
    assert (refused["reason"], refused["account_id"]) == ("no_rule", dealer.account.pk)


def test_a_malformed_lead_logs_the_parser_reason_never_the_document(dealer, events):
    post_lead(dealer, "<adf><prospect><SECRET-CONTENT></prospect></adf>")

    found, lines = events()
    assert only(found, "lead.refused")["detail"] == (
        "The document is not well-formed XML."
    )
    assert not any("SECRET-CONTENT" in line for line in lines)


def test_a_duplicate_and_a_do_not_process_lead_are_logged_as_such(dealer, events):
    first = post_lead(dealer, adf(vendor_id=VENDOR_ID)).json()["leadId"]
    post_lead(dealer, adf(vendor_id=VENDOR_ID))
    dealer.rule.action = RuleAction.DO_NOT_PROCESS
    dealer.rule.save(update_fields=["action"])
    post_lead(dealer, adf(vendor_id=VENDOR_ID, prospect_id="P-2"))

    found, lines = events()
    assert [event for event, _ in found if event.startswith("lead.")] == [
        "lead.accepted",
        "lead.duplicate",
        "lead.do_not_process",
    ]
    assert only(found, "lead.duplicate")["duplicate_of"] == first
    assert only(found, "lead.do_not_process")["rule_id"] == dealer.rule.pk
    assert_nothing_personal(lines, dealer)


def test_a_blank_document_is_logged_as_refused(dealer, events):
    response = post_lead(dealer, " ")

    assert response.status_code == 403
    found, lines = events()
    refused = only(found, "lead.refused")
    assert (refused["reason"], refused["status"], refused["credential_id"]) == (
        "blank_xml",
        403,
        dealer.credential.pk,
    )
    assert_nothing_personal(lines, dealer)
