"""A quantile's aggregates (counts per bin, per declared key) are identical on Spark and Polars.

Both engines put a clamped value v in bin min(⌊(v − L)·s⌋, B − 1) with the same float64
operations (``dpwitness.mechanisms.quantiles.bin_scale``), so the counts must match exactly, edges and
all; with the same seed, the whole release is then the same number. One local Spark session
(``local[2]``, 127.0.0.1, no UI), as in tests/engines/test_engine_spark.py; skipped, with the reason,
without pyspark or Java.
"""

from __future__ import annotations

import shutil
from pathlib import Path
from typing import Any

import numpy as np
import polars as pl
import pytest

from dpwitness.engines import engine_for
from dpwitness.query.queries import Query
from dpwitness.session import Session

pytestmark = pytest.mark.spark

if shutil.which("java") is None:
    pytest.skip("Spark needs a Java runtime (17+): `java` is not on PATH", allow_module_level=True)
pytest.importorskip("pyspark", reason="pyspark is not installed (pip install 'dpwitness[spark]')")

KEY = (1, 2, 3, 4)


_OPENED: dict[tuple[str, str], Any] = {}


def both(source: Path, query: Query) -> tuple[dict[str, Any], dict[str, Any]]:
    results = []
    for name in ("polars", "spark"):
        if (name, str(source)) not in _OPENED:
            _OPENED[name, str(source)] = engine_for(name).open(source)
        results.append(engine_for(name).aggregate(_OPENED[name, str(source)], query, selection_key=KEY))
    return results[0], results[1]


def quantile(column: str, bounds: tuple[float, float], **options: Any) -> Query:
    return Query(statistic="quantile", column=column, bounds=bounds, quantiles=(0.5,), epsilon=1.0, **options)


ADULT = [
    quantile("age", (0, 100)),
    quantile("age", (20, 60), bins=40, neighbours="replace-one"),  # values outside clamp into the end bins
    quantile("hours_per_week", (1.5, 98.25), bins=37),  # edges that are not whole numbers
    quantile("fnlwgt", (0, 1.5e6), bins=1000),
    quantile("capital_gain", (0, 99_999), bins=4096),
    quantile("age", (0, 100), by=("sex",), keys=("Female", "Male", "Other")),
    quantile("hours_per_week", (0, 100), by=("sex", "race"), keys=(("Female", "White"), ("Male", "Black")), bins=64),
]


@pytest.mark.parametrize("query", ADULT, ids=[f"{q.label} bins={q.bins}" for q in ADULT])
def test_adult_bin_counts_are_identical(spark: Any, adult: Path, query: Query) -> None:
    from_polars, from_spark = both(adult, query)
    assert from_spark == from_polars
    counts = from_polars["count"]
    assert isinstance(counts, dict) and len(counts) > 1
    if len(query.by) < 2:  # every row is in some bin (of a declared key)
        assert sum(counts.values()) == 32_561
    assert all(key in set(query.cells) for key in counts)  # the engine's keys are the declared cells


def test_float_edges_nulls_and_nan_agree(spark: Any, tmp_path: Path) -> None:
    rng = np.random.default_rng(5)
    edges = np.arange(0, 11) * 0.1  # exactly at (binary-inexact) bin edges of [0, 1) with B = 10
    values = np.concatenate([rng.uniform(-0.2, 1.2, 5000), edges, np.nextafter(edges, 2.0), np.nextafter(edges, -1.0)])
    values[::97] = np.nan
    frame = pl.DataFrame({"x": values}).with_columns(
        pl.when(pl.int_range(pl.len()) % 89 == 0).then(None).otherwise(pl.col("x")).alias("x")
    )
    path = tmp_path / "edges.parquet"
    frame.write_parquet(path)
    for bins in (10, 7, 1000):
        from_polars, from_spark = both(path, quantile("x", (0, 1), bins=bins))
        assert from_spark == from_polars
        assert sum(from_polars["count"].values()) == frame.filter(pl.col("x").is_not_null() & pl.col("x").is_not_nan()).height


def test_the_seeded_release_is_the_same_number(spark: Any, adult: Path, adult_schema: Path) -> None:
    releases = []
    for engine in ("polars", "spark"):
        session = Session(str(adult), epsilon=2.0, seed=9, engine=engine, schema=adult_schema)
        releases.append(session.quantile("age", [0.1, 0.5, 0.9], (0, 100), epsilon=1.0).value)
        releases.append(session.median("hours_per_week", (0, 100), epsilon=1.0, by="sex", keys=["Female", "Male"]).value)
    assert releases[0] == releases[2] and releases[1] == releases[3]
