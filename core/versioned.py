"""Rarely changed rows kept in the shared cache, all made stale at once by a new version.

Each family of entries (API keys, intake's routing, an organization's webhook endpoints)
has one version: a random token under one cache key. An entry is stored with the token it
was read under and is used only while that token is current. The services that change the
rows call ``changed()``, which draws a new token now and again once the transaction
commits (a request between the two may have cached what it read before the change): the
next read goes to the database. A lost token is replaced by a fresh random one, so entries
cached under an earlier one are never used again.

A request or task reads the versions of every family in one round trip, at its first read
(``scope_begin``): a lead's intake reads keys, routing and webhook endpoints under them.
Each process also keeps the entries it read (pickled, so no caller can change another's
copy), so an entry still current costs no round trip at all. A request sees the versions
of its first read, as if it had run at that moment; a long task reads them again after
``SCOPE_SECONDS``. Outside a request or task every read asks for its family's version.

When the cache cannot be reached, every read goes to the database (logged once per
outage). A ``changed()`` that cannot reach the cache is logged as an error: entries live
``timeout`` seconds at most.
"""

from __future__ import annotations

import contextlib
import logging
import pickle
import threading
import time
import uuid
from collections.abc import Callable
from typing import Any

from django.core.cache import cache, caches
from django.core.cache.backends.redis import RedisCache
from django.db import transaction
from django.db.models.signals import m2m_changed, post_delete, post_save

from core.throttling import CACHE_ERRORS, CacheOutage, cache_outage

log = logging.getLogger(__name__)

# A task's versions are read again after this long (a request is over well before).
SCOPE_SECONDS = 1.0
# Entries a process keeps per family; a full memo is emptied (the cache still has them).
LOCAL_ENTRIES = 1000

# Every family, so a scope reads all their versions at once.
_families: list[VersionedCache] = []
# This thread's scope: the versions read at its first read, and when.
_scope = threading.local()


def scope_begin(**kwargs: Any) -> None:
    """A request or task begins: the versions are read afresh at its first read
    (connected to ``request_started`` and Celery's ``task_prerun``)."""
    _scope.versions, _scope.read_at = None, 0.0
    _scope.peeked = None
    _scope.active = True


def scope_end(**kwargs: Any) -> None:
    """Outside a request or task every read asks for its family's version again."""
    _scope.active = False
    _scope.versions = None
    _scope.peeked = None


def scope_read_counting(key: str, period: int) -> int | None:
    """The scope's first read of every family's version, with one hit counted on the
    rate-limit counter ``key`` (as ``core.throttling.hit`` counts) in the same round trip
    to Redis. Returns the count, or None when nothing was counted: outside a scope, once
    its versions are read, on another cache backend, or when Redis fails (the versions
    are then read as usual, at the next read). The caller counts only a request whose key
    it has checked already, and takes the hit back (``throttling.unhit``) if the request
    is refused after all."""
    backend: Any = caches["default"]
    if (
        not getattr(_scope, "active", False)
        or _scope.versions is not None
        or not isinstance(backend, RedisCache)
    ):
        return None
    full_key = backend.make_key(key)
    version_keys = [backend.make_key(family.version_key) for family in _families]
    redis_cache: Any = backend._cache  # Django's client of the servers
    client = redis_cache.get_client(full_key, write=True)
    pool = client.connection_pool
    try:
        connection = pool.get_connection()
        try:
            connection.send_packed_command(
                connection.pack_commands([("MGET", *version_keys), ("INCR", full_key)])
            )
            found = connection.read_response()
            count = int(connection.read_response())
        except BaseException:
            connection.disconnect()  # a reply may be left unread: never reuse it
            raise
        finally:
            pool.release(connection)
    except CACHE_ERRORS:
        return None
    cache_outage.answered()  # as ``hit_or_none``: the rate limits count again
    if count == 1:
        # As ``hit``: a counter left without its expiry still counts its own window only.
        with contextlib.suppress(*CACHE_ERRORS):
            client.expire(full_key, period + 1)
    loads = redis_cache._serializer.loads
    _scope.versions = {
        family.version_key: loads(value)
        for family, value in zip(_families, found, strict=True)
        if value is not None
    }
    _scope.read_at = time.monotonic()
    return count


