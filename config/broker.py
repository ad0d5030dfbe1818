"""kombu's Redis transport, with a worker that survives losing Redis while it holds tasks.

When the connection to Redis drops, the worker closes its channel, and closing tries to
put the tasks it holds unacknowledged (countdown tasks waiting for their time, the task
being run) back on the queue. With Redis gone that cannot work, and in kombu 5.7.0 the
attempt fails with ``AttributeError`` (the transport's connection is already cleared, so
building a new connection pool reads ``None.hostname``) instead of a connection error.
Celery takes that for an unrecoverable error and the worker exits, scheduler and all.

Here a restore that fails is logged and given up. Nothing is lost by that: a message
Redis still holds stays in its unacknowledged set and is delivered again after the
visibility timeout, and every call's state is in the database, where the sweep
(``calls.services.calls_sweep``) re-drives it within seconds.

``config/celery.py`` registers this transport under the ``redis://`` scheme.
"""

from __future__ import annotations

import logging
from typing import Any

from kombu.transport import redis

log = logging.getLogger(__name__)


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


class Channel(redis.Channel):
    QoS = QoS


class Transport(redis.Transport):
    Channel = Channel


def use_resilient_redis_transport() -> None:
    """Make ``redis://`` broker URLs use this module's ``Transport``."""
    from kombu.transport import TRANSPORT_ALIASES

    TRANSPORT_ALIASES["redis"] = "config.broker:Transport"
