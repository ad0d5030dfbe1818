"""Faults with real processes and the shipped defaults (visibility timeout, sweep interval,
lost-leg threshold: none shrunk; only the simulator plays its calls fast): Redis killed
while the worker holds tasks, a worker killed mid-burst, PostgreSQL cut away for 10 s,
provider callbacks arriving later than the lost-leg threshold, leads arriving while the
broker is down. Every call still reaches a final status, no leg is ever dialed twice, and
no agent is left held by a dead leg.

Every wait is a condition that returns the moment it holds; its limit only guards against
a hang, at ten times what it takes on a quiet machine (``tests.processes.HANG_GUARD``), so a
loaded machine is slower, never failed. The bounds the design gives are in docs/architecture.md
("Recovery"), and ``make bench`` measures the latencies."""

import http.client
import itertools
import json
import os
import re
import shlex
import signal
import subprocess
import sys
import time
import urllib.parse

import pytest
from django.conf import settings
from django.utils import timezone
from kombu import Connection

from calls.models import Call, CallAttempt, CallStatus, Leg, SimulatedLeg
from calls.routing import agents_available
from config.celery import app
from leads.models import Lead
from tests.calls.harness import dials_of
from tests.leads.factories import ParsingRuleFactory, VendorRegistrationFactory, adf
from tests.processes import (
    ROOT,
    TcpProxy,
    free_port,
    service_env,
    start_gunicorn,
    start_redis,
    start_worker,
    wait_for,
)
from tests.users.factories import agent
from users.models import User

pytestmark = [pytest.mark.slow, pytest.mark.django_db(transaction=True)]

# The simulator plays its calls 20 times faster than real time (talks of 1.5 to 15 s);
# every recovery setting keeps its shipped default.
FAST_CALLS = {"SIMULATOR_TIME_SCALE": "0.05"}
# How long a burst takes to settle after its fault on a quiet machine (docs/architecture.md, "Recovery":
# ``make bench`` part 9, rounded up); the waits' hang guard is ten times it.
SETTLES_IN = 45


@pytest.fixture
def dealer(tenant):
    VendorRegistrationFactory(account=tenant.account, vendor_id="V-1000")
    ParsingRuleFactory(account=tenant.account)
    for n in range(4):
        agent(tenant.account, phone=f"+1303555014{n}")
    return tenant


def everything_settled(call_ids):
    """Every call final and ended, and no leg left open."""
    return (
        Call.objects.filter(
            pk__in=call_ids, status__in=FINAL, ended_at__isnull=False
        ).count()
        == len(call_ids)
        and not CallAttempt.objects.filter(
            call_id__in=call_ids, ended_at__isnull=True
        ).exists()
    )


FINAL = [
    CallStatus.ANSWER,
    CallStatus.NOANSWER,
    CallStatus.BUSY,
    CallStatus.FAILED,
    CallStatus.CANCEL,
    CallStatus.NOAGENT,
]


def assert_each_leg_dialed_at_most_once(call_ids):
    """No leg reached the provider twice. A worker killed between marking a leg and its
    request leaves it undialed (the sweep gives it up, never dials it again): 0 is allowed
    (``everything_settled`` has already seen such a leg ended)."""
    attempts = CallAttempt.objects.filter(
        call_id__in=call_ids, dial_requested_at__isnull=False
    )
    dials = {a.pk: dials_of(a.pk) for a in attempts}
    assert dials
    assert max(dials.values()) == 1, dials


def assert_all_answered_once(call_ids):
    """Every call answered, no leg dialed twice, no agent left held by these calls."""
    assert set(
        Call.objects.filter(pk__in=call_ids).values_list("status", flat=True)
    ) == {CallStatus.ANSWER}
    assert_each_leg_dialed_at_most_once(call_ids)
    assert_no_agent_held(call_ids)


