"""The seed steps of leads and calls, run through ``manage.py seed_demo`` as `make run` does."""

import json
from collections import Counter
from datetime import datetime, time, timedelta
from io import StringIO
from zoneinfo import ZoneInfo

import pytest
from django.core.management import call_command
from django.utils import timezone

from accounts.models import Account
from accounts.selectors import api_credential_for_key
from calls.models import AttemptOutcome, Call, CallAttempt, CallOrigin, CallStatus, Leg
from calls.pipeline.transitions import FINAL
from calls.recordings import attempt_for_token, recording_link
from calls.services import dialing_settings
from core.versioned import VersionedCache
from leads.models import (
    Lead,
    Outcome,
    ParsingRule,
    RuleAction,
    RuleCondition,
    VendorRegistration,
)
from leads.services import lead_receive
from tests.leads.factories import adf

pytestmark = pytest.mark.django_db


def seed_json() -> dict:
    out = StringIO()
    call_command("seed_demo", "--json", stdout=out, stderr=StringIO())
    return json.loads(out.getvalue())


def accounts_of(document) -> list[dict]:
    return [acc for org in document["organizations"] for acc in org["accounts"]]


def rules_of(account_name: str) -> list[tuple]:
    rules = ParsingRule.objects.filter(account__name=account_name).order_by(
        "priority", "id"
    )
    return [
        (
            rule.action,
            rule.team.name if rule.team else None,
            rule.source_label,
            rule.is_active,
            list(
                rule.conditions.order_by("id").values_list("field", "operator", "value")
            ),
        )
        for rule in rules
    ]


def counts() -> dict[str, int]:
    return {
        model.__name__: model.objects.count()
        for model in (VendorRegistration, ParsingRule, RuleCondition, Call, CallAttempt)
    }


def window(account: Account) -> tuple[datetime, datetime]:
    zone = ZoneInfo(account.timezone)
    today = timezone.now().astimezone(zone).date()
    return (
        datetime.combine(today - timedelta(days=30), time(0), tzinfo=zone),
        datetime.combine(today, time(0), tzinfo=zone),
    )


# --- leads: vendor registrations and parsing rules


def test_every_account_has_the_vendor_registration_the_json_shows():
    document = seed_json()

    assert [
        (acc["name"], acc["vendorId"], acc["vendorName"])
        for acc in accounts_of(document)
    ] == [
        ("Demo Motors North", "DMN-1001", "Demo Motors North"),
        ("Demo Motors South", "DMS-1002", "Demo Motors South"),
        ("Lakeside Ford", "LSF-2001", "Lakeside Ford"),
    ]
    for org in document["organizations"]:
        for acc in org["accounts"]:
            registration = VendorRegistration.objects.get(account_id=acc["id"])
            assert (registration.vendor_id, registration.vendor_name) == (
                acc["vendorId"],
                acc["vendorName"],
            )
            assert registration.organization_id == org["id"]
            assert registration.is_active


def test_the_json_shows_the_registration_as_it_is_after_support_edits_it():
    seed_json()
    VendorRegistration.objects.filter(vendor_id="DMN-1001").update(
        vendor_name="North Motors (renamed)"
    )

    document = seed_json()

    north = accounts_of(document)[0]
    assert (north["vendorId"], north["vendorName"]) == (
        "DMN-1001",
        "North Motors (renamed)",
    )
    assert VendorRegistration.objects.count() == 3


def test_rules_are_the_contracts_in_order():
    seed_json()

    assert rules_of("Demo Motors North") == [
        (
            RuleAction.DO_NOT_PROCESS,
            None,
            "",
            True,
            [("provider/name", "equals", "DNP")],
        ),
        (
            RuleAction.PROCESS,
            "Service",
            "",
            True,
            [("prospect/requesttype", "equals", "service")],
        ),
        (RuleAction.PROCESS, "Sales", "", True, []),
    ]
    assert rules_of("Demo Motors South") == [
        (
            RuleAction.PROCESS,
            None,
            "",
            True,
            [("prospect/requesttype", "equals", "sales")],
        ),
    ]
    assert rules_of("Lakeside Ford") == [(RuleAction.PROCESS, "Sales", "", True, [])]


