"""Queries compiled to SQL once per database, then run with new ids.

Building a queryset and compiling it costs Django far more CPU than PostgreSQL takes to
run the statement: locking a call with its account and dialing settings (72 columns)
was 1.9 ms of compiling for 0.3 ms of the rest, and the call pipeline runs a handful of
such statements for every provider callback. A ``CompiledQuery`` builds its queryset once
per database with marker ids, keeps the compiler (its SQL, its select list, the
converters of its columns), and then only swaps the ids in: the same SQL, run and read
into models by Django's own iterable, select_related included.

Only ids (integers) are parameters: a query whose other values change (a moment, a
status) is built by the ORM as usual.
"""

from __future__ import annotations

import copy
import itertools
import threading
from collections.abc import Callable
from typing import Any, Generic, TypeVar

from django.db import DEFAULT_DB_ALIAS, connections
from django.db.models import Model, QuerySet
from django.db.models.query import MAX_GET_RESULTS, ModelIterable
from django.db.transaction import TransactionManagementError

M = TypeVar("M", bound=Model)

# Marker ids: far outside any id a table holds, each one once in a process.
_markers = itertools.count(-(2**62))


class CompiledQuery(Generic[M]):
    """``build(**ids)`` (a queryset of model instances, its ids keyword arguments)
    compiled once per database; ``get``/``first`` run it with the ids given."""

    def __init__(self, build: Callable[..., QuerySet[M]], *names: str) -> None:
        self.build, self.names = build, names
        self._compiled: dict[
            tuple[str, int], tuple[Any, str, list[Any], dict[int, str]]
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

    def _run(self, using: str, ids: dict[str, int], *, limit: int) -> list[M]:
        connection = connections[using]
        compiled = self._compiled.get((using, limit)) or self._compile(using, limit)
        compiler, sql, params, slots = compiled
        if (
            compiler.query.select_for_update
            and connection.features.has_select_for_update
            and connection.get_autocommit()
        ):
            raise TransactionManagementError(
                "select_for_update cannot be used outside of a transaction."
            )
        values = list(params)
        for position, name in slots.items():
            values[position] = int(ids[name])
        run = copy.copy(compiler)
        run.connection = connection  # this thread's
        run.as_sql = lambda *args, **kwargs: (sql, tuple(values))
        return list(ModelIterable(_Compiled(run, using)))  # type: ignore[arg-type]

    def _compile(
        self, using: str, limit: int
    ) -> tuple[Any, str, list[Any], dict[int, str]]:
        """The queryset built with marker ids, limited as ``get``/``first`` would, and
        compiled (as a locking read is compiled inside a transaction: the caller's)."""
        markers = {name: next(_markers) for name in self.names}
        queryset = self.build(**markers)
        if limit == 1:
            queryset = queryset if queryset.ordered else queryset.order_by("pk")
        else:
            queryset = queryset.order_by()  # as ``get()``: no ordering
        query = queryset.query.chain()
        connection = connections[using]
        if (
            not query.select_for_update
            or connection.features.supports_select_for_update_with_limit
        ):
            query.set_limits(high=limit)
        compiler = query.get_compiler(using=using)
        sql, params = compiler.as_sql()
        by_value = {value: name for name, value in markers.items()}
        slots = {
            position: by_value[value]
            for position, value in enumerate(params)
            if isinstance(value, int) and value in by_value
        }
        if set(slots.values()) != set(self.names):
            raise ValueError(f"not every id of {self.names} is a parameter: {sql}")
        with self._lock:
            self._compiled[(using, limit)] = (compiler, sql, list(params), slots)
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