def assert_no_agent_held(call_ids):
    """Every agent of the dealer may be offered the next call, by the pipeline's own rule
    (``agents_available``): no leg, of these calls or any other, holds one busy."""
    account = Call.objects.get(pk=call_ids[0]).account
    agents = User.objects.filter(accounts=account).exclude(phone_number="")
    next_call = Call(account=account, phone="+13035550123")
    free = agents_available(call=next_call, at=timezone.now())
    assert {a.pk for a in free} == set(agents.values_list("pk", flat=True))


def assert_a_lead_is_never_rung_twice_at_once(call_ids):
    """A call's next lead leg was dialed only once the switch's record says the one before
    it had ended: the lead never had two of our calls ringing."""
    for call_id in call_ids:
        legs = list(
            CallAttempt.objects.filter(call_id=call_id, leg=Leg.LEAD).order_by("pk")
        )
        for before, after in itertools.pairwise(legs):
            record = SimulatedLeg.objects.filter(attempt_id=before.pk).first()
            if record is None or not record.dials:
                continue  # never placed: nothing rang
            assert record.ends_at is not None, (call_id, before.pk)
            assert after.dial_requested_at is not None, (call_id, before.pk)
            assert after.dial_requested_at >= record.ends_at, (call_id, before.pk)


def unsettled(call_ids):
    """The calls not settled, each with its legs and the switch's record of each leg."""
    calls = [
        call
        for call in Call.objects.filter(pk__in=call_ids)
        if call.status not in FINAL
        or call.ended_at is None
        or call.attempts_log.filter(ended_at__isnull=True).exists()
    ]
    return [
        (
            {k: v for k, v in call.__dict__.items() if not k.startswith("_")},
            [
                (
                    {k: v for k, v in leg.__dict__.items() if not k.startswith("_")},
                    SimulatedLeg.objects.filter(attempt_id=leg.pk).values().first(),
                )
                for leg in call.attempts_log.all()
            ],
        )
        for call in calls
    ]


def settle_after_fault(call_ids, process, fault, normal=SETTLES_IN):
    """Wait for every call to settle, and write down how long that took after the fault
    ended: ``make bench`` part 9 reports it (``FAULT_RECOVERY_LOG``). ``normal``: the
    seconds it takes on a quiet machine; only a hang (ten times that) fails the wait, since
    a timing asserted here would fail at random on a busy machine."""
    ended = time.monotonic()
    try:
        wait_for(
            lambda: everything_settled(call_ids),
            normal=normal,
            what="every call to settle",
            process=process,
        )
    except AssertionError as error:
        raise AssertionError(f"{unsettled(call_ids)}\n{error}") from None
    seconds = time.monotonic() - ended
    if log := os.environ.get("FAULT_RECOVERY_LOG"):
        with open(log, "a") as out:
            out.write(json.dumps({"fault": fault, "seconds": seconds}) + "\n")


def wait_until_ready(worker):
    wait_for(
        lambda: " ready." in worker.log.read_text(),
        normal=3,
        what=f"the worker ({worker.log.name})",
        process=worker,
    )


def post_leads(dealer, prefix, count, phone="303-555-0123"):
    leads = []
    for n in range(count):
        form = {"xml": adf(prospect_id=f"{prefix}-{n}", phone=phone), **dealer.headers}
        response = dealer.client().post("/api/nl", form)
        assert response.status_code == 200
        leads.append(response.json()["leadId"])
    return list(Lead.objects.filter(pk__in=leads).values_list("call_id", flat=True))


def test_with_no_fault_the_burst_settles_and_dials_each_leg_once(dealer, tmp_path):
    """The control for the faults below: the same burst, nothing broken (``make bench``
    part 9 reports the faults' recovery times next to this one)."""
    app.control.purge()
    worker = start_worker(tmp_path, env=service_env(**FAST_CALLS), beat=True)
    try:
        wait_until_ready(worker)
        call_ids = post_leads(dealer, "C", 12)
        settle_after_fault(call_ids, worker, "no fault (12 leads, 4 agents)")
    finally:
        worker.stop()

    assert_all_answered_once(call_ids)