def test_demo_leads_take_the_contracts_routes_through_intake(
    django_capture_on_commit_callbacks,
):
    document = seed_json()
    org = document["organizations"][0]
    credential = api_credential_for_key(key=org["apiKey"], api_user=org["apiUser"])
    assert credential is not None

    def outcome(**fields) -> Lead:
        with django_capture_on_commit_callbacks():
            lead_receive(credential=credential, raw_xml=adf(**fields))
        return Lead.objects.latest("id")

    dnp = outcome(prospect_id="S-1", vendor_id="DMN-1001", provider_name="DNP")
    service = outcome(prospect_id="S-2", vendor_id="DMN-1001", request_type="service")
    sales = outcome(prospect_id="S-3", vendor_id="DMN-1001", request_type="sales")
    south_sales = outcome(prospect_id="S-4", vendor_id="DMS-1002", request_type="sales")
    south_service = outcome(
        prospect_id="S-5", vendor_id="DMS-1002", request_type="service"
    )

    assert dnp.outcome == Outcome.DO_NOT_PROCESS
    assert service.call is not None
    assert service.call.team is not None
    assert sales.call is not None
    assert sales.call.team is not None
    assert (service.outcome, service.call.team.name) == (Outcome.ACCEPTED, "Service")
    assert (sales.outcome, sales.call.team.name) == (Outcome.ACCEPTED, "Sales")
    assert south_sales.outcome == Outcome.ACCEPTED
    assert south_service.outcome == Outcome.NO_RULE


def test_second_run_keeps_every_row_and_restores_edited_demo_rules():
    seed_json()
    before = counts()
    condition_ids = set(RuleCondition.objects.values_list("pk", flat=True))
    RuleCondition.objects.filter(value="DNP").update(value="changed")

    seed_json()

    assert counts() == before
    assert rules_of("Demo Motors North")[0][4] == [("provider/name", "equals", "DNP")]
    untouched = set(
        RuleCondition.objects.exclude(field="provider/name").values_list(
            "pk", flat=True
        )
    )
    assert untouched <= condition_ids


# --- calls: the past 30 days


def test_every_account_has_at_least_25_past_calls_in_the_30_days_before_today():
    document = seed_json()

    for acc in accounts_of(document):
        account = Account.objects.get(pk=acc["id"])
        start, end = window(account)
        calls = Call.objects.filter(account=account)
        assert calls.filter(received_at__gte=start, received_at__lt=end).count() >= 25
        assert not calls.filter(received_at__gte=end).exists()
        days = {
            call.received_at.astimezone(ZoneInfo(account.timezone)).date()
            for call in calls
        }
        assert len(days) >= 20  # spread over the window, not bunched
        # From the window's first day to yesterday: a manager's last week has calls daily.
        assert min(days) == start.astimezone(ZoneInfo(account.timezone)).date()
        assert max(days) == end.astimezone(
            ZoneInfo(account.timezone)
        ).date() - timedelta(days=1)


def test_past_calls_have_realistic_outcomes_and_people():
    seed_json()

    calls = list(Call.objects.select_related("account", "agent"))
    statuses = Counter(call.status for call in calls)
    assert statuses[CallStatus.ANSWER] > len(calls) / 2
    assert (
        statuses[CallStatus.NOANSWER]
        + statuses[CallStatus.BUSY]
        + statuses[CallStatus.NOAGENT]
        > 0
    )
    assert set(statuses) <= FINAL
    for call in calls:
        agents = set(call.account.users.filter(groups__name="Agent"))
        assert call.first_name
        assert call.last_name
        assert "@" in call.email
        assert call.phone.startswith("+1")
        assert not call.phone.endswith(("0000", "0001", "0002", "0003"))
        assert call.next_attempt_at is None
        assert call.ended_at
        assert call.ended_at > call.received_at
        assert call.created_at == call.received_at
        if call.origin == CallOrigin.LEAD:
            assert call.whisper
            assert call.call_notes
            assert call.altid
            assert call.called_on_make
            assert call.source != "Click to Call"
        else:
            assert call.source == "Click to Call"
            assert call.requested_agent in agents
        if call.status == CallStatus.NOAGENT:
            assert call.agent is None
            assert call.attempts == 0
        else:
            assert call.agent in agents
        if call.status == CallStatus.ANSWER:
            assert call.duration is not None
            assert call.response_time is not None
            assert 30 <= call.duration <= 300
            assert 0 < call.response_time < 60


