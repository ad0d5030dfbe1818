"""Several machines on this one: each host a network namespace (``ip netns``) with its own
address, hostname and loopback, joined to the others by a bridge through a veth pair. The
addresses are private (one 10.x.y.0/24 per test run) and never leave the machine: the
bridge has no uplink, and nothing is routed or forwarded out of it.

Names carry the test's process id, so a run never meets another's namespaces, and
``Network.remove()`` takes everything down (the processes in each namespace, then the
namespaces and the bridge) however the test ended.
"""

from __future__ import annotations

import contextlib
import functools
import os
import shlex
import shutil
import signal
import subprocess
import time
from pathlib import Path
from typing import Any

import redis

from tests.processes import BIN, Process, TcpProxy, wait_for


def ip(*args: str, namespace: str | None = None) -> None:
    command = ["ip", *args]
    if namespace:
        command = ["ip", "netns", "exec", namespace, *command]
    subprocess.run(command, check=True, capture_output=True, timeout=30)


def can_build_hosts() -> str:
    """Why namespaces cannot be built here ('' when they can)."""
    if os.geteuid() != 0:
        return "network namespaces need root"
    for tool in ("ip", "unshare", "haproxy"):
        if not shutil.which(tool):
            return f"{tool} is missing (iproute2, util-linux, haproxy)"
    if not shutil.which("redis-server"):
        return "redis-server is missing"
    return ""


class Host:
    """One machine: a namespace with ``address`` on the bridge, and its processes."""

    def __init__(self, network: Network, name: str, number: int) -> None:
        self.network, self.name = network, name
        self.namespace = f"{network.tag}-{name}"
        self.address = f"{network.subnet}.{number}"
        self.processes: dict[str, Process] = {}
        outside, inside = f"v{network.tag}o{number}", f"v{network.tag}i{number}"
        ip("netns", "add", self.namespace)
        ip("link", "add", outside, "type", "veth", "peer", "name", inside)
        ip("link", "set", inside, "netns", self.namespace)
        ip("link", "set", outside, "master", network.bridge, "up")
        ip("link", "set", inside, "name", "eth0", namespace=self.namespace)
        ip("addr", "add", f"{self.address}/24", "dev", "eth0", namespace=self.namespace)
        ip("link", "set", "eth0", "up", namespace=self.namespace)
        ip("link", "set", "lo", "up", namespace=self.namespace)

    def start(self, name: str, command: str, env: dict[str, str]) -> Process:
        """``command`` (a shell line, as a process manager runs a Procfile's) in this host,
        under its own hostname (Celery names its workers ``calls@<hostname>``)."""
        line = f"hostname {shlex.quote(self.name)} && exec sh -c {shlex.quote(command)}"
        args = [
            "ip",
            "netns",
            "exec",
            self.namespace,
            "unshare",
            "--uts",
            "sh",
            "-c",
            line,
        ]
        log = self.network.logs / f"{self.name}-{name}.log"
        self.processes[name] = process = Process(args, env, log)
        return process

    def pids(self) -> list[int]:
        found = subprocess.run(
            ["ip", "netns", "pids", self.namespace], capture_output=True, text=True
        )
        return [int(pid) for pid in found.stdout.split()]

    def kill(self) -> None:
        """The machine lost: every process in it SIGKILLed at once, none stopped cleanly."""
        for _ in range(3):  # a process forking meanwhile is caught by the next round
            for pid in self.pids():
                with contextlib.suppress(ProcessLookupError):
                    os.kill(pid, signal.SIGKILL)
            time.sleep(0.2)
        for process in self.processes.values():
            with contextlib.suppress(subprocess.TimeoutExpired):
                process.handle.wait(timeout=10)

    def cut(self) -> None:
        """Off the network: its link down; its processes keep running, reaching nothing."""
        ip("link", "set", "eth0", "down", namespace=self.namespace)

    def mend(self) -> None:
        ip("link", "set", "eth0", "up", namespace=self.namespace)


