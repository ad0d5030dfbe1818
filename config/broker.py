"""kombu's Redis transport, with a worker that survives losing Redis while it holds tasks.

When the connection to Redis drops, the worker closes its channel, and closing tries to
put the tasks it holds unacknowledged (countdown tasks waiting for their time, the task
being run) back on the queue. With Redis gone that cannot work, and in kombu 5.7.0 the
attempt fails with ``AttributeError`` (the transport's connection is already cleared, so
building a new connection pool reads ``None.hostname``) instead of a connection error.
Celery takes that for an unrecoverable error and the worker exits, scheduler and all.

Here a restore that fails is logged and given up, and so is an acknowledgement that
fails. Nothing is lost by that: a message
Redis still holds stays in its unacknowledged set and is delivered again after the
visibility timeout, and every call's state is in the database, where the sweep
(``calls.services.calls_sweep``) re-drives it within seconds.

``config/celery.py`` registers this transport under the ``redis://`` scheme (and its
Sentinel twin under ``sentinel://``), and makes the
app's connections reconnect every second (``Connection``) instead of at kombu's growing
intervals.
"""

from __future__ import annotations

import contextlib
import logging
import threading
from collections.abc import Iterator
from typing import Any

import celery.app.amqp
import kombu
from kombu.transport import redis, virtual

from core.handover import fail_fast

log = logging.getLogger(__name__)


# Set once this process gave up putting back tasks it held: they may be lost.
unrestored = threading.Event()


class QoS(redis.QoS):
    def restore_unacked(self, client: Any = None) -> None:
        try:
            super().restore_unacked(client)
        except (AttributeError, *self.channel.connection_errors) as error:
            log.warning(
                "could not restore %d unacknowledged message(s) to the broker: %r; "
                "the sweep re-drives their calls from the database",
                len(self._delivered),
                error,
            )
            self._delivered.clear()
            unrestored.set()

    def ack(self, delivery_tag: Any) -> None:
        # Acknowledging after the connection dropped fails the same way (kombu 5.7.0 reads
        # the cleared connection) and, uncaught, stops the worker. The message stays in
        # Redis's unacknowledged set and is delivered again after the visibility timeout;
        # every task is idempotent, so forgetting it here loses nothing.
        try:
            super().ack(delivery_tag)
        except (AttributeError, *self.channel.connection_errors) as error:
            log.warning(
                "could not acknowledge a message to the broker: %r; Redis delivers it "
                "again after the visibility timeout",
                error,
            )
            virtual.QoS.ack(self, delivery_tag)


class Channel(redis.Channel):
    QoS = QoS
    _commands_client: Any = None

    @contextlib.contextmanager
    def conn_or_acquire(self, client: Any = None) -> Iterator[Any]:
        """kombu builds a new ``redis.Redis`` (a table of some 170 response callbacks)
        for every command sent without a client, each publish included: a quarter of a
        publish's CPU. One client per channel and connection pool serves them all."""
        if client:
            yield client
            return
        mine = self._commands_client
        if mine is None or mine.connection_pool is not self.pool:
            mine = self._commands_client = self._create_client()
        yield mine


class Transport(redis.Transport):
    Channel = Channel


class SentinelChannel(redis.SentinelChannel, Channel):
    """kombu's Sentinel channel (the primary asked of the sentinels on each connection)
    with this module's resilient acknowledgements and shared client."""


class SentinelTransport(redis.SentinelTransport):
    """``sentinel://host:port;sentinel://host:port/db`` with the ``master_name`` transport
    option (``REDIS_SENTINEL_MASTER``): a Redis whose primary may fail over to a replica."""

    Channel = SentinelChannel


def use_resilient_redis_transport() -> None:
    """Make ``redis://`` and ``sentinel://`` broker URLs use this module's transports."""
    from kombu.transport import TRANSPORT_ALIASES

    TRANSPORT_ALIASES["redis"] = "config.broker:Transport"
    TRANSPORT_ALIASES["sentinel"] = "config.broker:SentinelTransport"


# A worker that lost the broker tries to reconnect after this many seconds at most
# (kombu's own waits grow 2, 4, 6 ... up to 30 s): work waits on it the moment it is back.
RECONNECT_EVERY_SECONDS = 1.0


class Connection(kombu.Connection):
    """kombu's connection, with reconnection waits capped at ``RECONNECT_EVERY_SECONDS``."""

    def _ensure_connection(  # type: ignore[override]
        self,
        errback: Any = None,
        max_retries: int | None = None,
        interval_start: float = 2,
        interval_step: float = 2,
        interval_max: float = 30,
        **kwargs: Any,
    ) -> Any:
        cap = RECONNECT_EVERY_SECONDS
        return super()._ensure_connection(
            errback,
            max_retries,
            min(interval_start, cap),
            min(interval_step, cap),
            min(interval_max, cap),
            **kwargs,
        )


class AMQP(celery.app.amqp.AMQP):
    Connection = Connection


def broker_identity(app: Any) -> str | None:
    """Which broker server answers now: a Redis server's run id, new each time it starts (a
    Redis that restarted has lost what it held unless it persists). None when the transport
    has no such id (the filesystem broker) or the broker cannot be reached."""
    if not str(app.conf.broker_url).startswith(("redis", "sentinel")):
        return None
    try:
        with app.connection_for_write(
            transport_options=fail_fast(app, timeout=1.0)
        ) as connection:
            return str(connection.default_channel.client.info("server")["run_id"])
    except Exception as error:  # unknown this time: the next sweep asks again
        log.info("could not read the broker's run id: %r", error)
        return None
