"""Download profile pictures from user-supplied URLs without becoming a request-forgery proxy."""

from __future__ import annotations

import io
import ipaddress
import socket
import ssl
import threading
import time
from collections.abc import Iterator
from concurrent.futures import ThreadPoolExecutor
from contextlib import contextmanager, suppress
from dataclasses import dataclass
from http.client import HTTPConnection, HTTPException, HTTPResponse
from urllib.parse import urljoin, urlsplit

from django.conf import settings
from PIL import Image

NOT_HTTPS = "The profile picture must be an HTTPS URL."
NOT_ALLOWED = "The profile picture address is not allowed."
NOT_DOWNLOADED = "The profile picture could not be downloaded."
NOT_IMAGE = "The profile picture must be an image."
MAX_REDIRECTS = 3
MAX_SIDE = 8192  # pixels; bounds the memory a later decode (thumbnailing) can take
TOO_MANY_PIXELS = (
    f"The profile picture may not be larger than {MAX_SIDE} by {MAX_SIDE} pixels."
)

# Pillow format -> (extension, content type). MPO is how Pillow names many camera JPEGs.
_FORMATS = {
    "PNG": ("png", "image/png"),
    "JPEG": ("jpg", "image/jpeg"),
    "MPO": ("jpg", "image/jpeg"),
    "GIF": ("gif", "image/gif"),
    "WEBP": ("webp", "image/webp"),
}
_OPENERS = ["PNG", "JPEG", "GIF", "WEBP"]  # the JPEG opener also yields MPO
_REDIRECT_STATUSES = {301, 302, 303, 307, 308}
_CHUNK_BYTES = 64 * 1024
# getaddrinfo has no timeout of its own; a worker lets the fetch give up on a slow resolver.
_resolver = ThreadPoolExecutor(max_workers=4, thread_name_prefix="picture-dns")

IPAddress = ipaddress.IPv4Address | ipaddress.IPv6Address


class PictureError(Exception):
    """A profile picture that cannot be accepted; str() is the validation message."""


@dataclass(frozen=True)
class FetchedPicture:
    content: bytes
    extension: str  # "png", "jpg", "gif" or "webp"
    content_type: str


@dataclass(frozen=True)
class _Target:
    hostname: str  # ASCII name or IP literal: SNI, certificate check and Host header
    address: str  # the vetted IP, the only address connected to
    port: int
    path: str
    host_header: str


def fetch_picture(url: str) -> FetchedPicture:
    """Download and identify the picture at url; every hop must be HTTPS to a public address."""
    deadline = _Deadline(settings.PROFILE_PICTURE_TIMEOUT)
    for _ in range(MAX_REDIRECTS + 1):
        status, location, content = _get(_vet(url, deadline), deadline)
        if status in _REDIRECT_STATUSES and location:
            url = urljoin(url, location)
            continue
        if status != 200:
            raise PictureError(NOT_DOWNLOADED)
        return _identify(content)
    raise PictureError(NOT_DOWNLOADED)


def _vet(url: str, deadline: _Deadline) -> _Target:
    """Parse url and resolve its host once, refusing anything but HTTPS to public addresses."""
    try:
        parts = urlsplit(url.strip())
        port = parts.port or 443
        hostname = (parts.hostname or "").encode("idna").decode("ascii")
    except (ValueError, UnicodeError):
        raise PictureError(NOT_HTTPS) from None
    if parts.scheme != "https" or not hostname:
        raise PictureError(NOT_HTTPS)
    if parts.username is not None or parts.password is not None:
        raise PictureError(NOT_ALLOWED)
    addresses = _resolve(hostname, port, deadline)
    allowed = {
        ipaddress.ip_address(a) for a in settings.PROFILE_PICTURE_ALLOWED_ADDRESSES
    }
    if any(_is_internal(a) and a not in allowed for a in addresses):
        raise PictureError(NOT_ALLOWED)
    host = f"[{hostname}]" if ":" in hostname else hostname
    return _Target(
        hostname=hostname,
        address=str(addresses[0]),
        port=port,
        path=(parts.path or "/") + (f"?{parts.query}" if parts.query else ""),
        host_header=host if parts.port in (None, 443) else f"{host}:{port}",
    )