class Network:
    """A bridge with the test's address .1 on it (where it reaches the hosts, and they
    reach this machine's PostgreSQL through a relay), and the hosts behind it."""

    def __init__(self, logs: Path) -> None:
        self.logs = logs
        self.tag = f"lc{os.getpid() % 100000}"
        self.subnet = f"10.{200 + os.getpid() % 50}.{os.getpid() % 250}"
        self.bridge = f"{self.tag}br"
        self.address = f"{self.subnet}.1"
        self.hosts: dict[str, Host] = {}
        self.relays: list[TcpProxy] = []
        self._remove_namespaces()  # an earlier run's of the same name, killed outright
        with contextlib.suppress(subprocess.CalledProcessError):
            ip("link", "del", self.bridge)
        ip("link", "add", self.bridge, "type", "bridge")
        ip("addr", "add", f"{self.address}/24", "dev", self.bridge)
        ip("link", "set", self.bridge, "up")

    def host(self, name: str) -> Host:
        self.hosts[name] = host = Host(self, name, 10 + len(self.hosts))
        return host

    def relay(self, port: int) -> str:
        """This machine's loopback ``port`` (PostgreSQL) offered to the hosts at .1."""
        relay = TcpProxy(port, address=self.address, port=port)
        relay.up()
        self.relays.append(relay)
        return f"{self.address}:{port}"

    def remove(self) -> None:
        for host in self.hosts.values():
            with contextlib.suppress(Exception):
                host.kill()
        for relay in self.relays:
            relay.down()
        self._remove_namespaces()
        with contextlib.suppress(subprocess.CalledProcessError):
            ip("link", "del", self.bridge)

    def _remove_namespaces(self) -> None:
        """Every namespace of this run's name, a half-built one too, with what runs in it."""
        listed = subprocess.run(
            ["ip", "netns", "list"], capture_output=True, text=True, check=True
        )
        for namespace in (line.split()[0] for line in listed.stdout.splitlines()):
            if namespace.startswith(f"{self.tag}-"):
                found = subprocess.run(
                    ["ip", "netns", "pids", namespace], capture_output=True, text=True
                )
                for pid in found.stdout.split():
                    with contextlib.suppress(ProcessLookupError):
                        os.kill(int(pid), signal.SIGKILL)
                with contextlib.suppress(subprocess.CalledProcessError):
                    ip("netns", "del", namespace)


def answers(address: str, port: int) -> bool:
    try:
        return bool(redis.Redis(address, port, socket_timeout=0.5).ping())
    except redis.RedisError:
        return False


MASTER = "leadcall"


class RedisGroup:
    """A primary, a replica and three sentinels, each on a host of its own."""

    def __init__(self, network: Network) -> None:
        server = shutil.which("redis-server") or "/usr/bin/redis-server"
        self.primary, self.replica = network.host("redis1"), network.host("redis2")
        for host in (self.primary, self.replica):
            line = f"{server} --port 6379 --bind {host.address} --protected-mode no --save '' --appendonly no --dir {network.logs}"
            if host is self.replica:
                line += f" --replicaof {self.primary.address} 6379"
            host.start("redis", line, dict(os.environ))
            wait_for(
                functools.partial(answers, host.address, 6379),
                normal=1,
                what=f"redis on {host.name}",
                process=host.processes["redis"],
            )
        self.sentinels = [network.host(f"sentinel{n}") for n in (1, 2, 3)]
        for host in self.sentinels:
            config = network.logs / f"{host.name}.conf"
            config.write_text(
                f"port 26379\nbind {host.address}\nprotected-mode no\ndir {network.logs}\n"
                f"sentinel monitor {MASTER} {self.primary.address} 6379 2\n"
                f"sentinel down-after-milliseconds {MASTER} 1000\n"
                f"sentinel failover-timeout {MASTER} 5000\n"
            )
            host.start("sentinel", f"{server} {config} --sentinel", dict(os.environ))
        wait_for(
            lambda: self.primary_named() == self.primary.address,
            normal=3,
            what="the sentinels to watch the primary",
        )

    def url(self, db: int) -> str:
        places = ";".join(f"sentinel://{h.address}:26379" for h in self.sentinels)
        return f"{places}/{db}"

    def primary_named(self) -> str | None:
        for host in self.sentinels:
            with contextlib.suppress(redis.RedisError):
                client = redis.Redis(
                    host.address, 26379, socket_timeout=0.5, decode_responses=True
                )
                named: Any = client.sentinel_get_master_addr_by_name(MASTER)
                return str(named[0]) if named else None
        return None


def haproxy(host: Host, backends: list[Host], port: int) -> str:
    """haproxy on ``host`` balancing HTTP over the web hosts' gunicorn (port 8000): a
    backend that stops answering its health check is taken out within a second, and a
    request refused by one is sent to the other. Returns the balancer's address."""
    servers = "\n".join(
        f"  server {b.name} {b.address}:8000 check inter 300 fall 2 rise 2"
        for b in backends
    )
    config = host.network.logs / "haproxy.cfg"
    config.write_text(
        "global\n  maxconn 1024\n"
        "defaults\n  mode http\n  timeout connect 1s\n  timeout client 120s\n"
        "  timeout server 120s\n  retries 3\n  option redispatch\n"
        f"frontend leads\n  bind {host.address}:{port}\n  default_backend web\n"
        f"backend web\n  balance roundrobin\n{servers}\n"
    )
    host.start("haproxy", f"haproxy -db -f {config}", dict(os.environ))
    return f"{host.address}:{port}"


def service_path(env: dict[str, str]) -> str:
    return f"{BIN}:{env.get('PATH', os.environ['PATH'])}"
