"""Fair queues per dealer and the carrier's pace, with real workers on Redis: leads posted
to /api/nl by two organizations while no worker runs, then the calls set up by the
workers. What is asserted is the order in which setups ran and dials went, and every
call's end; never how long anything took."""

from datetime import datetime, timedelta

import pytest
from django.utils import timezone

from calls.models import Call, CallStatus, Leg
from config.celery import app
from leads.models import Lead
from tests.calls.test_end_to_end import wait_until_final
from tests.leads.factories import ParsingRuleFactory, VendorRegistrationFactory, adf
from tests.processes import Process, service_env, start_worker
from tests.users.factories import agent

pytestmark = [pytest.mark.slow, pytest.mark.django_db(transaction=True)]

FIXED_REQUEST_DATE = "<requestdate>2026-11-20T10:15:00</requestdate>"


def post(
    tenant, vendor_id: str, n: int, made_ago: timedelta = timedelta()
) -> list[Lead]:
    """``n`` leads to ``vendor_id``'s account, each a prospect of its own, asked for
    ``made_ago`` (their ADF requestdate)."""
    made = (timezone.now() - made_ago).isoformat(timespec="seconds")
    leads = []
    for _ in range(n):
        number = next(_numbers)
        document = adf(
            prospect_id=f"{vendor_id}-{number}",
            vendor_id=vendor_id,
            phone=f"303-555-{number:04d}",
        ).replace(FIXED_REQUEST_DATE, f"<requestdate>{made}</requestdate>")
        response = tenant.client().post(
            "/api/nl",
            {
                "xml": document,
                "apiuser": tenant.credential.api_user,
                "apikey": tenant.key,
            },
        )
        assert response.status_code == 200, response.json()
        leads.append(Lead.objects.get(pk=response.json()["leadId"]))
    return leads


_numbers = iter(range(1000, 9000))  # never 0000-0003: every lead answers


def dealer(account, vendor_id: str) -> None:
    VendorRegistrationFactory(account=account, vendor_id=vendor_id)
    ParsingRuleFactory(account=account)


def calls_of(leads: list[Lead]) -> list[Call]:
    return list(Call.objects.filter(lead__in=leads).order_by("pk"))


def ends(calls: list[Call]) -> list[datetime]:
    """The calls' ends, in order (each call is final: it has one)."""
    return sorted(c.ended_at for c in calls if c.ended_at is not None)


def first_agent_leg_at(call: Call):
    return call.attempts_log.filter(leg=Leg.AGENT).order_by("created_at")[0].created_at


@pytest.fixture
def workers(tmp_path):
    started: list[Process] = []

    def start(count: int = 1, **env: str):
        started.extend(
            start_worker(tmp_path, env=service_env(**env), name=f"calls{index}")
            for index in range(count)
        )

    app.control.purge()
    yield start
    for process in started:
        process.stop()


def test_a_quiet_dealers_leads_are_not_held_behind_a_busy_dealers_burst(
    tenant, other_tenant, workers
):
    busy, resent = tenant.account, tenant.other_account
    quiet = other_tenant.account
    dealer(busy, "V-BUSY")
    dealer(resent, "V-OLD")
    dealer(quiet, "V-QUIET")
    # The busy and the re-sending dealers have no agents: each call ends NOAGENT at its
    # setup, so its end says when it was set up. The quiet dealer's agent answers.
    agent(quiet, phone="+13035550140")

    # All posted while no worker runs, in this order: a CRM's re-send of old leads, a
    # burst of fresh ones, then the quiet dealer's two.
    old = post(tenant, "V-OLD", 5, made_ago=timedelta(days=2))
    burst = post(tenant, "V-BUSY", 60)
    quiet_leads = post(other_tenant, "V-QUIET", 2)
    workers()

    wait_until_final(*calls_of(old + burst + quiet_leads), timeout=180)
    burst_calls, old_calls = calls_of(burst), calls_of(old)
    quiet_calls = calls_of(quiet_leads)
    # Every call is final, with its end, each in its own account.
    assert {(c.account_id, c.status) for c in burst_calls} == {
        (busy.pk, CallStatus.NOAGENT)
    }
    assert {(c.account_id, c.status) for c in old_calls} == {
        (resent.pk, CallStatus.NOAGENT)
    }
    assert {(c.account_id, c.status) for c in quiet_calls} == {
        (quiet.pk, CallStatus.ANSWER)
    }
    assert all(c.ended_at and c.duration for c in quiet_calls)
    assert all(
        leg.call.account_id == quiet.pk
        for leg in quiet_calls[0].attempts_log.select_related("call")
    )
    # The quiet dealer's leads, posted last, were set up before nearly all of the burst
    # (first come first served would have set them up after all of it).
    burst_ends = ends(burst_calls)
    for call in quiet_calls:
        set_up = first_agent_leg_at(call)
        assert sum(end > set_up for end in burst_ends) >= 50, (call.pk, set_up)
    # The old leads, posted first, were set up after every fresh lead of the burst.
    assert ends(old_calls)[0] > burst_ends[-1]


def test_the_carriers_pace_holds_across_two_workers_and_serves_the_quiet_dealer(
    tenant, other_tenant, workers
):
    busy, quiet = tenant.account, other_tenant.account
    dealer(busy, "V-BUSY")
    dealer(quiet, "V-QUIET")
    for index in range(4):
        agent(busy, phone=f"+1303555015{index}")
    agent(quiet, phone="+13035550160")
    agent(quiet, phone="+13035550161")

    burst = post(tenant, "V-BUSY", 24)
    quiet_leads = post(other_tenant, "V-QUIET", 4)
    workers(2, TELEPHONY_CALLS_PER_SECOND="5")

    wait_until_final(*calls_of(burst + quiet_leads), timeout=180)
    calls = calls_of(burst + quiet_leads)
    assert {c.status for c in calls} == {CallStatus.ANSWER}
    assert all(c.ended_at and c.duration for c in calls)
    dials = sorted(
        (leg.dial_requested_at, leg.call.account_id)
        for call in calls
        for leg in call.attempts_log.filter(leg=Leg.AGENT).select_related("call")
    )
    assert len(dials) >= len(calls)
    # Never more than 5 dials in any one second, though two workers dialed.
    times = [at for at, _ in dials if at is not None]
    assert len(times) == len(dials)
    for index, start in enumerate(times):
        in_window = [t for t in times[index:] if t - start < timedelta(seconds=1)]
        assert len(in_window) <= 5, (start, in_window)
    # The quiet dealer, whose leads came last, was dialed among the first.
    first_quiet = [account for _, account in dials].index(quiet.pk)
    assert first_quiet < 5, dials
