"""The service's per-session engine wrapper: plan checks are remembered per query shape, never per ε."""

from __future__ import annotations

from typing import Any

import polars as pl

from dpwitness.engines import engine_for
from dpwitness.query.queries import Query
from dpwitness.serve.cache import CachedAggregates


class _Counting:
    """The real Polars engine, counting how often its plan check runs."""

    def __init__(self) -> None:
        self.inner = engine_for("polars")
        self.name = self.inner.name
        self.checks = 0

    def __getattr__(self, name: str) -> Any:
        return getattr(self.inner, name)

    def check(self, handle: Any, query: Query) -> None:
        self.checks += 1
        self.inner.check(handle, query)


def test_a_shape_that_passed_is_not_checked_again_whatever_its_epsilon() -> None:
    counting = _Counting()
    engine = CachedAggregates(counting, capacity=8)  # type: ignore[arg-type]
    handle = engine.open(pl.DataFrame({"age": [30.0, 40.0], "town": ["a", "b"]}))
    for epsilon in (0.1, 0.5, 1.0):
        engine.check(handle, Query(statistic="mean", epsilon=epsilon, column="age", bounds=(0, 100)))
    assert counting.checks == 1
    engine.check(handle, Query(statistic="mean", epsilon=0.1, column="age", bounds=(0, 90)))
    engine.check(handle, Query(statistic="mean", epsilon=0.1, column="age", bounds=(0, 100), where="town == 'a'"))
    assert counting.checks == 3


def test_many_queries_take_the_remembered_shapes_from_memory_and_the_others_in_one_pass() -> None:
    passes: list[int] = []

    class _Passes(_Counting):
        def aggregate_many(self, handle: Any, queries: Any) -> Any:
            passes.append(len(queries))
            return self.inner.aggregate_many(handle, queries)

    engine = CachedAggregates(_Passes(), capacity=8)  # type: ignore[arg-type]
    handle = engine.open(pl.DataFrame({"age": [30.0, None, 50.0], "town": ["a", "b", "a"]}))
    count = Query(statistic="count", epsilon=1.0, by=("town",), keys=("a", "b"))
    mean = Query(statistic="mean", epsilon=1.0, column="age", bounds=(0, 100), by=("town",), keys=("a", "b"))
    first = engine.aggregate_many(handle, [count])
    both = engine.aggregate_many(handle, [count, mean])
    assert passes == [1, 1]  # the count came from memory the second time; the mean was computed alone
    assert both[0] == first[0] == {"count": {"a": 2.0, "b": 1.0}}
    assert both[1] == {"count": {"a": 2.0, "b": 0.0}, "centred_sum": {"a": -20.0, "b": 0.0}}  # centred on 50; b: a null age
    assert engine.hits == 1 and engine.misses == 2
