"""The service on several machines, and machines lost while leads arrive (issue 40, item 5).

Hosts are network namespaces on one bridge (tests/multihost/hosts.py), each running the
Procfile's commands as written:

- ``lb``: haproxy in front of ``web1`` and ``web2`` (gunicorn, the Procfile's ``web``);
- ``calls1`` and ``calls2``: the ``calls`` worker; ``worker``: ``worker`` (with the
  scheduler, the only one) and ``webhooks``; ``tx1`` and ``tx2``: ``transcription``;
- ``redis1`` (primary), ``redis2`` (replica), ``sentinel1-3``: the broker and the cache,
  reached only through the sentinels' URLs;
- ``hooks``: an integrator's HTTPS webhook endpoint; ``stt``: a speech-to-text server in
  OpenAI's shapes (``TRANSCRIPTION_BACKEND=remote``), so transcription costs nothing here;
  ``mail``: the dealer's CRM mail server (the write-backs);
- PostgreSQL: this machine's own server (the test database), reached by the hosts through
  a relay on the bridge's address.

- ``s3``: the media store, moto's S3 server (``MEDIA_STORAGE=s3``): recordings are stored
  by the ``transcription`` hosts and read back by whichever of them transcribes, as in
  production; nothing is written under ``MEDIA_ROOT``.

While leads arrive at the balancer: ``web1`` is killed, ``calls1`` is killed, ``tx1`` is
cut off the network for a minute, and the Redis primary is killed (the sentinels promote
the replica). A post that fails (in flight on the killed web host) is sent again, as a
CRM does. Then every lead's call is final with its end and duration, no lead is dialed
twice, no agent is left held, every recording is transcribed once, every webhook event
reaches the integrator once and every call's write-back reaches the CRM once. Each fault's time from its end to every call
final (and, for the cut, to every transcript) goes to ``FAULT_RECOVERY_LOG``.

Run by ``make multihost`` (root, iproute2, haproxy, redis-server); ``make test`` leaves it
out (the ``multihost`` marker, deselected in pyproject.toml).
"""

from __future__ import annotations

import collections
import email
import email.policy
import functools
import http.client
import json
import os
import re
import threading
import time
import urllib.parse
from concurrent.futures import ThreadPoolExecutor
from email.message import EmailMessage
from typing import Any

import pytest
from django.db import connection

from calls.models import Call, CallAttempt, CallStatus, Leg, Recording, RecordingStatus
from insights.models import Transcription, TranscriptionStatus
from leads.models import Lead
from notify.models import NotifySettings
from tests.calls.test_faults import (
    FAST_CALLS,
    assert_each_leg_dialed_at_most_once,
    assert_no_agent_held,
    everything_settled,
    unsettled,
)
from tests.calls.test_procfile_faults import assert_every_call_fully_ended
from tests.leads.factories import ParsingRuleFactory, VendorRegistrationFactory, adf
from tests.multihost.hosts import (
    MASTER,
    Network,
    RedisGroup,
    can_build_hosts,
    haproxy,
    service_path,
)
from tests.notify.conftest import parts
from tests.processes import (
    BIN,
    Process,
    procfile_commands,
    service_env,
    wait_for,
)
from tests.users.factories import agent
from webhooks.endpoints import webhook_endpoint_create
from webhooks.models import WebhookDelivery, WebhookEvent

pytestmark = [
    pytest.mark.multihost,
    pytest.mark.slow,
    pytest.mark.django_db(transaction=True),
]

LEADS = int(os.environ.get("MULTIHOST_LEADS", "40"))
RATE = float(os.environ.get("MULTIHOST_RATE", "1"))  # leads a second
CUT_SECONDS = float(os.environ.get("MULTIHOST_CUT_SECONDS", "60"))
BALANCER_PORT = 8080
PORTS = {"receiver": 8443, "stt": 9000, "mail": 2525}
CRM = "leads@crm.multihost.example"
PUBLIC_NAME = "leads.example.test"


