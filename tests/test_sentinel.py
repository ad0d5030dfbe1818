"""Redis behind Sentinel (Debian's redis-server, its sentinel mode): a primary, a replica and
three sentinels of the test's own. The primary is killed and not brought back; the
sentinels promote the replica, and the cache, the broker and the Procfile's processes go
on with it. Replication is asynchronous, so what the primary had not passed on may be
lost: the sweeps re-drive it from the database, and the Procfile test asserts every call's
whole outcome."""

from __future__ import annotations

import shutil
import time
from typing import Any

import kombu
import pytest
import redis

from calls.models import Call, CallAttempt, CallStatus, Leg
from config.broker import use_resilient_redis_transport
from core.cache import RedisCache
from tests.calls.test_faults import (
    FAST_CALLS,
    assert_each_leg_dialed_at_most_once,
    assert_no_agent_held,
    settle_after_fault,
)
from tests.calls.test_procfile_faults import (
    assert_every_call_fully_ended,
    dealer_with,
    post_leads_at,
)
from tests.processes import Process, Procfile, free_port, service_env, wait_for

MASTER = "leadcall"
SERVER = shutil.which("redis-server") or "/usr/bin/redis-server"


def answers(port: int) -> bool:
    try:
        return bool(redis.Redis(port=port, socket_timeout=0.5).ping())
    except redis.RedisError:
        return False


class Group:
    """A primary, a replica and three sentinels, each a process on its own port."""

    def __init__(self, tmp_path) -> None:
        self.tmp_path = tmp_path
        self.primary_port, self.replica_port = free_port(), free_port()
        self.primary = self._server(self.primary_port)
        self.replica = self._server(
            self.replica_port, "--replicaof", "127.0.0.1", str(self.primary_port)
        )
        self.sentinel_ports = [free_port() for _ in range(3)]
        self.sentinels = [self._sentinel(port) for port in self.sentinel_ports]
        wait_for(self.replicated, normal=2, what="the replica to follow the primary")
        wait_for(
            lambda: self.primary_named() == self.primary_port,
            normal=2,
            what="the sentinels to watch the primary",
        )

    def _server(self, port: int, *extra: str) -> Process:
        args = [SERVER, "--port", str(port), "--bind", "127.0.0.1"]
        args += ["--save", "", "--appendonly", "no", "--dir", str(self.tmp_path)]
        process = Process([*args, *extra], {}, self.tmp_path / f"redis-{port}.log")
        wait_for(
            lambda: answers(port), normal=1, what=f"redis on {port}", process=process
        )
        return process

    def _sentinel(self, port: int) -> Process:
        config = self.tmp_path / f"sentinel-{port}.conf"
        config.write_text(
            f"port {port}\nbind 127.0.0.1\ndir {self.tmp_path}\n"
            f"sentinel monitor {MASTER} 127.0.0.1 {self.primary_port} 2\n"
            f"sentinel down-after-milliseconds {MASTER} 1000\n"
            f"sentinel failover-timeout {MASTER} 5000\n"
        )
        args = [SERVER, str(config), "--sentinel"]
        process = Process(args, {}, self.tmp_path / f"sentinel-{port}.log")
        wait_for(
            lambda: answers(port), normal=1, what=f"sentinel {port}", process=process
        )
        return process

    def url(self, db: int) -> str:
        places = ";".join(f"sentinel://127.0.0.1:{p}" for p in self.sentinel_ports)
        return f"{places}/{db}"

    def primary_named(self) -> int | None:
        try:
            client = redis.Redis(port=self.sentinel_ports[0], socket_timeout=0.5)
            named: Any = client.sentinel_get_master_addr_by_name(MASTER)
        except redis.RedisError:
            return None
        return int(named[1]) if named else None

    def replicated(self) -> bool:
        try:
            info = redis.Redis(port=self.replica_port).info("replication")
            offset = redis.Redis(port=self.primary_port).info("replication")
        except redis.RedisError:
            return False
        return (
            info.get("master_link_status") == "up"
            and info["slave_repl_offset"] >= offset["master_repl_offset"]
        )

    def fail_over(self) -> None:
        """Kill the primary (for good) and wait until the sentinels name the replica."""
        self.primary.kill()
        wait_for(
            lambda: self.primary_named() == self.replica_port,
            normal=5,
            what="the sentinels to promote the replica",
        )

    def stop(self) -> None:
        for process in [*self.sentinels, self.replica, self.primary]:
            process.kill()


