"""Rarely changed rows kept in the shared cache, all made stale at once by a new version.

Each family of entries (API keys, an organization's webhook endpoints) has one version: a
random token under one cache key. An entry is stored with the token it was read under and
is used only while that token is current. The services that change the rows call
``changed()``, which draws a new token now and again once the transaction commits (a
request between the two may have cached what it read before the change): the next read
goes to the database. A lost token is replaced by a fresh random one, so entries cached
under an earlier one are never used again.

When the cache cannot be reached, every read goes to the database (logged once per
outage). A ``changed()`` that cannot reach the cache is logged as an error: entries live
``timeout`` seconds at most.
"""

from __future__ import annotations

import logging
import uuid
from collections.abc import Callable
from typing import Any

from django.core.cache import cache
from django.db import transaction
from django.db.models.signals import m2m_changed, post_delete, post_save

from core.throttling import CACHE_ERRORS, CacheOutage

log = logging.getLogger(__name__)


class VersionedCache:
    def __init__(self, name: str, *, timeout: int = 300) -> None:
        self.name, self.timeout = name, timeout
        self.version_key = f"{name}:version"
        self.outage = CacheOutage(
            f"{name} are read from the database until it answers again",
            f"{name} are cached again",
            log,
        )

    def get(self, key: str, load: Callable[[], Any]) -> tuple[Any, str | None]:
        """The entry ``key`` and the version it holds under: cached while the version
        holds, else ``load()`` (cached unless None). The version is None when the cache
        could not be reached (then nothing is cached)."""
        entry_key = f"{self.name}:{key}"
        try:
            found = cache.get_many([self.version_key, entry_key])
            version = found.get(self.version_key)
            if version is None:
                cache.add(self.version_key, uuid.uuid4().hex, None)
                version = cache.get(self.version_key)
        except CACHE_ERRORS as error:
            self.outage.failed(error)
            return load(), None
        self.outage.answered()
        entry = found.get(entry_key)
        if entry is not None and entry[0] == version:
            return entry[1], version
        value = load()
        if value is not None:
            self.put(key, value, version)
        return value, version

    def put(self, key: str, value: Any, version: str | None) -> None:
        """Store ``value`` under the version it was read under (a version drawn since
        makes it stale at once)."""
        if version is None:
            return
        try:
            cache.set(f"{self.name}:{key}", (version, value), self.timeout)
        except CACHE_ERRORS as error:
            self.outage.failed(error)

    def changed(self) -> None:
        """Make every entry stale: now, and again once the transaction commits."""
        self._draw()
        transaction.on_commit(self._draw)

    def watch(self, *senders: type) -> None:
        """Make every entry stale whenever a row of these models is saved or deleted, or
        (for a many-to-many ``through`` model) an object's set changes: what the admin's
        forms and deletions write. Writes that send no signal (``QuerySet.update``,
        ``bulk_create``) call ``changed()`` themselves. Called from an app's ``ready``."""
        uid = f"versioned:{self.name}"
        for sender in senders:
            post_save.connect(self._signalled, sender=sender, dispatch_uid=uid)
            post_delete.connect(self._signalled, sender=sender, dispatch_uid=uid)
            m2m_changed.connect(self._signalled, sender=sender, dispatch_uid=uid)

    def _signalled(self, sender: type, **kwargs: Any) -> None:
        self.changed()

    def _draw(self) -> None:
        try:
            cache.set(self.version_key, uuid.uuid4().hex, None)
        except CACHE_ERRORS as error:
            log.error(
                "cache.version_not_drawn: %s cached before this change may be used for "
                "up to %s s if the cache kept them (%s: %s)",
                self.name,
                self.timeout,
                type(error).__name__,
                error,
            )