@pytest.fixture
def network(tmp_path):
    """The bridge and its hosts, taken down (processes, namespaces, bridge) however the
    test ends."""
    if reason := can_build_hosts():
        pytest.skip(reason)
    built = Network(tmp_path)
    try:
        yield built
    finally:
        built.remove()


S3_PORT = 5000
S3_KEYS = {"aws_access_key_id": "testing", "aws_secret_access_key": "testing"}


class MediaStore:
    """moto's S3 server on a host of its own, with the service's bucket."""

    BUCKET = "leadcall-media"

    def __init__(self, network: Network) -> None:
        import boto3

        host = network.host("s3")
        self.url = f"http://{host.address}:{S3_PORT}"
        command = f"{BIN / 'python'} -m moto.server -H {host.address} -p {S3_PORT}"
        process = host.start("s3", command, dict(os.environ))
        wait_for(
            functools.partial(listening, host.address, S3_PORT),
            normal=3,
            what="the S3 server",
            process=process,
        )
        self.client = boto3.client(
            "s3", endpoint_url=self.url, region_name="us-east-1", **S3_KEYS
        )
        self.client.create_bucket(Bucket=self.BUCKET)

    def environment(self) -> dict[str, str]:
        return {
            "MEDIA_STORAGE": "s3",
            "MEDIA_S3_BUCKET": self.BUCKET,
            "MEDIA_S3_ENDPOINT_URL": self.url,
            "MEDIA_S3_REGION": "us-east-1",
            "MEDIA_S3_ACCESS_KEY_ID": S3_KEYS["aws_access_key_id"],
            "MEDIA_S3_SECRET_ACCESS_KEY": S3_KEYS["aws_secret_access_key"],
        }

    def keys(self) -> set[str]:
        listed = self.client.list_objects_v2(Bucket=self.BUCKET)
        return {item["Key"] for item in listed.get("Contents", [])}


def listening(address: str, port: int) -> bool:
    try:
        http.client.HTTPConnection(address, port, timeout=0.5).connect()
    except OSError:
        return False
    return True


def ready(process: Process) -> bool:
    return " ready." in process.log.read_text()


