"""Joins of two private tables on Spark: the same rule as Polars (truncation per unit, then per key,
by a keyed hash of each row's content), so Δ holds under the same sweep, and the two engines give
the same exact aggregates wherever truncation cannot change the rows kept."""

from __future__ import annotations

from typing import Any

import pytest

pytest.importorskip("polars")
pytest.importorskip("pyspark", reason="pyspark is not installed (pip install 'dpwitness[spark]')")

import polars as pl

from dpwitness.engines import engine_for
from dpwitness.engines.joins import join_private
from dpwitness.privacy.neighbours import PrivateJoinBound
from dpwitness.query.queries import Query
from dpwitness.query.resolve import PrivateJoin, Request
from dpwitness.session import Session

pytestmark = pytest.mark.spark
KEY = (11, 22, 33, 44)


def _exact(engine: str, left: Any, right: Any, query: Query) -> dict[str, Any]:
    opened = engine_for(engine)
    assert query.private_join is not None
    joined = join_private(opened, opened.open(left), opened.open(right), query.private_join, unit="pid", name="r", key=KEY)
    return dict(opened.aggregate(joined, query, selection_key=KEY))


def test_spark_and_polars_agree_on_hostile_keys(spark: Any, spark_small_tables: Any) -> None:
    # units hold ≤ m rows; only the heavy key 7 is truncated, and units there hold one row: a count cannot differ
    left = pl.DataFrame(
        {
            "pid": [1, 2, 3, None, 5, *range(10, 16)],
            "k": [1.0, 2.0, None, 1.0, float("nan"), *[7.0] * 6],
            "x": [1.5, -2.0, 3.0, 9.0, 4.0, *[1.0] * 6],
        }
    )
    right = pl.DataFrame(
        {"pid": [1, 2, 2, 4, *range(20, 25)], "k": [1, 1, 2, 0, *[7] * 5], "y": [10.0, None, 5.0, 1.0, *[2.0] * 5]}
    )
    bound = PrivateJoinBound(3, 2, 2, 2, on=("k", "k"))
    queries = [
        Query(statistic="count", epsilon=1.0, private_join=bound),  # type: ignore[arg-type]
        Query(statistic="sum", epsilon=1.0, column="y", bounds=(0.0, 8.0), where="k < 7", private_join=bound),  # type: ignore[arg-type]
        Query(statistic="count", epsilon=1.0, by=("k",), keys=(1.0, 2.0, 7.0), private_join=bound),  # type: ignore[arg-type]
    ]
    with spark_small_tables(spark):
        for query in queries:
            assert _exact("spark", left, right, query) == _exact("polars", left, right, query), query.label
        assert _exact("spark", left, right, queries[0]) == {"count": 2.0 + 1.0 + 3 * 2}  # keys 1, 2 and 7 (3 × 2 kept)
        text = pl.DataFrame({"pid": [1, 2], "k": ["1", "x"]})  # text against integers: compared as text
        assert _exact("spark", text, right, queries[0]) == _exact("polars", text, right, queries[0]) == {"count": 2.0}


def test_spark_sweep_holds_delta(spark: Any, spark_small_tables: Any) -> None:
    left = pl.DataFrame(
        {"pid": [1, 1, 1, 2, 3, 9, 9, 9, 9], "k": [1, 1, 2, 1, 2, 1, 1, 1, 2], "x": [1.0, 5.0, 2.0, 3.0, 4.0, 9.0, 8.0, 7.0, 6.0]}
    )
    right = pl.DataFrame({"pid": [1, 2, 2, 4, 9, 9, 9], "k": [1, 1, 2, 1, 1, 1, 2], "y": [2.0, 3.0, 1.0, 4.0, 9.0, 9.0, 9.0]})
    bound = PrivateJoinBound(2, 2, 2, 1, on=("k", "k"))
    count = Query(statistic="count", epsilon=1.0, private_join=bound)  # type: ignore[arg-type]
    total = Query(statistic="sum", epsilon=1.0, column="y", bounds=(0.0, 10.0), private_join=bound)  # type: ignore[arg-type]
    with spark_small_tables(spark):
        full = [_exact("spark", left, right, q) for q in (count, total)]
        for unit in (1, 2, 4, 9):
            near = [
                _exact("spark", left.filter(pl.col("pid") != unit), right.filter(pl.col("pid") != unit), q)
                for q in (count, total)
            ]
            for query, a, b in zip((count, total), full, near, strict=True):
                name = query.parts[0].aggregate.value
                assert abs(a[name] - b[name]) <= query.parts[0].sensitivity, (unit, query.label)


def test_a_spark_session_answers_sql_and_python_alike(spark: Any, spark_small_tables: Any) -> None:
    left = pl.DataFrame({"pid": [1, 2, 3], "k": [1, 1, 2]})
    right = pl.DataFrame({"pid": [1, 2], "k": [1, 2], "y": [1.0, 2.0]})
    with spark_small_tables(spark):
        session = Session(left, epsilon=4.0, privacy_unit="pid", engine="spark", seed=5)
        python = session.ask(Request("count", epsilon=1.0, join=PrivateJoin(right, on="k", max_rows_per_key=2, name="b")))
        sql = session.sql(
            "SELECT COUNT(*) FROM data a JOIN b ON a.k = b.k", epsilon=1.0, private={"b": right}, max_rows_per_key=2
        )
    assert python.sensitivity == 4.0 and "private join on k = k" in python.query
    assert "private join on k = k" in str(sql)
    assert session.spent.epsilon == pytest.approx(2.0)
