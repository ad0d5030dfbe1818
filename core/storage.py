"""Stored media read through Django's storage API, whichever backend ``STORAGES`` names:
files under ``MEDIA_ROOT`` (the embedded default) or an S3-compatible store
(django-storages' ``S3Storage``, ``MEDIA_STORAGE=s3``).

Nothing here needs a filesystem path: a byte range is read with a seek on a local file
and with a ranged GET on S3 (never the whole object fetched for a player's seek). No code
of the service needs a file's path: speech-to-text reads the recording's bytes through
the storage API, and redaction rewrites it through it.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

from django.core.files.storage import Storage

CHUNK = 64 * 1024


def _storage_errors() -> tuple[type[BaseException], ...]:
    """What a storage out of reach raises: ``OSError`` on a filesystem; botocore's own
    errors (no connection, a timeout, a 5xx or an access refused) on S3."""
    try:
        from botocore.exceptions import BotoCoreError, ClientError
    except ImportError:  # pragma: no cover - django-storages and boto3 are dependencies
        return (OSError,)
    return (OSError, BotoCoreError, ClientError)


# A read that failed for a reason that may pass (caught after FileNotFoundError, which is
# what both backends raise for a file that is not there).
STORAGE_ERRORS = _storage_errors()


def read_range(
    storage: Storage, name: str, start: int, end: int, *, chunk: int = CHUNK
) -> Iterator[bytes]:
    """Bytes ``start`` to ``end`` (inclusive) of the stored file ``name``, in chunks as
    they are consumed (a long recording is never held whole); the file, or the S3
    response, is closed when the iterator is."""
    with storage.open(name, "rb") as file:
        ranged = _s3_object(file)
        if ranged is not None:
            body = ranged.get(Range=f"bytes={start}-{end}")["Body"]
            try:
                yield from body.iter_chunks(chunk)
            finally:
                body.close()
            return
        file.seek(start)
        left = end - start + 1
        while left > 0:
            piece = file.read(min(chunk, left))
            if not piece:
                return
            left -= len(piece)
            yield piece


def _s3_object(file: Any) -> Any | None:
    """django-storages' S3 file keeps its boto3 ``Object`` as ``obj`` (loaded, so a
    missing key has already raised ``FileNotFoundError``); other files have none."""
    obj = getattr(file, "obj", None)
    return obj if obj is not None and hasattr(obj, "get") else None