def test_a_worker_killed_mid_burst_loses_no_call_and_dials_nothing_twice(
    dealer, tmp_path
):
    app.control.purge()
    env = service_env(**FAST_CALLS)
    first = start_worker(tmp_path, env=env, name="doomed")
    try:
        wait_until_ready(first)
        call_ids = post_leads(dealer, "K", 12)
        # Kill the worker in the middle of the burst: some calls set up, some talking.
        wait_for(
            lambda: Call.objects.filter(status=CallStatus.ANSWER).exists(),
            normal=6,
            what="a call under way",
            process=first,
            every=0.01,
        )
        first.kill(signal.SIGKILL)
    finally:
        first.kill()
    assert Call.objects.filter(pk__in=call_ids).exclude(status__in=FINAL).exists(), (
        "the kill came too late to test"
    )

    # What the dead worker held stays unacknowledged in Redis for the visibility timeout
    # (an hour): only the sweep, from the database, can bring these calls home in time.
    second = start_worker(tmp_path, env=env, beat=True, name="successor")
    try:
        settle_after_fault(call_ids, second, "a worker killed mid-burst")
    finally:
        second.stop()

    assert_all_answered_once(call_ids)
    assert_a_lead_is_never_rung_twice_at_once(call_ids)


def dispatch_failures(process):
    """The call ids a process logged as not handed to the broker (kv log lines)."""
    return [
        int(fields["call_id"])
        for fields in (
            dict(part.split("=", 1) for part in shlex.split(line))
            for line in process.log.read_text().splitlines()
            if " event=call.dispatch_failed " in line
        )
    ]


# kombu waits this long before its first reconnection (its interval_start default).
KOMBU_FIRST_RETRY_SECONDS = 2

PUBLISH_TO_A_DEAD_BROKER = """
import json, socket, sys
import django
django.setup()
from config.celery import app
from calls.pipeline.broker import dispatch_setup

port = int(sys.argv[1])
attempts = []
connect = socket.socket.connect

def counting_connect(sock, address):
    if isinstance(address, tuple) and address[1] == port:
        attempts.append(address)
    return connect(sock, address)

socket.socket.connect = counting_connect
dispatch_setup(4242)
print(json.dumps({"attempts": len(attempts), "timeout": app.conf.broker_connection_timeout}))
"""


def test_a_publish_to_a_dead_broker_gives_up_within_its_connection_timeout():
    # What bounds intake while the broker is down: the publish does not retry
    # (retry=False), and connecting gives up after broker_connection_timeout, trying
    # again at most once per kombu retry interval; the call is logged for the sweep.
    dead_port = free_port()
    env = service_env(CELERY_BROKER_URL=f"redis://127.0.0.1:{dead_port}/0")

    result = subprocess.run(
        [sys.executable, "-c", PUBLISH_TO_A_DEAD_BROKER, str(dead_port)],
        cwd=ROOT,
        env=env,
        capture_output=True,
        text=True,
        timeout=120,
    )

    assert result.returncode == 0, result.stderr
    outcome = json.loads(result.stdout)
    most = 1 + int(outcome["timeout"]) // KOMBU_FIRST_RETRY_SECONDS
    assert 1 <= outcome["attempts"] <= most
    assert "event=call.dispatch_failed call_id=4242 " in result.stderr


def post(port, form, timeout=30):
    """POST ``form`` to /api/nl on ``port``; returns the status and the body."""
    conn = http.client.HTTPConnection("127.0.0.1", port, timeout=timeout)
    try:
        body = urllib.parse.urlencode(form)
        conn.request(
            "POST",
            "/api/nl",
            body,
            {"Content-Type": "application/x-www-form-urlencoded"},
        )
        response = conn.getresponse()
        return response.status, response.read()
    finally:
        conn.close()


