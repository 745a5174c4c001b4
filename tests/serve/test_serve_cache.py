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