def test_past_calls_have_attempts_consistent_with_their_outcome():
    seed_json()

    for call in Call.objects.prefetch_related("attempts_log"):
        attempts = sorted(call.attempts_log.all(), key=lambda a: (a.created_at, a.pk))
        lead_legs = [a for a in attempts if a.leg == Leg.LEAD]
        assert attempts, call
        assert all(
            a.ended_at and a.dial_requested_at and a.provider_id == f"SIM-{a.pk}"
            for a in attempts
        )
        assert all(
            a.ended_at is not None and call.received_at <= a.created_at <= a.ended_at
            for a in attempts
        )
        assert call.attempts == len(lead_legs)
        if call.status == CallStatus.ANSWER:
            assert [a.outcome for a in lead_legs] == [AttemptOutcome.ANSWERED]
            assert lead_legs[0].duration == call.duration
            token = call.recording_url.removesuffix(".wav").rsplit("/", 1)[1]
            assert call.recording_url.startswith(recording_link(0).rsplit("/", 1)[0])
            assert attempt_for_token(token) == lead_legs[0].pk
            accepted = [a for a in attempts if a.outcome == AttemptOutcome.ACCEPTED]
            assert [a.agent for a in accepted] == [call.agent]
            assert lead_legs[0].answered_at is not None
            assert call.response_time == int(
                (lead_legs[0].answered_at - call.received_at).total_seconds()
            )
        else:
            assert call.recording_url == ""
            assert call.duration is None
            assert call.response_time is None
        if call.status in (CallStatus.NOANSWER, CallStatus.BUSY):
            expected = (
                AttemptOutcome.NOANSWER
                if call.status == CallStatus.NOANSWER
                else AttemptOutcome.BUSY
            )
            assert len(lead_legs) == dialing_settings(call.account).lead_attempt_limit
            assert {a.outcome for a in lead_legs} == {expected}
        if call.status == CallStatus.NOAGENT:
            assert lead_legs == []
            assert {a.outcome for a in attempts} <= {
                AttemptOutcome.NOANSWER,
                AttemptOutcome.REFUSED,
            }


def test_calls_are_seeded_once_and_topped_up_deterministically(
    django_capture_on_commit_callbacks,
):
    seed_json()
    before = counts()
    north = Account.objects.get(name="Demo Motors North")
    newest = list(Call.objects.filter(account=north).order_by("-received_at")[:5])
    described = sorted(
        (c.first_name, c.last_name, c.status, c.duration)
        for c in Call.objects.filter(account=north)
    )

    with django_capture_on_commit_callbacks() as callbacks:
        seed_json()

    assert counts() == before
    # History only: nothing is dispatched (the rows it saves again only make the shared
    # cache's entries stale, core.versioned).
    assert [
        c
        for c in callbacks
        if not isinstance(getattr(c, "__self__", None), VersionedCache)
    ] == []

    Call.objects.filter(pk__in=[c.pk for c in newest]).delete()
    seed_json()

    assert Call.objects.filter(account=north).count() == 25
    Call.objects.filter(account=north).delete()
    seed_json()
    again = sorted(
        (c.first_name, c.last_name, c.status, c.duration)
        for c in Call.objects.filter(account=north)
    )
    assert again == described
