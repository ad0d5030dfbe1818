"""Download profile pictures from user-supplied URLs without becoming a request-forgery proxy."""

from __future__ import annotations

import io
from dataclasses import dataclass
from http.client import HTTPException, HTTPResponse
from urllib.parse import urljoin

from django.conf import settings
from PIL import Image

from core.outbound import (
    Deadline,
    DestinationError,
    Target,
    destination_vet,
    pinned_https,
)

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


class PictureError(Exception):
    """A profile picture that cannot be accepted; str() is the validation message."""


@dataclass(frozen=True)
class FetchedPicture:
    content: bytes
    extension: str  # "png", "jpg", "gif" or "webp"
    content_type: str


def fetch_picture(url: str) -> FetchedPicture:
    """Download and identify the picture at url; every hop must be HTTPS to a public address."""
    deadline = Deadline(settings.PROFILE_PICTURE_TIMEOUT)
    for _ in range(MAX_REDIRECTS + 1):
        status, location, content = _get(_vet(url, deadline), deadline)
        if status in _REDIRECT_STATUSES and location:
            url = urljoin(url, location)
            continue
        if status != 200:
            raise PictureError(NOT_DOWNLOADED)
        return _identify(content)
    raise PictureError(NOT_DOWNLOADED)


_REFUSALS = {
    "not_https": NOT_HTTPS,
    "not_allowed": NOT_ALLOWED,
    "unresolvable": NOT_DOWNLOADED,
}


def _vet(url: str, deadline: Deadline) -> Target:
    """Refuse anything but HTTPS to public addresses (core/outbound.py), in our words."""
    try:
        return destination_vet(
            url, deadline=deadline, allowed=settings.PROFILE_PICTURE_ALLOWED_ADDRESSES
        )
    except DestinationError as error:
        raise PictureError(_REFUSALS[error.reason]) from None
    except OSError:  # the deadline passed
        raise PictureError(NOT_DOWNLOADED) from None


def _get(target: Target, deadline: Deadline) -> tuple[int, str | None, bytes]:
    """GET one hop from the vetted address: status, Location, and the body of a 200."""
    try:
        with pinned_https(
            target, deadline=deadline, cafile=settings.PROFILE_PICTURE_CA_BUNDLE
        ) as connection:
            headers = {"Host": target.host_header, "Accept": "image/*"}
            connection.request("GET", target.path, headers=headers)
            with connection.getresponse() as response:
                if response.status != 200:
                    return response.status, response.getheader("Location"), b""
                return 200, None, _read_body(response)
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
