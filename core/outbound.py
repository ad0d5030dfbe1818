"""HTTPS requests to addresses users give us (profile pictures, webhook endpoints) without
becoming a request-forgery proxy: HTTPS only, the host resolved once and refused if any of
its addresses is private, loopback, link-local or otherwise internal, and the connection
pinned to the address that was vetted, under one total deadline."""

from __future__ import annotations

import ipaddress
import socket
import ssl
import threading
import time
from collections.abc import Iterable, Iterator
from concurrent.futures import ThreadPoolExecutor
from contextlib import contextmanager, suppress
from dataclasses import dataclass
from http.client import HTTPConnection
from urllib.parse import urlsplit

IPAddress = ipaddress.IPv4Address | ipaddress.IPv6Address

# getaddrinfo has no timeout of its own; a worker lets a request give up on a slow resolver.
_resolver = ThreadPoolExecutor(max_workers=4, thread_name_prefix="outbound-dns")


class DestinationError(Exception):
    """A URL that may not be requested. ``reason``: "not_https", "not_allowed" (credentials in
    the URL, or an internal address) or "unresolvable"."""

    def __init__(self, reason: str) -> None:
        super().__init__(reason)
        self.reason = reason


class DeadlineExceeded(TimeoutError):
    """The request's total time budget ran out (an OSError, like every network failure)."""


@dataclass(frozen=True)
class Target:
    hostname: str  # ASCII name or IP literal: SNI, certificate check and Host header
    address: str  # the vetted IP, the only address connected to
    port: int
    path: str
    host_header: str
    tls: bool = (
        True  # False only for plain HTTP to loopback, where the caller allows it
    )


def destination_vet(
    url: str,
    *,
    deadline: Deadline,
    allowed: Iterable[str] = (),
    local_http: bool = False,
) -> Target:
    """Parse url and resolve its host once, refusing anything but HTTPS to public addresses
    (``allowed``: addresses exempt from the refusal, for tests; ``local_http``: plain HTTP
    is accepted too when every address of the host is loopback, for local development)."""
    try:
        parts = urlsplit(url.strip())
        tls = parts.scheme == "https"
        default_port = 443 if tls else 80
        port = parts.port or default_port
        hostname = (parts.hostname or "").encode("idna").decode("ascii")
    except (ValueError, UnicodeError):
        raise DestinationError("not_https") from None
    plain = local_http and parts.scheme == "http"
    if not (tls or plain) or not hostname:
        raise DestinationError("not_https")
    if parts.username is not None or parts.password is not None:
        raise DestinationError("not_allowed")
    addresses = _resolve(hostname, port, deadline)
    if plain:
        if not all(a.is_loopback for a in addresses):
            raise DestinationError("not_https")
    else:
        exempt = {ipaddress.ip_address(a) for a in allowed}
        if any(is_internal(a) and a not in exempt for a in addresses):
            raise DestinationError("not_allowed")
    host = f"[{hostname}]" if ":" in hostname else hostname
    return Target(
        hostname=hostname,
        address=str(addresses[0]),
        port=port,
        path=(parts.path or "/") + (f"?{parts.query}" if parts.query else ""),
        host_header=host if parts.port in (None, default_port) else f"{host}:{port}",
        tls=tls,
    )


def _resolve(hostname: str, port: int, deadline: Deadline) -> list[IPAddress]:
    """Look the host up once; what is vetted here is what gets connected to."""
    lookup = _resolver.submit(
        socket.getaddrinfo, hostname, port, type=socket.SOCK_STREAM
    )
    try:
        infos = lookup.result(timeout=deadline.remaining())
        # The scope of a link-local IPv6 address ("%eth0") is dropped: it is refused either way.
        addresses = [
            ipaddress.ip_address(str(info[4][0]).partition("%")[0]) for info in infos
        ]
    except (OSError, UnicodeError, ValueError):
        raise DestinationError("unresolvable") from None
    if not addresses:
        raise DestinationError("unresolvable")
    return addresses


def is_internal(address: IPAddress) -> bool:
    """Whether address is anything but a plain public unicast address."""
    if isinstance(address, ipaddress.IPv6Address):
        # IPv4 embedded in IPv6 reaches the IPv4 host: judge that one too.
        embedded = address.ipv4_mapped or address.sixtofour
        if embedded is not None and is_internal(embedded):
            return True
        if address.is_site_local:
            return True
    return (
        not address.is_global
        or address.is_private
        or address.is_loopback
        or address.is_link_local
        or address.is_multicast
        or address.is_reserved
        or address.is_unspecified
    )


@contextmanager
def pinned_https(
    target: Target, *, deadline: Deadline, cafile: str | None = None
) -> Iterator[HTTPConnection]:
    """An HTTPS connection to the vetted address, cut at the deadline (plain HTTP for a
    target vetted as local HTTP). Raises OSError (also ``DeadlineExceeded``),
    ``http.client.HTTPException`` or ValueError on failure."""
    context = ssl.create_default_context(cafile=cafile) if target.tls else None
    sock = socket.create_connection(
        (target.address, target.port), timeout=deadline.remaining()
    )
    with sock, deadline.guard(sock):
        connection = HTTPConnection(target.hostname, target.port)
        # Certificate and SNI are for the name in the URL, whichever address it resolved to;
        # http.client then speaks over this pinned socket instead of dialling by name.
        connection.sock = (
            context.wrap_socket(sock, server_hostname=target.hostname)
            if context is not None
            else sock
        )
        try:
            yield connection
        finally:
            connection.close()


class Deadline:
    """A request's total time budget, across lookups, connections, redirects and reads."""

    def __init__(self, seconds: float) -> None:
        self._at = time.monotonic() + seconds
        self._expired = threading.Event()

    @property
    def expired(self) -> bool:
        """Whether the budget ran out (a connection cut at the deadline fails as it can)."""
        return self._expired.is_set() or time.monotonic() >= self._at

    def remaining(self) -> float:
        left = self._at - time.monotonic()
        if left <= 0 or self._expired.is_set():
            raise DeadlineExceeded("deadline exceeded")
        return left

    @contextmanager
    def guard(self, sock: socket.socket) -> Iterator[None]:
        """Shut the connection down at the deadline: socket timeouts bound each read, not a slow drip of reads."""
        # A handle of our own, whatever ssl and http.client do with theirs (wrap, detach, close).
        handle = sock.dup()
        timer = threading.Timer(self.remaining(), self._cut, (handle,))
        timer.daemon = True
        timer.start()
        try:
            yield
        finally:
            timer.cancel()
            timer.join()  # never close the handle under a running cut: its number could be reused
            handle.close()
        # A body cut short by the shutdown can end like a complete one; it must not be used.
        self.remaining()

    def _cut(self, handle: socket.socket) -> None:
        self._expired.set()
        with suppress(OSError):
            handle.shutdown(socket.SHUT_RDWR)