class Service:
    """Every host of the service, started; ``balancer``: where leads are posted."""

    def __init__(self, network: Network, tmp_path) -> None:
        db = connection.settings_dict
        database = network.relay(int(db["PORT"] or 5432))
        self.redis = RedisGroup(network)
        self.media = MediaStore(network)
        hooks, stt, mail = (network.host(n) for n in ("hooks", "stt", "mail"))
        plain = dict(os.environ)
        for kind, host in (("receiver", hooks), ("stt", stt), ("mail", mail)):
            command = f"{BIN / 'python'} -m tests.multihost.servers {kind} {host.address} {PORTS[kind]} {tmp_path}"
            host.start(kind, command, plain)
        self.received = tmp_path / "received.jsonl"
        self.mail = tmp_path / "mail.jsonl"
        self.hook_url = f"https://{hooks.address}:8443/hook"
        self.hooks_address = hooks.address
        for host, port in ((hooks, 8443), (stt, 9000), (mail, 2525)):
            wait_for(
                functools.partial(listening, host.address, port),
                normal=2,
                what=f"the {host.name} server",
                process=next(iter(host.processes.values())),
            )
        env = service_env(
            DATABASE_URL=f"postgres://{db['USER'] or 'postgres'}@{database}/{db['NAME']}",
            CELERY_BROKER_URL=self.redis.url(0),
            REDIS_URL=self.redis.url(1),
            REDIS_SENTINEL_MASTER=MASTER,
            WEBHOOK_ALLOWED_ADDRESSES=hooks.address,
            WEBHOOK_CA_BUNDLE=str(tmp_path / "receiver-cert.pem"),
            SIMULATOR_SPEECH="1",
            TRANSCRIPTION_BACKEND="remote",
            TRANSCRIPTION_REMOTE_URL=f"http://{stt.address}:9000",
            EMAIL_URL=f"smtp://{mail.address}:2525",
            GUNICORN_WORKERS="2",
            # The name integrators post to, the balancer's (test settings: PUBLIC_BASE_URL).
            DJANGO_ALLOWED_HOSTS=PUBLIC_NAME,
            GUNICORN_ACCESSLOG="",
            CELERY_BEAT_SCHEDULE_FILE=str(tmp_path / "celerybeat-schedule"),
            **self.media.environment(),
            **FAST_CALLS,
        )
        env["PATH"] = service_path(env)
        commands = procfile_commands()
        self.hosts = {}
        for name, processes in [
            ("web1", ["web"]),
            ("web2", ["web"]),
            ("calls1", ["calls"]),
            ("calls2", ["calls"]),
            ("worker", ["worker", "webhooks"]),
            ("tx1", ["transcription"]),
            ("tx2", ["transcription"]),
        ]:
            host = self.hosts[name] = network.host(name)
            own = {**env, "GUNICORN_BIND": f"{host.address}:8000"}
            for process in processes:
                host.start(process, commands[process], own)
        for name in ("web1", "web2"):
            host = self.hosts[name]
            wait_for(
                functools.partial(listening, host.address, 8000),
                normal=5,
                what=f"gunicorn on {name}",
                process=host.processes["web"],
            )
        lb = network.host("lb")
        self.balancer = haproxy(
            lb, [self.hosts["web1"], self.hosts["web2"]], BALANCER_PORT
        )
        wait_for(
            lambda: listening(lb.address, BALANCER_PORT),
            normal=2,
            what="haproxy",
            process=lb.processes["haproxy"],
        )
        for host in self.hosts.values():
            for name, started in host.processes.items():
                if name != "web":
                    wait_for(
                        functools.partial(ready, started),
                        normal=8,
                        what=f"{name} on {host.name}",
                        process=started,
                    )

    def deliveries(self) -> list[dict[str, Any]]:
        if not self.received.exists():
            return []
        lines = self.received.read_text().splitlines()
        return [json.loads(json.loads(line)["body"]) for line in lines if line.strip()]

    def write_backs(self) -> list[str]:
        """The prospect id of each ADF document the CRM's mail server took."""
        if not self.mail.exists():
            return []
        found = []
        for line in self.mail.read_text().splitlines():
            message = email.message_from_string(
                json.loads(line)["message"], policy=email.policy.default
            )
            assert isinstance(message, EmailMessage)
            document = parts(message)["text/xml"]
            found += re.findall(r">(MH-\d+)</id>", document)
        return found


def dealer_on(tenant, settings, service: Service):
    VendorRegistrationFactory(account=tenant.account, vendor_id="V-1000")
    ParsingRuleFactory(account=tenant.account)
    for n in range(20):
        agent(tenant.account, phone=f"+130355503{n:02d}")
    NotifySettings.objects.create(account=tenant.account, crm_addresses=CRM)
    settings.WEBHOOK_ALLOWED_ADDRESSES = [service.hooks_address]
    webhook_endpoint_create(organization=tenant.organization, url=service.hook_url)
    return tenant


def post(balancer: str, form: dict[str, str]) -> tuple[int, bytes]:
    address, port = balancer.split(":")
    conn = http.client.HTTPConnection(address, int(port), timeout=60)
    try:
        conn.request(
            "POST",
            "/api/nl",
            urllib.parse.urlencode(form),
            {"Content-Type": "application/x-www-form-urlencoded", "Host": PUBLIC_NAME},
        )
        response = conn.getresponse()
        return response.status, response.read()
    except OSError as error:
        return 0, str(error).encode()
    finally:
        conn.close()


