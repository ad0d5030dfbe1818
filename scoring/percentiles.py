"""Continuous percentiles (PostgreSQL's ``percentile_cont``) of a column over calls.

Three ways to the same value:
- ``percentiles`` and ``grouped_percentiles``: one aggregate query on PostgreSQL; on other
  databases (the embedded SQLite of ``make run``) the one or two rows at the rank, found by
  ``ORDER BY ... LIMIT 1 OFFSET n``.
- ``spread`` and ``from_spread``: the counts of each value (one grouped query, any
  database), and the percentile read from them in Python with ``percentile_cont``'s own
  arithmetic. One scan then answers every grouping at once (the dashboard's whole range,
  each account and each agent), where ``percentile_cont`` needs a scan per grouping.
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Sequence
from typing import Any

from django.db import connection
from django.db.models import Aggregate, Count, FloatField, QuerySet

from calls.models import Call


class Percentile(Aggregate):
    """PostgreSQL's ``percentile_cont(p) WITHIN GROUP (ORDER BY expression)``."""

    function = "percentile_cont"
    template = "%(function)s(%(fraction)s) WITHIN GROUP (ORDER BY %(expressions)s)"
    output_field = FloatField()

    def __init__(self, expression: Any, fraction: float, **extra: Any) -> None:
        super().__init__(expression, fraction=float(fraction), **extra)


def percentiles(
    calls: QuerySet[Call], column: str, fractions: tuple[float, ...]
) -> list[float | None]:
    """Continuous percentiles of ``column`` over ``calls`` (nulls left out)."""
    present = calls.filter(**{f"{column}__isnull": False})
    if connection.vendor == "postgresql":
        found = present.aggregate(
            **{f"p{i}": Percentile(column, p) for i, p in enumerate(fractions)}
        )
        return [found[f"p{i}"] for i in range(len(fractions))]
    count = present.count()
    results: list[float | None] = []
    ordered = present.order_by(column).values_list(column, flat=True)
    for fraction in fractions:
        if count == 0:
            results.append(None)
            continue
        rank = fraction * (count - 1)
        low = math.floor(rank)
        values = list(ordered[low : low + 2])
        upper = values[1] if len(values) > 1 else values[0]
        results.append(values[0] + (upper - values[0]) * (rank - low))
    return results


def grouped_percentiles(
    calls: QuerySet[Call], key: str, column: str, fractions: tuple[float, ...]
) -> dict[Any, list[float | None]]:
    """``percentiles`` per value of ``key``: one grouped query on PostgreSQL; elsewhere (the
    embedded SQLite of ``make run``) one ``percentiles`` per group."""
    present = calls.filter(**{f"{column}__isnull": False}).order_by()
    if connection.vendor == "postgresql":
        return {
            row[key]: [row[f"p{i}"] for i in range(len(fractions))]
            for row in present.values(key).annotate(
                **{f"p{i}": Percentile(column, p) for i, p in enumerate(fractions)}
            )
        }
    return {
        value: percentiles(present.filter(**{key: value}), column, fractions)
        for value in present.values_list(key, flat=True).distinct()
    }


# A spread: how many times each value occurs, {value: count}.
Spread = dict[Any, int]


def spread(
    calls: QuerySet[Call], keys: tuple[str, ...], column: str
) -> list[tuple[Any, ...]]:
    """One grouped query: (*keys, value, count) for each value of ``column`` (nulls left
    out) per combination of ``keys``. Its rows are at most the calls', and far fewer when
    values repeat (response times in seconds do)."""
    return list(
        calls.filter(**{f"{column}__isnull": False})
        .values_list(*keys, column)
        .annotate(count=Count("id"))
        .order_by()
    )


def from_spread(counts: Spread, fractions: Sequence[float]) -> list[float | None]:
    """``percentile_cont`` of each fraction over the values counted in ``counts``,
    computed as PostgreSQL computes it (the same doubles, so the same result to the bit):
    the rows at ``floor`` and ``ceil`` of ``fraction * (n - 1)``, interpolated linearly."""
    total = sum(counts.values())
    if not total:
        return [None] * len(fractions)
    ordered = sorted(counts.items())
    results: list[float | None] = []
    for fraction in fractions:
        rank = fraction * (total - 1)
        low, high = math.floor(rank), math.ceil(rank)
        first = float(_at(ordered, low))
        if high == low:
            results.append(first)
        else:
            second = float(_at(ordered, high))
            results.append(first + (second - first) * (rank - low))
    return results


def _at(ordered: Iterable[tuple[Any, int]], row: int) -> Any:
    """The value at 0-based ``row`` of the sorted values that ``ordered`` counts."""
    seen = 0
    for value, count in ordered:
        seen += count
        if row < seen:
            return value
    raise IndexError(row)