def test_leads_arriving_while_the_broker_is_down_are_called_once_it_is_back(
    dealer, tmp_path
):
    broker_port = free_port()
    broker = start_redis(tmp_path, broker_port)
    env = service_env(
        CELERY_BROKER_URL=f"redis://127.0.0.1:{broker_port}/0", **FAST_CALLS
    )
    web = start_gunicorn(tmp_path, env=env, port=free_port())
    worker = start_worker(tmp_path, env=env, beat=True, name="steady")
    web_port = int(web.args[web.args.index("--bind") + 1].rsplit(":", 1)[1])
    try:
        status, _ = post(web_port, {"xml": adf(prospect_id="B-0"), **dealer.headers})
        assert status == 200
        before = list(Lead.objects.values_list("call_id", flat=True))
        wait_for(
            lambda: everything_settled(before),
            normal=20,
            what="the first call",
            process=worker,
        )

        broker.kill()
        answers = [
            post(web_port, {"xml": adf(prospect_id=f"B-{n}"), **dealer.headers})
            for n in range(1, 4)
        ]
        assert [status for status, _ in answers] == [200, 200, 200]
        during = list(
            Lead.objects.exclude(call_id__in=before).values_list("call_id", flat=True)
        )
        assert len(during) == 3
        assert set(
            Call.objects.filter(pk__in=during).values_list("status", flat=True)
        ) == {CallStatus.QUEUED}
        # Intake did not hang on the dead broker: each call's publish gave up (once,
        # bounded as test_a_publish_to_a_dead_broker_gives_up_within_its_connection_timeout
        # shows) and left the call to the sweep.
        assert sorted(dispatch_failures(web)) == sorted(during)

        broker = start_redis(tmp_path, broker_port)
        settle_after_fault(during, worker, "leads taken while the broker was down")
    finally:
        worker.stop()
        web.stop()
        broker.kill()

    assert set(Call.objects.filter(pk__in=during).values_list("status", flat=True)) == {
        CallStatus.ANSWER
    }
    assert_each_leg_dialed_at_most_once(before + during)


def web_port_of(web):
    return int(web.args[web.args.index("--bind") + 1].rsplit(":", 1)[1])


def test_the_worker_survives_redis_killed_while_it_holds_tasks_and_every_call_ends(
    dealer, tmp_path
):
    broker_port = free_port()
    broker = start_redis(tmp_path, broker_port)
    env = service_env(
        CELERY_BROKER_URL=f"redis://127.0.0.1:{broker_port}/0", **FAST_CALLS
    )
    web = start_gunicorn(tmp_path, env=env, port=free_port())
    worker = start_worker(tmp_path, env=env, beat=True, name="steady")
    try:
        answers = [
            post(web_port_of(web), {"xml": adf(prospect_id=f"R-{n}"), **dealer.headers})
            for n in range(6)
        ]
        assert [status for status, _ in answers] == [200] * 6
        call_ids = list(Lead.objects.values_list("call_id", flat=True))
        # A call talking: the worker holds its lead's hang-up as a countdown task.
        wait_for(
            lambda: Call.objects.filter(status=CallStatus.ANSWER).exists(),
            normal=6,
            what="a call talking",
            process=worker,
            every=0.01,
        )

        # The call's hang-up may have run by now on a busy machine; a countdown task the
        # worker keeps until its time makes sure it holds one when Redis dies.
        with Connection(f"redis://127.0.0.1:{broker_port}/0") as connection:
            held = app.send_task(
                "leads.tasks.leads_sweep_task", countdown=3600, connection=connection
            )
        wait_for(
            lambda: held.id in worker.log.read_text(),
            normal=3,
            what="the worker to receive the countdown task",
            process=worker,
        )

        broker.kill()
        wait_for(
            lambda: "could not restore" in worker.log.read_text(),
            normal=3,
            what="the worker to give up restoring the tasks it held",
            process=worker,
        )
        # The moment kombu 5.7.0's restore used to take the worker down: it must go on to
        # reconnect (3 s at least, and until it tries the broker again after the restore).
        gave_up = time.monotonic()
        wait_for(
            lambda: (
                time.monotonic() - gave_up >= 3
                and "Cannot connect to"
                in worker.log.read_text().split("could not restore", 1)[1]
            ),
            normal=4,
            what="the worker to try the broker again after giving up the restore",
            process=worker,
        )
        assert worker.handle.poll() is None, worker.log.read_text()[-3000:]

        # Redis comes back empty: the tasks it held are gone, the calls are not.
        broker = start_redis(tmp_path, broker_port)
        settle_after_fault(call_ids, worker, "Redis killed with tasks held")
        assert worker.handle.poll() is None
    finally:
        worker.stop()
        web.stop()
        broker.kill()

    assert_all_answered_once(call_ids)
    assert Call.objects.filter(pk__in=call_ids, duration__isnull=True).count() == 0