def _resolve(hostname: str, port: int, deadline: _Deadline) -> list[IPAddress]:
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
        raise PictureError(NOT_DOWNLOADED) from None
    if not addresses:
        raise PictureError(NOT_DOWNLOADED)
    return addresses


def _is_internal(address: IPAddress) -> bool:
    """Whether address is anything but a plain public unicast address."""
    if isinstance(address, ipaddress.IPv6Address):
        # IPv4 embedded in IPv6 reaches the IPv4 host: judge that one too.
        embedded = address.ipv4_mapped or address.sixtofour
        if embedded is not None and _is_internal(embedded):
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


def _get(target: _Target, deadline: _Deadline) -> tuple[int, str | None, bytes]:
    """GET one hop from the vetted address: status, Location, and the body of a 200."""
    context = ssl.create_default_context(cafile=settings.PROFILE_PICTURE_CA_BUNDLE)
    try:
        sock = socket.create_connection(
            (target.address, target.port), timeout=deadline.remaining()
        )
        with sock, deadline.guard(sock):
            connection = HTTPConnection(target.hostname, target.port)
            # Certificate and SNI are for the name in the URL, whichever address it resolved to;
            # http.client then speaks over this pinned socket instead of dialling by name.
            connection.sock = context.wrap_socket(sock, server_hostname=target.hostname)
            try:
                headers = {"Host": target.host_header, "Accept": "image/*"}
                connection.request("GET", target.path, headers=headers)
                with connection.getresponse() as response:
                    if response.status != 200:
                        return response.status, response.getheader("Location"), b""
                    return 200, None, _read_body(response)
            finally:
                connection.close()
    # ValueError: http.client refusing to send a malformed request.
    except (HTTPException, OSError, ValueError):
        raise PictureError(NOT_DOWNLOADED) from None


def _read_body(response: HTTPResponse) -> bytes:
    """Read at most the size limit; a missing or false Content-Length changes nothing."""
    limit = settings.PROFILE_PICTURE_MAX_BYTES
    too_large = (
        f"The profile picture may not be larger than {limit / 1024 / 1024:g} MiB."
    )
    declared = response.getheader("Content-Length", "")
    if declared.isdecimal() and int(declared) > limit:
        raise PictureError(too_large)
    body = bytearray()
    while chunk := response.read(_CHUNK_BYTES):
        body += chunk
        if len(body) > limit:
            raise PictureError(too_large)
    return bytes(body)


def _identify(content: bytes) -> FetchedPicture:
    """Name the image format from the bytes themselves; the declared Content-Type is not trusted."""
    try:
        with Image.open(io.BytesIO(content), formats=_OPENERS) as image:
            image_format, (width, height) = image.format, image.size
            image.verify()
    except Image.DecompressionBombError:
        raise PictureError(TOO_MANY_PIXELS) from None
    except Exception:  # Pillow parsing hostile bytes raises any exception type
        raise PictureError(NOT_IMAGE) from None
    if width > MAX_SIDE or height > MAX_SIDE:
        raise PictureError(TOO_MANY_PIXELS)
    if image_format not in _FORMATS:
        raise PictureError(NOT_IMAGE)
    extension, content_type = _FORMATS[image_format]
    return FetchedPicture(
        content=content, extension=extension, content_type=content_type
    )


class _Deadline:
    """The fetch's total time budget, across lookups, connections, redirects and reads."""

    def __init__(self, seconds: float) -> None:
        self._at = time.monotonic() + seconds
        self._expired = threading.Event()

    def remaining(self) -> float:
        left = self._at - time.monotonic()
        if left <= 0 or self._expired.is_set():
            raise PictureError(NOT_DOWNLOADED)
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
