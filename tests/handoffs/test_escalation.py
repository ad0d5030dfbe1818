"""A handoff open past its account's limit is escalated once by the sweep, and the
account's managers are told through notify's alerts (the "handoff waiting" kind), by
e-mail as every alert is; a handoff closed in time, or of another tenant, tells nobody
else."""

from __future__ import annotations

from datetime import timedelta

import pytest
from django.utils import timezone

from handoffs.models import ClosedBy, Handoff, HandoffKind, HandoffSettings
from handoffs.services import handoff_open, handoffs_close, handoffs_sweep
from notify.models import AlertKind, AlertSubscription, Message
from notify.services import message_send
from tests.accounts.factories import AccountFactory
from tests.handover import hold_hand_overs
from tests.notify.conftest import parts
from tests.scoring.factories import CallFactory, in_role
from texting.models import OptOut

pytestmark = pytest.mark.django_db

LEAD = "+13035550147"


@pytest.fixture(autouse=True)
def _messages_held(monkeypatch):
    hold_hand_overs(monkeypatch, "notify.tasks.message_send_task")


@pytest.fixture
def account(db):
    return AccountFactory(name="Demo Motors North", timezone="America/Denver")


@pytest.fixture
def boss(account):
    return in_role("Manager", accounts=[account], email="boss@north.example")


def opened(account, minutes_ago, *, kind=HandoffKind.REPLY, phone=LEAD, **fields):
    at = timezone.now() - timedelta(minutes=minutes_ago)
    handoff = handoff_open(
        account_id=account.pk,
        phone=phone,
        kind=kind,
        opened_by="text 1",
        at=at,
        **fields,
    )
    assert handoff is not None
    return handoff


def sweep(capture):
    with capture(execute=True):
        return handoffs_sweep()


def alerts():
    return list(Message.objects.filter(alert=AlertKind.HANDOFF).order_by("pk"))


def test_a_handoff_past_the_limit_tells_the_managers_once(
    account, boss, django_capture_on_commit_callbacks, smtp_server
):
    call = CallFactory(account=account, phone=LEAD)
    late = opened(account, 16, call=call)
    opened(account, 14, kind=HandoffKind.CALLBACK)  # within the default 15 minutes

    assert sweep(django_capture_on_commit_callbacks) == 1
    assert sweep(django_capture_on_commit_callbacks) == 0  # once, however often

    late.refresh_from_db()
    assert late.escalated_at is not None
    assert late.closed_at is None  # still waiting for a person
    (message,) = alerts()
    assert (message.user, message.call, message.to) == (boss, call, boss.email)
    assert message.subject == "Handoff waiting 16 min: Sam Rivera"
    assert message_send(message_id=message.pk) == "sent"
    (mail,) = smtp_server.mailbox.to("boss@north.example")
    assert mail["Subject"] == "Handoff waiting 16 min: Sam Rivera"
    assert (
        "The lead texted a reply: Sam Rivera (+13035550147), a lead of Demo Motors "
        "North, has waited 16 minutes for a person." in parts(mail)["text/plain"]
    )


def test_the_accounts_own_limit_holds(
    account, boss, django_capture_on_commit_callbacks
):
    HandoffSettings.objects.create(account=account, limit_minutes=5)
    other = AccountFactory(name="Lakeside Honda")
    in_role("Manager", accounts=[other], email="boss@lakeside.example")
    mine = opened(account, 6)
    theirs = opened(other, 6)  # the default 15 minutes: not yet

    assert sweep(django_capture_on_commit_callbacks) == 1

    assert Handoff.objects.filter(escalated_at__isnull=False).get() == mine
    assert [m.to for m in alerts()] == ["boss@north.example"]
    theirs.refresh_from_db()
    assert theirs.escalated_at is None


def test_a_handoff_closed_in_time_is_never_escalated(
    account, boss, django_capture_on_commit_callbacks
):
    opened(account, 30)
    handoffs_close(
        account_id=account.pk,
        phone=LEAD,
        kinds=[HandoffKind.REPLY],
        by=ClosedBy.TEXT,
        user_id=boss.pk,
    )
    assert sweep(django_capture_on_commit_callbacks) == 0
    assert alerts() == []


def test_a_manager_who_turned_the_alert_off_is_not_told(
    account, boss, django_capture_on_commit_callbacks
):
    AlertSubscription.objects.create(
        user=boss, account=account, kind=AlertKind.HANDOFF, by_email=False
    )
    opened(account, 20)
    assert sweep(django_capture_on_commit_callbacks) == 1
    assert alerts() == []


def test_one_handoff_that_fails_never_holds_back_another(
    account, boss, django_capture_on_commit_callbacks, monkeypatch
):
    from handoffs import services

    first = opened(account, 40)
    second = opened(account, 30, phone="+13035550148")
    real = services.handoff_escalate

    def failing(*, handoff_id, now=None):
        if handoff_id == first.pk:
            raise RuntimeError("boom")
        return real(handoff_id=handoff_id, now=now)

    monkeypatch.setattr(services, "handoff_escalate", failing)

    assert sweep(django_capture_on_commit_callbacks) == 1
    second.refresh_from_db()
    assert second.escalated_at is not None


def test_a_possible_opt_out_nobody_can_decide_any_more_closes_instead(
    account, boss, django_capture_on_commit_callbacks
):
    """The lead's START to another account of the number ended the pause: nothing is
    left on the page to decide, so nobody is told."""
    stale = opened(account, 30, kind=HandoffKind.OPT_OUT)

    assert sweep(django_capture_on_commit_callbacks) == 0

    stale.refresh_from_db()
    assert (stale.escalated_at, stale.closed_by) == (None, ClosedBy.LEAD)
    assert alerts() == []


def test_a_possible_opt_out_still_paused_escalates(
    account, boss, django_capture_on_commit_callbacks
):
    OptOut.objects.create(
        account=account,
        phone=LEAD,
        opted_out_at=timezone.now() - timedelta(minutes=30),
        message="take me off your list",
        confirmed=False,
    )
    (paused,) = Handoff.objects.filter(kind=HandoffKind.OPT_OUT)
    Handoff.objects.filter(pk=paused.pk).update(
        wait_from=timezone.now() - timedelta(minutes=30)
    )

    assert sweep(django_capture_on_commit_callbacks) == 1
    (message,) = alerts()
    assert message.subject == "Handoff waiting 30 min: +13035550147"