def test_postgresql_cut_away_for_ten_seconds_drops_no_provider_event(dealer, tmp_path):
    from django.db import connection

    app.control.purge()
    proxy = TcpProxy(int(connection.settings_dict["PORT"] or 5432))
    proxy.up()
    db = connection.settings_dict
    env = service_env(
        DATABASE_URL=f"postgres://{db['USER'] or 'postgres'}@127.0.0.1:{proxy.port}/{db['NAME']}",
        **FAST_CALLS,
    )
    worker = start_worker(tmp_path, env=env, beat=True, name="cut")
    try:
        wait_until_ready(worker)
        call_ids = post_leads(dealer, "P", 8)
        wait_for(
            lambda: Call.objects.filter(status=CallStatus.ANSWER).exists(),
            normal=6,
            what="a call talking",
            process=worker,
            every=0.01,
        )
        proxy.down()
        cut_at = time.monotonic()
        # Down 10 s, and (however slow the machine) until the worker has met the outage.
        wait_for(
            lambda: (
                time.monotonic() - cut_at >= 10
                and "OperationalError" in worker.log.read_text()
            ),
            normal=11,
            what="the worker to meet the outage",
            process=worker,
        )
        proxy.up()
        settle_after_fault(call_ids, worker, "PostgreSQL unreachable for 10 s")
    finally:
        worker.stop()
        proxy.down()

    log = worker.log.read_text()
    assert "OperationalError" in log, "the outage never reached the worker"
    statuses = Call.objects.filter(pk__in=call_ids).values_list("status", flat=True)
    assert set(statuses) == {CallStatus.ANSWER}
    # Answered calls have their end and duration: no hang-up was dropped.
    assert not Call.objects.filter(pk__in=call_ids, duration__isnull=True).exists()
    assert_each_leg_dialed_at_most_once(call_ids)
    assert_no_agent_held(call_ids)


LATE = 8.0  # s: later than the lost-leg threshold at this time scale (45 s x 0.05)


CALLBACK_TASK = re.compile(
    r"Task calls\.tasks\.simulator_events?_task\[([0-9a-f-]+)\] "
    r"(received|succeeded|raised|retry)"
)


def callbacks_pending(worker):
    """The simulated callbacks the worker was handed and has not run yet (a task it holds
    for its countdown, or one it runs now), read from its log (``LOG_LEVEL=INFO``). A task
    retried is handed again under the same id."""
    pending: dict[str, int] = {}
    for task_id, what in CALLBACK_TASK.findall(worker.log.read_text()):
        pending[task_id] = pending.get(task_id, 0) + (1 if what == "received" else -1)
    return [task_id for task_id, count in pending.items() if count > 0]


