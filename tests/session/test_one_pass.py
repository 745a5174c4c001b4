"""One pass per question (issue 31, item 1): the releases of one SQL statement (or one
``Session.run_all``) over the same rows are computed in one engine pass, one collect, and the
answers are those of one pass per release at the same seed."""

from __future__ import annotations

import math
from collections.abc import Iterator
from typing import Any

import pytest

pl = pytest.importorskip("polars")
pytest.importorskip("sqlglot")

import dpwitness as dw  # noqa: E402
from dpwitness.common.errors import BudgetExceeded  # noqa: E402
from dpwitness.engines import batches  # noqa: E402
from dpwitness.session.sql import compile_for  # noqa: E402

GROUPED = (
    "SELECT category, COUNT(*) AS n, AVG(CLAMP(age, 0, 100)) AS mean_age FROM data "
    "WHERE category IN ('a', 'b', 'c', 'z') AND score >= 0 GROUP BY category"
)
UNGROUPED = "SELECT COUNT(*), SUM(CLAMP(score, 0, 10)), AVG(CLAMP(age, 0, 100)) FROM data WHERE category = 'b'"


def table() -> Any:
    """Nulls and NaN in the averaged columns (left out of their own aggregates only), a null key,
    a key ('d') outside the declared ones and a declared key ('z') with no row; integer-valued
    numbers, so that every exact sum is the same whatever the order of the additions."""
    rows = 300
    return pl.DataFrame(
        {
            "category": [None if i % 29 == 0 else "abcd"[i % 4] for i in range(rows)],
            "age": [None if i % 7 == 0 else float(i % 90) for i in range(rows)],
            "score": [math.nan if i % 11 == 0 else float(i % 13) - 1.0 for i in range(rows)],
        }
    )


def previous(source: Any, statement: str, *, engine: str = "polars") -> list[dict[str, Any]]:
    """The path before one pass: each compiled query released by its own ``Session.run``."""
    session = dw.Session(source, epsilon=10.0, seed=11, engine=engine)
    compiled = compile_for(session, statement, epsilon=2.0)
    return [session.run(a.query).to_dict() for a in compiled.aggregates]


@pytest.fixture
def streaming_collects(monkeypatch: pytest.MonkeyPatch) -> Iterator[list[int]]:
    """Counts the collects that read the table (the engine's, which name their Polars engine:
    streaming, or in-memory for an ungrouped select over a frame; a plan check collects an empty
    frame without naming one)."""
    from dpwitness.engines.polars import _in_memory_engine

    _in_memory_engine()  # its once-per-process probe of the Polars version collects a literal frame
    calls: list[int] = []
    collect = pl.LazyFrame.collect

    def counted(self: Any, *args: Any, **kwargs: Any) -> Any:
        if "engine" in kwargs:
            calls.append(1)
        return collect(self, *args, **kwargs)

    monkeypatch.setattr(pl.LazyFrame, "collect", counted)
    yield calls


@pytest.mark.parametrize("statement", [GROUPED, UNGROUPED])
def test_a_statement_over_one_set_of_rows_is_one_collect_with_the_same_answers(
    statement: str, streaming_collects: list[int]
) -> None:
    session = dw.Session(table(), epsilon=10.0, seed=11)
    answer = session.sql(statement, epsilon=2.0)
    assert len(streaming_collects) == 1
    assert len(answer.releases) == (2 if statement == GROUPED else 3)
    streaming_collects.clear()
    before = previous(table(), statement)
    assert len(streaming_collects) == len(before) > 1  # the old path: one collect per release
    assert [r.to_dict() for r in answer.releases] == before


