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

Writes too: ``CompiledInsert`` is ``Model.objects.create`` and ``CompiledUpdate`` a
queryset's ``update()`` of one set of fields, each statement compiled once by the ORM
and each value prepared by its own field, as the ORM prepares it (lead intake's).
"""

from __future__ import annotations

import copy
import itertools
import threading
from collections.abc import Callable, Container, Hashable, Iterable, Mapping, Sequence
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from typing import Any, Generic, TypeVar

from django.db import DEFAULT_DB_ALIAS, connections, transaction
from django.db.models import Model, QuerySet, Value
from django.db.models.base import ModelState
from django.db.models.query import MAX_GET_RESULTS, ModelIterable
from django.db.models.signals import post_save, pre_save
from django.db.models.sql import InsertQuery, UpdateQuery
from django.db.transaction import TransactionManagementError

from core.db import prepared_cursor

M = TypeVar("M", bound=Model)

# Marker ids: far outside any id a table holds, each one once in a process; marker
# moments: in the year 1, each one once in a process.
_markers = itertools.count(-(2**62))
_moments = itertools.count(1)
_YEAR_ONE = datetime(1, 1, 1, tzinfo=UTC)


def _id_markers(names: Iterable[str], moments: Container[str]) -> dict[str, Any]:
    """A marker value for each of a query's named ids: a moment in year one for the names
    in ``moments``, else an integer no real id takes; each unique, so the compiled
    statement's parameters say which id goes where."""
    return {
        name: _YEAR_ONE + timedelta(microseconds=next(_moments))
        if name in moments
        else next(_markers)
        for name in names
    }


def _id_slots(
    connection: Any,
    markers: Mapping[str, Any],
    moments: Container[str],
    params: Sequence[Any],
    sql: str,
) -> dict[int, str]:
    """Where each named id's marker stands among a compiled statement's parameters."""
    by_value = {
        connection.ops.adapt_datetimefield_value(value)
        if name in moments
        else value: name
        for name, value in markers.items()
    }
    slots = {
        position: by_value[value]
        for position, value in enumerate(params)
        if isinstance(value, int | str | datetime) and value in by_value
    }
    if set(slots.values()) != set(markers):
        raise ValueError(f"not every id of {tuple(markers)} is a parameter: {sql}")
    return slots


def _with_ids(
    connection: Any,
    params: Sequence[Any],
    slots: Mapping[int, str],
    ids: Mapping[str, Any],
    moments: Container[str],
) -> list[Any]:
    """The compiled statement's parameters with the given ids in their slots."""
    values = list(params)
    for position, name in slots.items():
        value = ids[name]
        values[position] = (
            connection.ops.adapt_datetimefield_value(value)
            if name in moments
            else int(value)
        )
    return values


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
            cursor.execute(
                sql, _with_ids(connection, params, slots, values, self.moments)
            )
            return cursor.fetchone() is not None

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
        values = tuple(_with_ids(connection, params, slots, ids, self.moments))
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
        markers = _id_markers(self.names, self.moments)
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
        slots = _id_slots(connection, markers, self.moments, params, sql)
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


class CompiledInsert(Generic[M]):
    """``model.objects.create(**values)`` with its INSERT compiled once per database.

    Django builds an InsertQuery and compiles it for every row it saves, through
    save(), save_base() and _save_table() (a lead: 26 columns). Here the ORM's own
    compiler writes the statement once (its columns, in order, ``RETURNING`` the id);
    each row only takes each field's ``pre_save`` and ``get_db_prep_save``, as the
    compiler would, so defaults, ``auto_now_add``, JSON, moments and related objects
    are written exactly as ``create`` writes them. The instance is built by the model's
    own ``__init__``, and ``pre_save``/``post_save`` are sent as ``save()`` sends them.

    A database that cannot return the id from an INSERT, a model with parents or
    generated columns, a field with its own placeholder, a row given its own id, or a
    value that is an expression (a database default) takes the ORM's own path.
    """

    def __init__(self, model: type[M]) -> None:
        self.model = model
        self._compiled: dict[str, _Insert | None] = {}
        self._lock = threading.Lock()

    def create(self, using: str = DEFAULT_DB_ALIAS, **values: Any) -> M:
        """As ``model.objects.using(using).create(**values)``."""
        obj: Any = self.model(**values)
        compiled = (
            self._compiled[using] if using in self._compiled else self._compile(using)
        )
        if compiled is None or obj.pk is not None:
            obj.save(force_insert=True, using=using)
            return obj
        # As save() and save_base() run, in their order.
        obj._prepare_related_fields_for_save(operation_name="save")
        model = self.model
        pre_save.send(
            sender=model, instance=obj, raw=False, using=using, update_fields=None
        )
        connection: Any = connections[using]
        with transaction.mark_for_rollback_on_error(using=using):
            params = _prepared(compiled.fields, obj, connection)
            if params is None:
                # An expression (a database default): the ORM's own insert.
                returned = list(
                    model._base_manager._insert(  # type: ignore[attr-defined]
                        [obj],
                        fields=compiled.fields,
                        returning_fields=compiled.returning,
                        using=using,
                    )[0]
                )
                compiled_converters: list[Any] = []
            else:
                with prepared_cursor(using) as cursor:
                    cursor.execute(compiled.sql, params)
                    returned = list(
                        connection.ops.fetch_returned_insert_columns(cursor, ())
                    )
                compiled_converters = compiled.converters
        for position, (converters, column) in compiled_converters:
            value = returned[position]
            for converter in converters:
                value = converter(value, column, connection)
            returned[position] = value
        for value, field in zip(returned, compiled.returning, strict=True):
            setattr(obj, field.attname, value)
        obj._state.db = using
        obj._state.adding = False
        post_save.send(
            sender=model,
            instance=obj,
            created=True,
            update_fields=None,
            raw=False,
            using=using,
        )
        return obj

    def _compile(self, using: str) -> _Insert | None:
        """The ORM's own INSERT of one row of the model (as ``save()`` builds it for a
        row without an id), or None where this model or database takes the ORM's path."""
        connection = connections[using]
        meta = self.model._meta
        fields = [
            field
            for field in meta.local_concrete_fields
            if not field.generated and field is not meta.auto_field
        ]
        returning = list(meta.db_returning_fields)
        compiled: _Insert | None = None
        if (
            connection.features.can_return_columns_from_insert
            and meta.auto_field is not None
            and meta.pk is meta.auto_field
            and not meta.parents
            and not meta.proxy
            and not meta.order_with_respect_to
            and len(fields) == len(meta.concrete_fields) - 1
            and not any(hasattr(field, "get_placeholder") for field in fields)
            and returning
        ):
            # A row of plain parameters (no expression, no database default), built
            # without __init__: no receiver of a model's signals ever sees it.
            template: Any = Model.__new__(self.model)
            template._state = ModelState()
            template.__dict__.update((field.attname, None) for field in fields)
            query = InsertQuery(self.model)
            query.insert_values(fields, [template])
            compiler: Any = query.get_compiler(using=using)
            compiler.returning_fields = returning
            statements = compiler.as_sql()
            if len(statements) == 1 and len(statements[0][1]) == len(fields):
                columns = [field.get_col(meta.db_table) for field in returning]
                compiled = _Insert(
                    statements[0][0],
                    fields,
                    returning,
                    list(compiler.get_converters(columns).items()),
                )
        with self._lock:
            self._compiled[using] = compiled
        return compiled


# Values that are never an expression: most of a row's, told apart without hasattr.
_PLAIN = frozenset({str, int, float, bool, type(None), datetime})


def _prepared(fields: list[Any], obj: Any, connection: Any) -> list[Any] | None:
    """The INSERT's parameters as the ORM's compiler prepares them (``pre_save``, then
    ``get_db_prep_save``), or None when one is an expression."""
    params = []
    for field in fields:
        value = field.pre_save(obj, True)
        if type(value) not in _PLAIN and hasattr(value, "resolve_expression"):
            return None
        value = field.get_db_prep_save(value, connection=connection)
        if type(value) not in _PLAIN and hasattr(value, "as_sql"):
            return None
        params.append(value)
    return params


@dataclass(frozen=True)
class _Insert:
    sql: str
    fields: list[Any]
    returning: list[Any]
    converters: list[tuple[int, tuple[list[Any], Any]]]


class CompiledUpdate(Generic[M]):
    """``build(**ids).update(**values)`` for one set of fields, compiled once per database.

    The queryset is built with marker ids (as ``CompiledQuery`` builds its own) and each
    field set to a marker value, and compiled by the ORM's own update compiler; a run
    swaps the ids in and each value, prepared by its field's ``get_db_prep_save`` as the
    compiler prepares it (a related object becomes its id). Returns the rows updated.

    A value that is an expression, a field with its own placeholder, or an update that
    spans parent tables takes the ORM's own path.
    """

    def __init__(
        self,
        build: Callable[..., QuerySet[M]],
        fields: Sequence[str],
        *names: str,
        moments: tuple[str, ...] = (),
    ) -> None:
        self.build, self.fields = build, tuple(fields)
        self.names, self.moments = (*names, *moments), moments
        self._compiled: dict[str, _Update | None] = {}
        self._lock = threading.Lock()

    def update(
        self, values: Mapping[str, Any], using: str = DEFAULT_DB_ALIAS, **ids: Any
    ) -> int:
        """As ``build(**ids).update(**values)``; ``values`` names every field (only)."""
        if values.keys() != set(self.fields):
            raise ValueError(f"values must name exactly {self.fields}")
        connection = connections[using]
        compiled = (
            self._compiled[using] if using in self._compiled else self._compile(using)
        )
        params = self._params(connection, compiled, values, ids) if compiled else None
        if compiled is None or params is None:
            queryset = self.build(**ids).using(using)
            return queryset.update(**values)
        with (
            transaction.mark_for_rollback_on_error(using=using),
            prepared_cursor(using) as cursor,
        ):
            cursor.execute(compiled.sql, params)
            return int(cursor.rowcount)

    def _params(
        self,
        connection: Any,
        compiled: _Update,
        values: Mapping[str, Any],
        ids: Mapping[str, Any],
    ) -> list[Any] | None:
        """The statement's parameters, or None when a value needs the ORM's own path."""
        params = _with_ids(connection, compiled.params, compiled.ids, ids, self.moments)
        for position, name, field in compiled.values:
            value = values[name]
            if type(value) not in _PLAIN:
                if hasattr(value, "resolve_expression"):
                    return None
                if hasattr(value, "prepare_database_save"):
                    if not field.remote_field:
                        return None  # the ORM's TypeError
                    value = value.prepare_database_save(field)
            value = field.get_db_prep_save(value, connection=connection)
            if type(value) not in _PLAIN and hasattr(value, "as_sql"):
                return None
            params[position] = value
        return params

    def _compile(self, using: str) -> _Update | None:
        connection = connections[using]
        id_markers = _id_markers(self.names, self.moments)
        queryset = self.build(**id_markers)
        meta: Any = queryset.model._meta
        fields = [meta.get_field(name) for name in self.fields]
        compiled: _Update | None = None
        if not any(hasattr(field, "get_placeholder") for field in fields):
            value_markers = {name: next(_markers) for name in self.fields}
            query: Any = queryset.query.chain(UpdateQuery)
            query.add_update_values(
                {name: Value(marker) for name, marker in value_markers.items()}
            )
            query.annotations = {}
            compiler: Any = query.get_compiler(using=using)
            sql, params = compiler.as_sql()
            if not query.related_updates:
                id_slots = _id_slots(connection, id_markers, self.moments, params, sql)
                by_value = {marker: name for name, marker in value_markers.items()}
                value_slots = [
                    (position, by_value[value], meta.get_field(by_value[value]))
                    for position, value in enumerate(params)
                    if isinstance(value, int) and value in by_value
                ]
                if len(value_slots) == len(fields):
                    compiled = _Update(sql, list(params), id_slots, value_slots)
        with self._lock:
            self._compiled[using] = compiled
        return compiled


@dataclass(frozen=True)
class _Update:
    sql: str
    params: list[Any]
    ids: dict[int, str]
    values: list[tuple[int, str, Any]]