def test_callbacks_later_than_the_lost_leg_threshold_never_ring_a_lead_twice(
    dealer, tmp_path
):
    app.control.purge()
    env = service_env(
        SIMULATOR_CALLBACK_DELAY=str(LATE), LOG_LEVEL="INFO", **FAST_CALLS
    )
    threshold = settings.CALLS_LOST_AFTER_SECONDS * float(env["SIMULATOR_TIME_SCALE"])
    assert threshold < LATE
    worker = start_worker(tmp_path, env=env, beat=True, name="late")
    try:
        talking = post_leads(dealer, "L", 3)
        never_answers = post_leads(dealer, "N", 2, phone="303-555-0000")
        call_ids = talking + never_answers
        settle_after_fault(
            call_ids,
            worker,
            "callbacks later than the lost-leg threshold (from the last lead)",
            normal=75,
        )
        # The last late callbacks arrive (each at most LATE after its leg ended), and
        # must change nothing: wait until the worker has run every one it was sent.
        settled_at = time.monotonic()
        wait_for(
            lambda: (
                time.monotonic() - settled_at >= LATE and not callbacks_pending(worker)
            ),
            normal=LATE + 2,
            what="the late callbacks to be delivered",
            process=worker,
        )
    finally:
        worker.stop()

    assert "event=call.leg_settled" in worker.log.read_text(), (
        "no leg was settled from the provider's record: the test did not test it"
    )
    statuses = dict(Call.objects.filter(pk__in=call_ids).values_list("pk", "status"))
    assert {statuses[pk] for pk in talking} == {CallStatus.ANSWER}
    assert {statuses[pk] for pk in never_answers} == {CallStatus.NOANSWER}
    for pk in talking:  # answered on the first dial, never dialed again
        assert CallAttempt.objects.filter(call_id=pk, leg=Leg.LEAD).count() == 1
    for pk in never_answers:  # the attempt limit, each dial after the last one ended
        assert CallAttempt.objects.filter(call_id=pk, leg=Leg.LEAD).count() == 3
    assert_each_leg_dialed_at_most_once(call_ids)
    assert_a_lead_is_never_rung_twice_at_once(call_ids)
    assert_no_agent_held(call_ids)


def setups_received(process):
    return sum(
        "calls.tasks.call_setup_task[" in line and " received" in line
        for line in process.log.read_text().splitlines()
    )


def test_twice_the_capacity_for_a_minute_drains_without_feeding_on_itself(
    tenant, tmp_path
):
    # Two agents; a call lasts about 9 s at this scale (talks of 1.5 to 15 s), so they
    # take about 0.23 calls/s. Leads arrive at twice that for a minute.
    VendorRegistrationFactory(account=tenant.account, vendor_id="V-1000")
    ParsingRuleFactory(account=tenant.account)
    for n in range(2):
        agent(tenant.account, phone=f"+1303555014{n}")
    app.control.purge()
    env = service_env(LOG_LEVEL="INFO", **FAST_CALLS)
    worker = start_worker(tmp_path, env=env, beat=True, name="overloaded")
    call_ids: list[int] = []
    try:
        wait_until_ready(worker)
        started = time.monotonic()
        for n in range(28):  # 0.46 leads/s for 60 s
            time.sleep(max(0.0, started + n / 0.46 - time.monotonic()))
            call_ids += post_leads(tenant, f"O{n}", 1)
        waited = Call.objects.filter(pk__in=call_ids, waiting_since__isnull=False)
        assert (
            waited.exists()
            or Call.objects.filter(pk__in=call_ids, status=CallStatus.QUEUED).exists()
        ), "no lead ever waited: not an overload"
        settle_after_fault(
            call_ids,
            worker,
            "twice the capacity for a minute (from the last lead)",
            normal=75,
        )
    finally:
        worker.stop()

    assert_all_answered_once(call_ids)
    for pk in call_ids:
        assert CallAttempt.objects.filter(call_id=pk, leg=Leg.LEAD).count() == 1
    # No self-feeding: a waiting call is dispatched when an agent frees up, or by the
    # sweep's fallback backing off (5 s at phone time, then as long as it has waited, up
    # to 60 s), not re-queued every few seconds: about 3.5 setups a call here, where the
    # 5 s recheck at this scale (0.25 s) made hundreds a call.
    assert setups_received(worker) <= 6 * len(call_ids), setups_received(worker)