class VersionedCache:
    def __init__(self, name: str, *, timeout: int = 300) -> None:
        self.name, self.timeout = name, timeout
        self.version_key = f"{name}:version"
        self.outage = CacheOutage(
            f"{name} are read from the database until it answers again",
            f"{name} are cached again",
            log,
        )
        # key -> (version, pickled value): this process's copies.
        self.local: dict[str, tuple[str, bytes]] = {}
        _families.append(self)

    def get(self, key: str, load: Callable[[], Any]) -> tuple[Any, str | None]:
        """The entry ``key`` and the version it holds under: cached while the version
        holds, else ``load()`` (cached unless None). The version is None when the cache
        could not be reached (then nothing is cached)."""
        entry_key = f"{self.name}:{key}"
        try:
            version = self._scoped_version()
            if version is None:  # outside a scope: the version with the entry
                found = cache.get_many([self.version_key, entry_key])
                version = found.get(self.version_key) or self._new_version()
                entry = found.get(entry_key)
            elif (mine := self.local.get(key)) is not None and mine[0] == version:
                self.outage.answered()
                peeked = getattr(_scope, "peeked", None)
                if peeked is not None and peeked[0] is mine:
                    _scope.peeked = None
                    return peeked[1], version
                # Bytes this process pickled itself (``_keep``), never read from outside.
                return pickle.loads(mine[1]), version  # noqa: S301
            else:
                if mine is not None:  # stale: no longer a copy to ``peek`` at either
                    self.local.pop(key, None)
                entry = cache.get(entry_key)
        except CACHE_ERRORS as error:
            self.outage.failed(error)
            return load(), None
        self.outage.answered()
        if entry is not None and entry[0] == version:
            self._keep(key, version, entry[1])
            return entry[1], version
        value = load()
        if value is not None:
            self.put(key, value, version)
        return value, version

    def peek(self, key: str) -> Any:
        """This process's copy of the entry ``key`` (None without one), whatever version
        it was kept under: a guess, for work sent along with the scope's read of the
        versions, never an answer (``get`` tells whether it is still current). The
        caller must not change it: this scope's next ``get`` of the key hands out this
        very copy if it is current, instead of unpickling another."""
        mine = self.local.get(key)
        if mine is None:
            return None
        value = pickle.loads(mine[1])  # noqa: S301 (bytes pickled by ``_keep``)
        if getattr(_scope, "active", False):
            _scope.peeked = (mine, value)
        return value

    def put(self, key: str, value: Any, version: str | None) -> None:
        """Store ``value`` under the version it was read under (a version drawn since
        makes it stale at once)."""
        if version is None:
            return
        try:
            cache.set(f"{self.name}:{key}", (version, value), self.timeout)
        except CACHE_ERRORS as error:
            self.outage.failed(error)
            return
        self._keep(key, version, value)

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

    def _keep(self, key: str, version: str, value: Any) -> None:
        if len(self.local) >= LOCAL_ENTRIES:
            self.local.clear()
        self.local[key] = (version, pickle.dumps(value, pickle.HIGHEST_PROTOCOL))

    def _scoped_version(self) -> str | None:
        """This family's version as the current scope read it (every family's at once,
        at the scope's first read); None outside a scope."""
        if not getattr(_scope, "active", False):
            return None
        versions = _scope.versions
        if versions is None or time.monotonic() - _scope.read_at > SCOPE_SECONDS:
            keys = [family.version_key for family in _families]
            versions = cache.get_many(keys)
            _scope.versions, _scope.read_at = versions, time.monotonic()
        version = versions.get(self.version_key)
        if version is None:
            version = versions[self.version_key] = self._new_version()
        return version  # type: ignore[no-any-return]

    def _new_version(self) -> str:
        """A family without a version (never drawn, or the cache lost it) gets a fresh
        random one; two processes racing keep the first."""
        cache.add(self.version_key, uuid.uuid4().hex, None)
        return cache.get(self.version_key)  # type: ignore[no-any-return]

    def _draw(self) -> None:
        token = uuid.uuid4().hex
        versions = getattr(_scope, "versions", None)
        try:
            cache.set(self.version_key, token, None)
        except CACHE_ERRORS as error:
            if versions is not None:
                versions.pop(self.version_key, None)  # read again (from the database)
            log.error(
                "cache.version_not_drawn: %s cached before this change may be used for "
                "up to %s s if the cache kept them (%s: %s)",
                self.name,
                self.timeout,
                type(error).__name__,
                error,
            )
            return
        if versions is not None:
            versions[self.version_key] = token  # this scope's next read sees its change
        self.local.clear()