class Faults(threading.Thread):
    """The faults, each at its time after the first lead: (name, when it ended)."""

    def __init__(self, service: Service, network: Network, span: float) -> None:
        super().__init__(daemon=True)
        self.service, self.network, self.span = service, network, span
        self.ended: dict[str, float] = {}
        self.error: BaseException | None = None
        self.held: set[str] = set()  # the transcription tasks tx1 ran when cut off

    def run(self) -> None:
        started = time.monotonic()
        hosts = self.service.hosts

        def at(fraction: float) -> None:
            time.sleep(max(0.0, started + fraction * self.span - time.monotonic()))

        try:
            at(0.2)
            hosts["web1"].kill()
            self.ended["a web host killed"] = time.monotonic()
            at(0.35)
            hosts["calls1"].kill()
            self.ended["a calls worker host killed"] = time.monotonic()
            at(0.45)
            # Cut while it transcribes, so the other host must take its work over.
            log = hosts["tx1"].processes["transcription"].log
            wait_for(
                lambda: bool(transcribing(log.read_text())),
                normal=3,
                what="tx1 to transcribe a call",
            )
            self.held = transcribing(log.read_text())
            hosts["tx1"].cut()
            cut = time.monotonic()
            at(0.6)
            self.service.redis.primary.kill()
            self.ended["the Redis primary killed"] = time.monotonic()
            time.sleep(max(0.0, cut + CUT_SECONDS - time.monotonic()))
            hosts["tx1"].mend()
            self.ended[f"a transcription host cut off for {CUT_SECONDS:g} s"] = (
                time.monotonic()
            )
        except BaseException as error:
            self.error = error


TASK = re.compile(
    r"insights\.tasks\.transcription_task\[([0-9a-f-]+)\] (received|succeeded|raised|retry)"
)


def transcribing(log: str) -> set[str]:
    """The transcription tasks a worker's log shows running: received, not yet finished."""
    received: set[str] = set()
    finished: set[str] = set()
    for task, what in TASK.findall(log):
        (received if what == "received" else finished).add(task)
    return received - finished


def transcribed(call_ids: list[int]) -> bool:
    """Every answered call's recording stored and transcribed (or given up on)."""
    answered = Call.objects.filter(
        pk__in=call_ids, status=CallStatus.ANSWER, duration__gt=0
    ).count()
    stored = Recording.objects.filter(
        call_id__in=call_ids, status=RecordingStatus.STORED
    ).count()
    finished = Transcription.objects.filter(call_id__in=call_ids).exclude(
        status=TranscriptionStatus.PENDING
    )
    return stored == answered and finished.count() == answered


