"""A cursor whose statements PostgreSQL prepares once per connection.

Django binds parameters on the client and never prepares (so that connection poolers in
transaction mode keep working): PostgreSQL parses and plans every statement anew. For a
hot statement with subqueries, planning costs more than running it (the User API's read:
about 1 ms to plan, 0.3 ms to run). ``prepared_cursor`` binds on the server and prepares
the statement on its first use in a connection; later uses only run it. Queries through
it are still logged and counted like any other (it is Django's cursor wrapper).

Only for SQL whose parameters' types PostgreSQL can tell: hand-written SQL that names
them where it cannot infer them (``%(ids)s::bigint[]``), and the compiled writes of
``core.compiled`` (each value goes into a column of its own type). A lead's intake: its
INSERT, its call's and its outcome's UPDATE planned once per connection, about 0.2 ms of
PostgreSQL's CPU a lead less. Only behind a direct connection or a pooler in session
mode: a pooler in transaction mode cannot keep a connection's prepared statements.
"""

from __future__ import annotations

from functools import cache
from typing import Any

from django.db import DEFAULT_DB_ALIAS, connections
from django.db.backends.utils import CursorWrapper

# psycopg prepares a statement run this many times in a connection: never, in practice.
NEVER_BY_COUNT = 2**31 - 1


def prepared_cursor(using: str = DEFAULT_DB_ALIAS) -> CursorWrapper:
    """A cursor for ``with``; on databases other than PostgreSQL, the usual one."""
    connection = connections[using]
    if connection.vendor != "postgresql":
        return connection.cursor()
    # As Django's own cursors do: a connection kept from an earlier request is checked
    # (core.postgresql: without a round trip) and replaced if the server closed it.
    connection.close_if_health_check_failed()
    connection.ensure_connection()
    if connection.connection.prepare_threshold is None:
        # Django turns psycopg's preparing off (a threshold of None), which also ignores
        # an explicit prepare=True. A threshold no statement reaches prepares only these.
        connection.connection.prepare_threshold = NEVER_BY_COUNT
    raw: Any = _preparing_cursor_class()(connection.connection)
    if connection.queries_logged:
        return connection.make_debug_cursor(raw)
    return connection.make_cursor(raw)


@cache
def _preparing_cursor_class() -> type:
    from django.db.backends.postgresql.base import ServerBindingCursor

    class PreparingCursor(ServerBindingCursor):  # type: ignore[misc,valid-type]
        def execute(self, query: Any, params: Any = None, **options: Any) -> Any:
            return super().execute(query, params, prepare=True, **options)  # type: ignore[misc]

    return PreparingCursor
