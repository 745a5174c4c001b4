"""Memoised exact aggregates for the service's in-memory tables (an engine wrapper).

The service's tables are loaded once and never change while it runs, so the *exact*
aggregate of a query shape (statistic, column, bounds, groups, keys) is the same every time
it is computed.  :class:`CachedAggregates` wraps an engine and remembers those exact values;
:class:`dpwitness.session.Session` still spends ε first and still adds fresh Laplace noise,
once, to every answer, so each release has exactly the distribution it would have without
the cache.  Not cached: queries with a privacy unit (their contribution bounding draws a
fresh random row selection per query).

The cache is per session, i.e. per (analyst, table): how fast an answer comes back can say
whether *you* asked that shape before, never whether another analyst did.
"""

from __future__ import annotations

import threading
from collections import OrderedDict
from collections.abc import Mapping, Sequence
from typing import Any

from dpwitness.engines import Engine, SelectionKey, plan_shape
from dpwitness.query.queries import Aggregates, Query, Schema


class CachedAggregates:
    """An :class:`~dpwitness.engines.Engine` that memoises ``aggregate`` (LRU of ``capacity`` shapes)."""

    def __init__(self, engine: Engine, *, capacity: int) -> None:
        self.engine = engine
        self.name = engine.name
        self.capacity = capacity
        self.hits = 0
        self.misses = 0
        self._entries: OrderedDict[tuple[Any, ...], Aggregates] = OrderedDict()
        self._checked: set[str] = set()
        self._lock = threading.Lock()

    def open(
        self, source: Any, *, dtypes: Mapping[str, Any] | None = None, separator: str | None = None, encoding: str | None = None
    ) -> Any:
        return self.engine.open(source, dtypes=dtypes, separator=separator, encoding=encoding)

    def schema(self, handle: Any) -> Schema:
        return self.engine.schema(handle)

    def check(self, handle: Any, query: Query) -> None:
        """The plan check runs on an empty table of the schema, so its outcome depends only on the
        query's shape: a shape that passed once (in this analyst's session) passes again."""
        shape = plan_shape(query)
        with self._lock:
            if shape in self._checked:
                return
        self.engine.check(handle, query)
        with self._lock:
            self._checked.add(shape)

    def holds(self, query: Query) -> bool:
        """Whether ``query``'s plan was checked and its exact aggregates are remembered (so neither
        :meth:`check` nor :meth:`aggregate` would call the engine); counts no hit."""
        if query.privacy_unit is not None or self.capacity < 1:
            return False
        shape, checked = _shape(query), plan_shape(query)
        with self._lock:
            return checked in self._checked and shape in self._entries

    def aggregate(self, handle: Any, query: Query, *, selection_key: SelectionKey) -> Aggregates:
        if query.privacy_unit is not None or self.capacity < 1:
            return self.engine.aggregate(handle, query, selection_key=selection_key)
        found = self._found(query)
        if found is None:
            found = self.engine.aggregate(handle, query, selection_key=selection_key)
            self._store(query, found)
        return _copy(found)

    def aggregate_many(self, handle: Any, queries: Sequence[Query]) -> list[Aggregates]:
        """The shapes remembered are answered from memory; the others in one pass of the engine."""
        if self.capacity < 1:
            return self.engine.aggregate_many(handle, queries)
        found = [self._found(q) for q in queries]
        missing = [n for n, f in enumerate(found) if f is None]
        if missing:
            computed = self.engine.aggregate_many(handle, [queries[n] for n in missing])
            for n, aggregates in zip(missing, computed, strict=True):
                self._store(queries[n], aggregates)
                found[n] = aggregates
        return [_copy(f) for f in found if f is not None]

    def _found(self, query: Query) -> Aggregates | None:
        shape = _shape(query)
        with self._lock:
            found = self._entries.get(shape)
            if found is not None:
                self._entries.move_to_end(shape)
                self.hits += 1
        return found

    def _store(self, query: Query, found: Aggregates) -> None:
        with self._lock:
            self.misses += 1
            self._entries[_shape(query)] = found
            while len(self._entries) > self.capacity:
                self._entries.popitem(last=False)


def _shape(query: Query) -> tuple[Any, ...]:
    """What the exact aggregates of ``query`` depend on (never its ε)."""
    shape: tuple[Any, ...] = (query.statistic, query.column, query.bounds, query.by, query.keys, query.aggregates)
    return (*shape, query.where, query.order_by, getattr(query, "bins", None))


def _copy(found: Aggregates) -> Aggregates:
    return {name: dict(value) if isinstance(value, dict) else value for name, value in found.items()}
