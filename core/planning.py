"""How a reader of many rows asks PostgreSQL to plan: without JIT compilation, and with
memory enough to hash and sort them without spilling to disk. A query over a range of
100,000 calls is estimated dear enough that PostgreSQL compiles it first (the speed
numbers' over 30 days: 6 s of JIT for a query that runs in well under one), and its
grouping of 100,000 rows spills past the default 4 MB of ``work_mem``."""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager

from django.db import connection, transaction

# Per hash or sort of a query: the 100,000 calls of a range grouped without spilling.
WORK_MEM = "32MB"


@contextmanager
def without_jit() -> Iterator[None]:
    """On PostgreSQL, the queries inside run in one transaction with JIT off and
    ``WORK_MEM`` to hash and sort in (inside a transaction already, such as a test's, the
    settings hold until that one ends); a no-op elsewhere."""
    if connection.vendor != "postgresql":
        yield
        return
    with transaction.atomic(savepoint=False):
        with connection.cursor() as cursor:
            cursor.execute(
                "SELECT set_config('jit', 'off', true), "
                "set_config('work_mem', %s, true)",
                [WORK_MEM],
            )
        yield