@pytest.fixture
def group(tmp_path):
    servers = Group(tmp_path)
    yield servers
    servers.stop()


def retried(action):
    """What ``action`` returns once it no longer meets a connection dropped by the failover."""
    result = []

    def tried() -> bool:
        try:
            result.append(action())
        except (redis.RedisError, OSError, kombu.exceptions.OperationalError):
            return False
        return True

    wait_for(tried, normal=3, what="the new primary to answer")
    return result[0]


@pytest.mark.slow
def test_the_cache_follows_the_primary_the_sentinels_name(group):
    options = {"socket_connect_timeout": 0.25, "socket_timeout": 0.5}
    cache = RedisCache(group.url(1), {"OPTIONS": {**options, "master_name": MASTER}})
    cache.set("before", "kept", 60)
    assert cache.get("before") == "kept"
    wait_for(group.replicated, normal=2, what="the replica to hold the key")

    group.fail_over()

    assert retried(lambda: cache.get("before")) == "kept"  # read on the new primary
    cache.set("after", "written", 60)
    assert redis.Redis(port=group.replica_port, db=1).exists(":1:after")


@pytest.mark.slow
def test_the_broker_follows_the_primary_the_sentinels_name(group):
    use_resilient_redis_transport()
    options = {"master_name": MASTER, "socket_timeout": 1.0}
    with kombu.Connection(group.url(0), transport_options=options) as connection:
        assert type(connection.transport).__name__ == "SentinelTransport"
        assert connection.transport.__module__ == "config.broker"
        queue = connection.SimpleQueue("sentinel-test")
        queue.put({"n": 1})
        wait_for(group.replicated, normal=2, what="the replica to hold the message")
        queue.close()

    group.fail_over()

    with kombu.Connection(group.url(0), transport_options=options) as connection:
        queue = connection.SimpleQueue("sentinel-test")
        message = retried(lambda: queue.get(timeout=2))
        assert message.payload == {"n": 1}  # passed on before the primary died
        message.ack()
        queue.put({"n": 2})
        assert queue.get(timeout=2).payload == {"n": 2}
        queue.close()


@pytest.mark.django_db(transaction=True)
@pytest.mark.slow
def test_the_procfile_goes_on_when_the_primary_dies_with_calls_in_talk(
    group, tenant, settings, tmp_path
):
    """20 leads at 2/s through the Procfile's processes, broker and cache on the Sentinel
    group; the primary SIGKILLed once three calls talk, never restarted. The sentinels
    promote the replica; every call ends as a user expects, none is dialed twice."""
    dealer = dealer_with(tenant, settings, agents=20, phone="+130355502{:02d}")
    env = service_env(
        CELERY_BROKER_URL=group.url(0),
        REDIS_URL=group.url(1),
        REDIS_SENTINEL_MASTER=MASTER,
        WEBHOOK_ALLOWED_ADDRESSES="127.0.0.1",
        **FAST_CALLS,
    )
    processes = Procfile(tmp_path, env)
    try:
        call_ids, _ = post_leads_at(processes.web_port, dealer, "S", 20, rate=2)
        talking = Call.objects.filter(
            pk__in=call_ids, status=CallStatus.ANSWER, ended_at__isnull=True
        )
        last_lead = time.monotonic()
        in_talk: list[int] = []

        def three_in_talk() -> bool:
            if time.monotonic() - last_lead < 1:
                return False
            in_talk[:] = talking.values_list("pk", flat=True)
            return len(in_talk) >= 3

        wait_for(three_in_talk, normal=2, what="three calls in talk")
        group.fail_over()
        settle_after_fault(
            call_ids,
            processes["worker"],
            "Redis primary lost behind Sentinel with calls in talk",
            normal=20,
        )
    finally:
        processes.stop()

    assert len(in_talk) >= 3, "too few calls were in talk when the primary died"
    assert set(
        Call.objects.filter(pk__in=call_ids).values_list("status", flat=True)
    ) == {CallStatus.ANSWER}
    assert_every_call_fully_ended(call_ids)
    for pk in in_talk:
        legs = CallAttempt.objects.filter(call_id=pk, leg=Leg.LEAD)
        assert [leg.outcome for leg in legs] == ["answered"], pk
    assert_each_leg_dialed_at_most_once(call_ids)
    assert_no_agent_held(call_ids)
