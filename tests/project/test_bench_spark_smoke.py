"""bench/bench_spark.py runs on a small table: both sides of each query are timed and answer alike.

A smoke test (how fast is never checked): the plain Spark aggregate and the dpwitness release are
run through the benchmark's own functions on the shared session, and the DP answers (ε = 1 per
query, Laplace noise of scale ≤ 100 for the sum, 1 for the counts, 50 for the private join) land near
the exact ones (for the join: the exact count after truncation to ≤ 5 rows per user on each side).
"""

from __future__ import annotations

import importlib.util
import sys
from pathlib import Path
from types import ModuleType
from typing import Any

import polars as pl
import pytest

pytestmark = pytest.mark.spark

BENCH = Path(__file__).resolve().parents[2] / "bench" / "bench_spark.py"


@pytest.fixture(scope="module")
def bench_spark() -> ModuleType:
    sys.path.insert(0, str(BENCH.parent))
    spec = importlib.util.spec_from_file_location("bench_spark", BENCH)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def test_each_query_is_timed_on_both_sides_and_the_answers_agree(bench_spark: ModuleType, spark: Any, tmp_path: Path) -> None:
    path = str(bench_spark.generate(4_000, directory=tmp_path, quiet=True))
    right = str(bench_spark.generate(2_000, directory=tmp_path, quiet=True, rows_per_user=2, seed=7))  # as main()
    runs = bench_spark.runs(spark, path, right)
    assert tuple(runs) == bench_spark.QUERIES
    answers = {name: (plain(), dp()) for name, (plain, dp) in runs.items()}
    assert abs(answers["count"][1] - answers["count"][0]) < 60  # P(|Lap(1)| ≥ 60) = e^-60
    assert abs(answers["sum"][1] - answers["sum"][0]) < 100 * 60  # Δ = 100 (ages in [0, 100])
    assert abs(answers["mean"][1] - answers["mean"][0]) < 5
    exact = {row["category"]: row["count"] for row in answers["grouped count"][0]}
    released = answers["grouped count"][1]
    assert set(released) == set(bench_spark.CATEGORIES) and all(abs(released[k] - exact.get(k, 0)) < 60 for k in released)
    per_user = [pl.read_parquet(p).group_by("user_id").len().rename({"len": side}) for p, side in ((path, "a"), (right, "b"))]
    truncated = per_user[0].join(per_user[1], on="user_id").select((pl.col("a").clip(0, 5) * pl.col("b").clip(0, 5)).sum())
    bound = bench_spark.JOIN_BOUND
    assert bound == 5 and answers["private join"][0] - truncated.item() > 50 * 10  # truncation matters on this table
    assert abs(answers["private join"][1] - truncated.item()) < 50 * 60  # Δ = 5·5 + 5·5, b = 50
    figures = bench_spark.measure(runs["grouped count"][1], 1)
    assert figures["best_s"] > 0 and figures["cpu_s"] >= 0
    results = {
        "rows": 4_000, "repeats": 1, "load_before": "-", "load_after": "-",
        "queries": {name: {"plain": figures, "dpwitness": figures} for name in bench_spark.QUERIES},
    }  # fmt: skip
    assert bench_spark.report(results).count("\n") == 4 + len(bench_spark.QUERIES) - 1
