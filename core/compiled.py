"""Queries compiled to SQL once per database, then run with new ids.

Building a queryset and compiling it costs Django far more CPU than PostgreSQL takes to
run the statement: locking a call with its account and dialing settings (72 columns)
was 1.9 ms of compiling for 0.3 ms of the rest, and the call pipeline runs a handful of
such statements for every provider callback. A ``CompiledQuery`` builds its queryset once
per database with marker ids, keeps the compiler (its SQL, its select list, the
converters of its columns), and then only swaps the ids in: the same SQL, run and read
into models by Django's own iterable, select_related included.

Ids (integers) and moments (aware datetimes, named in ``moments``) are parameters: a
query whose other values change (a status, a list of ids) is built by the ORM as usual,
or one ``CompiledQuery`` is kept per shape (``calls.routing``). ``exists`` and ``slice``
run the ORM's own ``exists()`` and ``[start:stop]`` of the queryset.
"""

from __future__ import annotations

import copy
import itertools
import threading
from collections.abc import Callable, Hashable
from datetime import UTC, datetime, timedelta
from typing import Any, Generic, TypeVar

from django.db import DEFAULT_DB_ALIAS, connections
from django.db.models import Model, QuerySet
from django.db.models.query import MAX_GET_RESULTS, ModelIterable
from django.db.transaction import TransactionManagementError

M = TypeVar("M", bound=Model)

# Marker ids: far outside any id a table holds, each one once in a process; marker
# moments: in the year 1, each one once in a process.
_markers = itertools.count(-(2**62))
_moments = itertools.count(1)
_YEAR_ONE = datetime(1, 1, 1, tzinfo=UTC)


class CompiledQuery(Generic[M]):
    """``build(**ids)`` (a queryset of model instances, its ids keyword arguments, and
    its ``moments``) compiled once per database; ``get``/``first``/``slice``/``exists``
    run it with the values given."""

    def __init__(
        self,
        build: Callable[..., QuerySet[M]],
        *names: str,
        moments: tuple[str, ...] = (),
    ) -> None:
        self.build, self.names, self.moments = build, (*names, *moments), moments
        self._compiled: dict[
            tuple[str, Hashable], tuple[Any, str, list[Any], dict[int, str], Any]
        ] = {}
        self._lock = threading.Lock()

    def get(self, using: str = DEFAULT_DB_ALIAS, **ids: int) -> M:
        """As ``build(**ids).get()``: the one row, else DoesNotExist or
        MultipleObjectsReturned."""
        found = self._run(using, ids, limit=MAX_GET_RESULTS)
        if len(found) == 1:
            return found[0]
        model: Any = self._compiled[(using, MAX_GET_RESULTS)][0].query.model
        if not found:
            raise model.DoesNotExist(
                f"{model._meta.object_name} matching query does not exist."
            )
        raise model.MultipleObjectsReturned(
            f"get() returned more than one {model._meta.object_name} -- it returned "
            f"{len(found) if len(found) < MAX_GET_RESULTS else 'more than 20'}!"
        )

    def first(self, using: str = DEFAULT_DB_ALIAS, **ids: int) -> M | None:
        """The first row in the queryset's own order, or None (the queryset is ordered)."""
        found = self._run(using, ids, limit=1)
        return found[0] if found else None

    def slice(
        self, start: int, stop: int, using: str = DEFAULT_DB_ALIAS, **values: Any
    ) -> list[M]:
        """As ``list(build(**values)[start:stop])``."""
        return self._run(using, values, limit=("slice", start, stop))

    def exists(self, using: str = DEFAULT_DB_ALIAS, **values: Any) -> bool:
        """As ``build(**values).exists()``: the ORM's ``SELECT 1 ... LIMIT 1``."""
        connection = connections[using]
        key = (using, "exists")
        _, sql, params, slots, _ = self._compiled.get(key) or self._compile(
            using, "exists"
        )
        with connection.cursor() as cursor:
            cursor.execute(sql, self._values(connection, params, slots, values))
            return cursor.fetchone() is not None

    def _values(
        self, connection: Any, params: list[Any], slots: dict[int, str], given: Any
    ) -> tuple[Any, ...]:
        values = list(params)
        for position, name in slots.items():
            value = given[name]
            values[position] = (
                connection.ops.adapt_datetimefield_value(value)
                if name in self.moments
                else int(value)
            )
        return tuple(values)

    def _run(self, using: str, ids: dict[str, Any], *, limit: Hashable) -> list[M]:
        connection = connections[using]
        compiled = self._compiled.get((using, limit)) or self._compile(using, limit)
        compiler, sql, params, slots, converters = compiled
        if (
            compiler.query.select_for_update
            and connection.features.has_select_for_update
            and connection.get_autocommit()
        ):
            raise TransactionManagementError(
                "select_for_update cannot be used outside of a transaction."
            )
        values = self._values(connection, params, slots, ids)
        run = copy.copy(compiler)
        run.connection = connection  # this thread's
        run.as_sql = lambda *args, **kwargs: (sql, values)
        # The columns' converters, found once too (Django looks them up at every run:
        # for the call's 72 columns that was a third as much as the statement itself).
        run.get_converters = lambda expressions: converters
        return list(ModelIterable(_Compiled(run, using)))  # type: ignore[arg-type]

    def _compile(
        self, using: str, limit: Hashable
    ) -> tuple[Any, str, list[Any], dict[int, str], Any]:
        """The queryset built with marker values, limited as ``get``/``first``/``slice``
        would, or as ``exists``, and compiled (as a locking read is compiled inside a
        transaction: the caller's)."""
        connection = connections[using]
        markers: dict[str, Any] = {
            name: _YEAR_ONE + timedelta(microseconds=next(_moments))
            if name in self.moments
            else next(_markers)
            for name in self.names
        }
        queryset = self.build(**markers)
        if limit == "exists":
            query = queryset.query.exists()  # as has_results()
        elif isinstance(limit, tuple):  # a slice: the queryset's own order
            query = queryset[limit[1] : limit[2]].query.chain()
        else:
            assert isinstance(limit, int)
            if limit == 1:
                queryset = queryset if queryset.ordered else queryset.order_by("pk")
            else:
                queryset = queryset.order_by()  # as ``get()``: no ordering
            query = queryset.query.chain()
            if (
                not query.select_for_update
                or connection.features.supports_select_for_update_with_limit
            ):
                query.set_limits(high=limit)
        compiler = query.get_compiler(using=using)
        sql, params = compiler.as_sql()
        by_value = {
            connection.ops.adapt_datetimefield_value(value)
            if name in self.moments
            else value: name
            for name, value in markers.items()
        }
        slots = {
            position: by_value[value]
            for position, value in enumerate(params)
            if isinstance(value, int | str | datetime) and value in by_value
        }
        if set(slots.values()) != set(self.names):
            raise ValueError(f"not every id of {self.names} is a parameter: {sql}")
        columns = [column[0] for column in compiler.select[: compiler.col_count]]
        converters = compiler.get_converters(columns)
        with self._lock:
            self._compiled[(using, limit)] = (
                compiler,
                sql,
                list(params),
                slots,
                converters,
            )
        return self._compiled[(using, limit)]


class _Compiled:
    """What ``ModelIterable`` reads of a queryset, around a compiler already compiled."""

    _known_related_objects: dict[Any, Any] = {}

    def __init__(self, compiler: Any, using: str) -> None:
        self.db = using
        self.query = self
        self._compiler = compiler

    def get_compiler(self, using: str | None = None, **kwargs: Any) -> Any:
        return self._compiler