def test_the_fused_exact_aggregates_are_each_querys_own() -> None:
    session = dw.Session(table(), epsilon=10.0)
    queries = [a.query for a in compile_for(session, GROUPED, epsilon=2.0).aggregates]
    engine, handle = session.engine, session._opened()
    fused = engine.aggregate_many(handle, queries)  # type: ignore[attr-defined]
    alone = [engine.aggregate(handle, q, selection_key=(0, 0, 0, 0)) for q in queries]
    zero = {name: {k: v for k, v in values.items() if v != 0.0} for name, values in fused[1].items()}
    assert fused[0] == alone[0]
    assert zero == alone[1]  # the mean's own rows: a key with no age may come back as 0 (absent keys are zero)
    assert alone[1]["count"]["a"] < alone[0]["count"]["a"]  # the null ages really are left out of the mean


def test_queries_that_read_other_rows_get_passes_of_their_own() -> None:
    session = dw.Session(table(), epsilon=10.0, privacy_unit="category", max_contributions=2)
    plain = dw.Session(table(), epsilon=10.0)
    keys = ["a", "b"]
    count = plain.query("count", epsilon=1.0, by="category", keys=keys)
    mean = plain.query("mean", "age", epsilon=1.0, bounds=(0, 100), by="category", keys=keys)
    other_filter = plain.query("count", epsilon=1.0, by="category", keys=keys, where="age > 3")
    undeclared = plain.query("count", epsilon=1.0, by="category", delta=1e-6)
    bounded = session.query("sum", "age", epsilon=1.0, bounds=(0, 100))
    assert batches([count, mean, other_filter, count]) == [[0, 1, 3], [2]]
    assert batches([undeclared, undeclared, bounded, bounded]) == [[0], [1], [2], [3]]


def test_run_all_spends_nothing_unless_every_query_fits(streaming_collects: list[int]) -> None:
    session = dw.Session(table(), epsilon=1.5, seed=1)
    count = session.query("count", epsilon=1.0)
    total = session.query("sum", "age", epsilon=1.0, bounds=(0, 100))
    with pytest.raises(BudgetExceeded):
        session.run_all([count, total])
    assert session.history == [] and streaming_collects == []
    releases = session.run_all([count])
    assert len(releases) == 1 and len(session.history) == 1


@pytest.mark.spark
def test_spark_answers_a_statement_in_one_job_with_the_same_answers(spark: Any, monkeypatch: pytest.MonkeyPatch) -> None:
    frame = spark.createDataFrame(table().to_pandas())
    kind = type(frame)  # pyspark's classic DataFrame (a subclass of pyspark.sql.DataFrame)
    calls: list[int] = []
    collect = kind.collect

    def counted(self: Any) -> Any:
        calls.append(1)
        return collect(self)

    monkeypatch.setattr(kind, "collect", counted)
    session = dw.Session(frame, epsilon=10.0, seed=11, engine="spark")
    answer = session.sql(GROUPED, epsilon=2.0)
    assert len(calls) == 1
    calls.clear()
    before = previous(frame, GROUPED, engine="spark")
    assert len(calls) == 2
    assert [r.to_dict() for r in answer.releases] == before


def test_ask_all_releases_each_request_as_ask_does_in_one_pass(streaming_collects: list[int]) -> None:
    from dpwitness.query.resolve import Request

    keys = ["a", "b", "c"]
    requests = [
        Request("count", epsilon=0.5, by="category", keys=keys, alpha=0.1),
        Request("mean", "age", epsilon=1.0, bounds=(0, 100), by="category", keys=keys),
        Request("sum", "score", epsilon=0.5, bounds=(0, 10), by="category", keys=keys, alpha=0.2),
    ]
    together = dw.Session(table(), epsilon=10.0, seed=4).ask_all(requests)
    assert len(streaming_collects) == 1
    one_by_one = dw.Session(table(), epsilon=10.0, seed=4)
    alone = [one_by_one.ask(r) for r in requests]
    assert len(streaming_collects) == 1 + len(requests)
    assert [r.to_dict() for r in together] == [r.to_dict() for r in alone]
    assert [r.alpha for r in together] == [0.1, 0.05, 0.2]
