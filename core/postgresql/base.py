"""Django's PostgreSQL backend, with a health check that costs no round trip.

With ``CONN_HEALTH_CHECKS`` Django checks a connection kept from an earlier request or task
before its first query by running ``SELECT 1``: one round trip for every request and task.
A connection the server has closed (a restart, ``pg_terminate_backend``, an idle timeout)
has said so on its socket, which is then readable: the server's last message and the end
of the stream. A healthy idle connection has nothing to read. So the check asks the socket
first, at the cost of one ``poll`` with no wait, and runs Django's ``SELECT 1`` only when
something is there to read (the end of the connection, or a notice that arrived while it
was idle). A connection lost without a word (a cable pulled) is not seen by either check
before the query that fails on it.

Where queries are logged (``DEBUG``, the tests' query captures), a statement bound on the
server (``core.db.prepared_cursor``) is logged as the text the client would have sent:
psycopg keeps no text for it, and Django logged None.
"""

from __future__ import annotations

import select
from typing import Any

from django.db.backends.postgresql import base, operations
from psycopg import errors


class DatabaseOperations(operations.DatabaseOperations):  # type: ignore[misc]
    def last_executed_query(  # type: ignore[override]  # Django's returns None too
        self, cursor: Any, sql: str, params: Any
    ) -> str | None:
        text: str | None = super().last_executed_query(cursor, sql, params)
        if text is None and isinstance(cursor, base.ServerBindingCursor):
            try:
                return str(self.compose_sql(sql, params))
            except errors.DataError:
                return None
        return text


class DatabaseWrapper(base.DatabaseWrapper):  # type: ignore[misc]
    ops_class = DatabaseOperations

    def is_usable(self) -> bool:
        connection = self.connection
        if connection is None or connection.closed or connection.broken:
            return False
        try:
            poller = select.poll()
            poller.register(connection.fileno(), select.POLLIN)
            pending = poller.poll(0)
        except (OSError, ValueError):
            return False
        if not pending:
            return True
        return bool(super().is_usable())
