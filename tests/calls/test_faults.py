"""Faults with real processes: a worker killed mid-setup, the broker down while leads
arrive. Every call still ends in a final status and no leg is ever dialed twice."""

import http.client
import json
import shlex
import signal
import subprocess
import sys
import urllib.parse

import pytest

from calls.models import Call, CallAttempt, CallStatus
from calls.telephony.simulator import dials_of
from config.celery import app
from leads.models import Lead
from tests.leads.factories import ParsingRuleFactory, VendorRegistrationFactory, adf
from tests.processes import (
    ROOT,
    free_port,
    service_env,
    start_gunicorn,
    start_redis,
    start_worker,
    wait_for,
)
from tests.users.factories import agent

pytestmark = [pytest.mark.slow, pytest.mark.django_db(transaction=True)]

# Short enough to see recovery within a test: what a dead worker held comes back after
# 3 s, the sweep runs every second, a leg nobody reports on is given up after 3 s.
RECOVERY = {
    "CELERY_VISIBILITY_TIMEOUT": "3",
    "CALLS_SWEEP_SECONDS": "1",
    "CALLS_LOST_AFTER_SECONDS": "3",
}


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
    request leaves it undialed (the sweep gives it up, never dials it again): 0 is allowed,
    and such a leg must have been ended."""
    attempts = CallAttempt.objects.filter(
        call_id__in=call_ids, dial_requested_at__isnull=False
    )
    dials = {a.pk: dials_of(a.pk) for a in attempts}
    assert dials and max(dials.values()) == 1, dials
    never_dialed = [pk for pk, n in dials.items() if n == 0]
    assert not CallAttempt.objects.filter(pk__in=never_dialed, ended_at__isnull=True)


def test_a_worker_killed_during_setup_loses_no_call_and_dials_nothing_twice(
    dealer, tmp_path
):
    app.control.purge()
    env = service_env(**RECOVERY)
    first = start_worker(tmp_path, env=env, name="doomed")
    try:
        wait_for(
            lambda: "ready" in first.log.read_text(),
            timeout=20,
            what="first worker",
            process=first,
        )
        leads = []
        for n in range(6):
            form = {"xml": adf(prospect_id=f"K-{n}"), **dealer.headers}
            response = dealer.client().post("/api/nl", form)
            assert response.status_code == 200
            leads.append(response.json()["leadId"])
        # Kill the worker as soon as it is busy setting calls up.
        wait_for(
            lambda: CallAttempt.objects.exists(),
            timeout=20,
            what="a setup under way",
            process=first,
            every=0.005,
        )
        first.kill(signal.SIGKILL)
    finally:
        first.kill()
    call_ids = list(Lead.objects.filter(pk__in=leads).values_list("call_id", flat=True))
    assert Call.objects.filter(pk__in=call_ids).exclude(status__in=FINAL).exists(), (
        "the kill came too late to test"
    )

    second = start_worker(tmp_path, env=env, beat=True, name="successor")
    try:
        wait_for(
            lambda: everything_settled(call_ids),
            timeout=90,
            what="every call to settle",
            process=second,
        )
    finally:
        second.stop()

    assert set(
        Call.objects.filter(pk__in=call_ids).values_list("status", flat=True)
    ) <= set(FINAL)
    assert_each_leg_dialed_at_most_once(call_ids)


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
from calls.services import _dispatch

port = int(sys.argv[1])
attempts = []
connect = socket.socket.connect

def counting_connect(sock, address):
    if isinstance(address, tuple) and address[1] == port:
        attempts.append(address)
    return connect(sock, address)

socket.socket.connect = counting_connect
_dispatch(4242)
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


def post(port, form):
    conn = http.client.HTTPConnection("127.0.0.1", port, timeout=30)
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
        CELERY_BROKER_URL=f"redis://127.0.0.1:{broker_port}/0", **RECOVERY
    )
    web = start_gunicorn(tmp_path, env=env, port=free_port())
    worker = start_worker(tmp_path, env=env, beat=True, name="steady")
    web_port = int(
        web.handle.args[web.handle.args.index("--bind") + 1].rsplit(":", 1)[1]
    )
    try:
        status, _ = post(web_port, {"xml": adf(prospect_id="B-0"), **dealer.headers})
        assert status == 200
        before = list(Lead.objects.values_list("call_id", flat=True))
        wait_for(
            lambda: everything_settled(before),
            timeout=60,
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
        wait_for(
            lambda: everything_settled(during),
            timeout=90,
            what="the calls queued while it was down",
            process=worker,
        )
    finally:
        worker.stop()
        web.stop()
        broker.kill()

    assert set(Call.objects.filter(pk__in=during).values_list("status", flat=True)) == {
        CallStatus.ANSWER
    }
    assert_each_leg_dialed_at_most_once(before + during)