def test_leads_go_on_while_hosts_are_lost(network, tenant, settings, tmp_path):
    service = Service(network, tmp_path)
    dealer = dealer_on(tenant, settings, service)
    span = LEADS / RATE
    faults = Faults(service, network, span)
    started = time.monotonic()

    def send(n: int) -> tuple[int, bytes, int]:
        """The answer to lead ``n``, sent again after a failure (a CRM's retry)."""
        time.sleep(max(0.0, started + n / RATE - time.monotonic()))
        form = {"xml": adf(prospect_id=f"MH-{n}"), **dealer.headers}
        status, body = post(service.balancer, form)
        again = 0
        while status != 200 and again < 5:
            time.sleep(1)
            status, body = post(service.balancer, form)
            again += 1
        return status, body, again

    faults.start()
    with ThreadPoolExecutor(max_workers=8) as pool:
        answers = list(pool.map(send, range(LEADS)))
    faults.ended["the last lead answered"] = time.monotonic()

    assert [status for status, _, _ in answers] == [200] * LEADS, answers
    sent_again = sum(again for _, _, again in answers)
    # One call a prospect, however often it was posted (a re-sent lead is a duplicate).
    calls_of = collections.defaultdict(set)
    for prospect, call in Lead.objects.filter(
        account=dealer.account, call__isnull=False
    ).values_list("prospect_id", "call_id"):
        calls_of[prospect].add(call)
    assert {p: len(c) for p, c in calls_of.items()} == {
        f"MH-{n}": 1 for n in range(LEADS)
    }
    call_ids = [call for calls in calls_of.values() for call in calls]

    worker = service.hosts["worker"].processes["worker"]
    try:
        wait_for(
            lambda: everything_settled(call_ids),
            normal=60,
            what="every call to settle",
            process=worker,
        )
    except AssertionError as error:
        raise AssertionError(f"{unsettled(call_ids)}\n{error}") from None
    calls_final = time.monotonic()
    wait_for(
        lambda: transcribed(call_ids),
        normal=60,
        what="every recording transcribed",
        process=worker,
    )
    transcripts_done = time.monotonic()
    # The cut host back on the network (what it held may run again there: once only).
    faults.join(timeout=CUT_SECONDS + span + 60)
    assert faults.error is None, faults.error
    assert not faults.is_alive()
    assert faults.held, "tx1 held no transcription when it was cut off"
    events = WebhookEvent.objects.filter(subject__in=[f"call:{pk}" for pk in call_ids])
    wait_for(
        lambda: (
            not WebhookDelivery.objects.filter(
                event__in=events, status="pending"
            ).exists()
            and {e["id"] for e in service.deliveries()}
            >= set(events.values_list("public_id", flat=True))
        ),
        normal=30,
        what="every webhook event delivered",
        process=service.hosts["worker"].processes["webhooks"],
    )
    wait_for(
        lambda: len(service.write_backs()) >= len(call_ids),
        normal=30,
        what="every write-back at the CRM",
        process=worker,
    )
    record_recovery(faults.ended, calls_final, transcripts_done, len(call_ids))
    print(f"posts sent again after a failure: {sent_again}")

    # Every accepted lead's call final, ended, with its duration and its event.
    assert set(
        Call.objects.filter(pk__in=call_ids).values_list("status", flat=True)
    ) == {CallStatus.ANSWER}
    assert_every_call_fully_ended(call_ids)
    # No lead dialed twice, no leg dialed twice, no agent left held.
    for pk in call_ids:
        dialed = CallAttempt.objects.filter(
            call_id=pk, leg=Leg.LEAD, dial_requested_at__isnull=False
        )
        assert dialed.count() == 1, (pk, list(dialed.values()))
    assert_each_leg_dialed_at_most_once(call_ids)
    assert_no_agent_held(call_ids)
    # Every recording transcribed, once: one transcript, one transcription_ready event.
    jobs = Transcription.objects.filter(call_id__in=call_ids)
    assert set(jobs.values_list("status", flat=True)) == {TranscriptionStatus.DONE}
    assert sorted(jobs.values_list("call_id", flat=True)) == sorted(call_ids)
    ready = collections.Counter(
        events.filter(type="transcription_ready").values_list("subject", flat=True)
    )
    assert ready == {f"call:{pk}": 1 for pk in call_ids}
    # Every recording in the shared store, stored by one host and read by another's work.
    recordings = Recording.objects.filter(call_id__in=call_ids).exclude(audio="")
    assert recordings.count() == len(call_ids)
    assert set(recordings.values_list("audio", flat=True)) <= service.media.keys()
    # Every event reached the integrator, none twice.
    received = collections.Counter(e["id"] for e in service.deliveries())
    sent = set(events.values_list("public_id", flat=True))
    assert {public_id: received[public_id] for public_id in sent} == dict.fromkeys(
        sent, 1
    )
    # Every call's outcome written back to the CRM once.
    assert collections.Counter(service.write_backs()) == {
        f"MH-{n}": 1 for n in range(LEADS)
    }


def record_recovery(
    ended: dict[str, float], calls_final: float, transcripts_done: float, calls: int
) -> None:
    """Each fault's seconds from its end to every call final (and, for the cut-off
    transcription host, to every transcript), for docs/performance.md ("Across hosts")."""
    lines = []
    for fault, at in ended.items():
        done = transcripts_done if "transcription" in fault else calls_final
        what = "every transcript" if "transcription" in fault else "every call final"
        lines.append(
            {
                "fault": f"across hosts: {fault} ({calls} calls)",
                "seconds": done - at,
                "until": what,
            }
        )
    if log := os.environ.get("FAULT_RECOVERY_LOG"):
        with open(log, "a") as out:
            for line in lines:
                out.write(json.dumps(line) + "\n")
    print("\n".join(json.dumps(line) for line in lines))
