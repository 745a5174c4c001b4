"""The Spark engine computes the same exact aggregates as the Polars engine, from one Query.

One real local Spark session (``local[2]``, bound to 127.0.0.1, no UI) is started once for the
whole run (~10 s) and shared by every test here. Skipped, with the reason, when pyspark or a
Java runtime is missing.

Agreement is checked on the Adult extract (integer columns: the sums are exact, so equality is
exact) and on generated data with several rows per person. With contribution bounding the two
engines use the same selection rule but different hash functions, so their picks differ; the
tests then check what must hold whatever the picks: the bound itself, the count (which does
not depend on the picks), aggregates where every pick gives the same answer, and that the
selection is uniform.
"""

from __future__ import annotations

import math
import shutil
from pathlib import Path
from typing import Any

import numpy as np
import polars as pl
import pytest

import dpwitness
from dpwitness.engines import engine_for
from dpwitness.query.queries import Query
from dpwitness.session import Session

pytestmark = pytest.mark.spark

if shutil.which("java") is None:
    pytest.skip("Spark needs a Java runtime (17+): `java` is not on PATH", allow_module_level=True)
pyspark = pytest.importorskip("pyspark", reason="pyspark is not installed (pip install 'dpwitness[spark]')")

from dpwitness.engines import spark as spark_engine  # noqa: E402  (after the skips)

KEY = (0x0123456789ABCDEF, 0xFEDCBA9876543210, 0x0F0F0F0F0F0F0F0F, 0xF0F0F0F0F0F0F0F0)
OTHER_KEY = (1, 2, 3, 4)


_OPENED: dict[tuple[str, str], Any] = {}


def opened(engine: str, source: Path) -> Any:
    """Each file is opened once per engine (Spark infers a CSV's types with a pass over it)."""
    if (engine, str(source)) not in _OPENED:
        _OPENED[engine, str(source)] = engine_for(engine).open(source)
    return _OPENED[engine, str(source)]


def both(source: Path, query: Query, key: tuple[int, int, int, int] = KEY) -> tuple[dict[str, Any], dict[str, Any]]:
    return (
        engine_for("polars").aggregate(opened("polars", source), query, selection_key=key),
        engine_for("spark").aggregate(opened("spark", source), query, selection_key=key),
    )


# --- agreement on Adult ------------------------------------------------------------------------


ADULT_QUERIES = [
    Query(statistic="count", epsilon=1.0),
    Query(statistic="sum", column="age", bounds=(20, 60), epsilon=1.0),
    Query(statistic="mean", column="age", bounds=(0, 100), epsilon=1.0),
    Query(statistic="variance", column="hours_per_week", bounds=(0, 99), epsilon=1.0),
    Query(statistic="histogram", column="education", epsilon=1.0),
    Query(statistic="histogram", column="occupation", epsilon=1.0),  # has nulls: dropped by both
    Query(statistic="mean", column="hours_per_week", bounds=(0, 99), by=("sex",), keys=("Female", "Male"), epsilon=1.0),
    Query(statistic="mean", column="hours_per_week", bounds=(0, 99), by=("sex",), epsilon=1.0),
    Query(statistic="count", by=("sex", "race"), keys=(("Male", "White"), ("Female", "Black"), ("Male", "Martian")), epsilon=1.0),
    Query(statistic="sum", column="capital_gain", bounds=(0, 5000), by=("workclass",), epsilon=1.0),
]


@pytest.mark.parametrize("query", ADULT_QUERIES, ids=[q.label for q in ADULT_QUERIES])
def test_adult_aggregates_are_identical(spark: Any, adult: Path, query: Query) -> None:
    from_polars, from_spark = both(adult, query)
    assert from_spark == from_polars
    assert from_spark["count"]  # a real answer, not two empty ones


def test_adult_values_are_the_known_ones(spark: Any, adult: Path) -> None:
    engine = engine_for("spark")
    handle = opened("spark", adult)
    assert engine.aggregate(handle, ADULT_QUERIES[0], selection_key=KEY) == {"count": 32_561.0}
    by_sex = engine.aggregate(handle, ADULT_QUERIES[6], selection_key=KEY)
    assert set(by_sex["count"]) == {"Female", "Male"}
    assert by_sex["count"]["Female"] + by_sex["count"]["Male"] == 32_561
    education = engine.aggregate(handle, ADULT_QUERIES[4], selection_key=KEY)["count"]
    assert isinstance(education, dict) and len(education) == 16 and education["Bachelors"] == 5355
    occupation = engine.aggregate(handle, ADULT_QUERIES[5], selection_key=KEY)["count"]
    assert isinstance(occupation, dict) and None not in occupation and sum(occupation.values()) < 32_561


# --- generated data: several rows per person ---------------------------------------------------


@pytest.fixture(scope="module")
def people(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """3000 people with 1..12 rows each, a float column with nulls and NaNs, and 5 groups."""
    rng = np.random.default_rng(7)
    sizes = rng.integers(1, 13, size=3000)
    pid = np.repeat(np.arange(3000), sizes)
    n = len(pid)
    x = rng.normal(40.0, 30.0, size=n)
    x[rng.random(n) < 0.02] = np.nan
    frame = pl.DataFrame({"pid": pid, "x": x, "g": rng.choice(["a", "b", "c", "d", "e"], size=n)})
    frame = frame.with_columns(
        pl.when(pl.int_range(pl.len()) % 53 == 0).then(None).otherwise(pl.col("x")).alias("x"),
        pl.when(pl.int_range(pl.len()) % 71 == 0).then(None).otherwise(pl.col("pid")).alias("pid"),
        # whole-number values, equal within a person: a bounded sum cannot depend on the picks
        (pl.col("pid") % 17).cast(pl.Int64).alias("level"),
    ).sample(fraction=1.0, shuffle=True, seed=3)  # file order unrelated to the person
    path = tmp_path_factory.mktemp("people") / "people.parquet"
    frame.write_parquet(path)
    return path


def test_unbounded_float_aggregates_agree(spark: Any, people: Path) -> None:
    query = Query(statistic="variance", column="x", bounds=(-10, 90), epsilon=1.0)
    from_polars, from_spark = both(people, query)
    assert from_spark["count"] == from_polars["count"] < 3000 * 6.5  # nulls and NaNs dropped
    for name in ("centred_sum", "centred_squares"):  # float sums: equal up to summation order
        assert from_spark[name] == pytest.approx(from_polars[name], rel=1e-12)


def test_bound_holds_per_unit(spark: Any, people: Path) -> None:
    from pyspark.sql import functions as F

    engine = spark_engine.ENGINE
    handle = opened("spark", people)
    query = Query(statistic="sum", column="x", bounds=(0, 100), epsilon=1.0, privacy_unit="pid", max_contributions=3)
    per_unit = engine.bounded(handle, query, selection_key=KEY).groupBy("pid").count()
    assert per_unit.agg(F.max("count"), F.min("count")).first() == (3, 1)
    grouped = Query(statistic="histogram", column="g", epsilon=1.0, privacy_unit="pid", max_contributions=2, max_groups=2)
    rows = engine.bounded(handle, grouped, selection_key=KEY)
    assert rows.groupBy("pid").agg(F.count_distinct("g").alias("keys")).agg(F.max("keys")).first()[0] == 2
    assert rows.groupBy("pid", "g").count().agg(F.max("count")).first()[0] == 2


def test_bounded_count_is_the_same_whatever_the_picks(spark: Any, people: Path) -> None:
    frame = pl.read_parquet(people).drop_nulls("pid")
    expected = float(frame.group_by("pid").len()["len"].clip(upper_bound=4).sum())
    query = Query(statistic="count", epsilon=1.0, privacy_unit="pid", max_contributions=4)
    from_polars, from_spark = both(people, query)
    assert from_spark == from_polars == {"count": expected}


def test_bounding_that_keeps_everything_changes_nothing(spark: Any, people: Path) -> None:
    bounded = Query(statistic="mean", column="x", bounds=(0, 100), epsilon=1.0, privacy_unit="pid", max_contributions=12)
    plain = Query(statistic="mean", column="x", bounds=(0, 100), epsilon=1.0)
    polars_bounded, spark_bounded = both(people, bounded)
    _, spark_plain = both(people, plain)
    assert spark_bounded["count"] == polars_bounded["count"]
    assert spark_bounded["centred_sum"] == pytest.approx(polars_bounded["centred_sum"], rel=1e-12)
    assert spark_bounded["count"] < spark_plain["count"]  # rows without a pid are dropped under a unit


def test_bounded_sums_agree_when_the_picks_cannot_matter(spark: Any, people: Path) -> None:
    query = Query(statistic="sum", column="level", bounds=(0, 20), epsilon=1.0, privacy_unit="pid", max_contributions=3)
    from_polars, from_spark = both(people, query)
    assert from_spark == from_polars
    grouped = Query(
        statistic="sum", column="level", bounds=(0, 20), by=("level",), epsilon=1.0, privacy_unit="pid", max_contributions=2
    )
    from_polars, from_spark = both(people, grouped)
    assert from_spark == from_polars


def test_selection_is_keyed_and_deterministic(spark: Any, people: Path) -> None:
    engine = spark_engine.ENGINE
    handle = opened("spark", people)
    query = Query(statistic="sum", column="x", bounds=(0, 100), epsilon=1.0, privacy_unit="pid", max_contributions=2)
    first = engine.aggregate(handle, query, selection_key=KEY)
    assert engine.aggregate(handle, query, selection_key=KEY) == first
    other = engine.aggregate(handle, query, selection_key=OTHER_KEY)
    assert other["count"] == first["count"]  # the same number of rows ...
    assert other["sum"] != first["sum"]  # ... but other rows


def test_selection_is_uniform(spark: Any, tmp_path: Path) -> None:
    """4000 people with values (0, 0, 1), one row kept each: the 1 must be kept a third of the time.

    A rule that picked by value (identical rows together, or the smallest) would keep it half
    the time or never; 4000·(1/3) ± 5σ (σ ≈ 30) tells those apart.
    """
    people = 4000
    frame = pl.DataFrame({"pid": np.repeat(np.arange(people), 3), "v": np.tile([0, 0, 1], people)})
    path = tmp_path / "thirds.parquet"
    frame.sample(fraction=1.0, shuffle=True, seed=1).write_parquet(path)
    query = Query(statistic="sum", column="v", bounds=(0, 1), epsilon=1.0, privacy_unit="pid", max_contributions=1)
    sigma = math.sqrt(people * (1 / 3) * (2 / 3))
    from_polars, from_spark = both(path, query)
    for result in (from_spark, from_polars):
        assert result["count"] == people
        assert abs(result["sum"] - people / 3) < 5 * sigma


def test_group_selection_is_uniform(spark: Any, tmp_path: Path) -> None:
    """Each person has one row in each of the keys a, b, c, d; with max_groups=1 each key wins ≈ 1/4."""
    people = 4000
    frame = pl.DataFrame({"pid": np.repeat(np.arange(people), 4), "g": np.tile(["a", "b", "c", "d"], people)})
    path = tmp_path / "quarters.parquet"
    frame.write_parquet(path)
    query = Query(statistic="histogram", column="g", epsilon=1.0, privacy_unit="pid", max_contributions=1, max_groups=1)
    sigma = math.sqrt(people * 0.25 * 0.75)
    for result in both(path, query):
        counts = result["count"]
        assert isinstance(counts, dict) and set(counts) == {"a", "b", "c", "d"} and sum(counts.values()) == people
        assert all(abs(c - people / 4) < 5 * sigma for c in counts.values())


# --- sources and the session -------------------------------------------------------------------


def test_a_spark_dataframe_a_path_and_a_pandas_frame_give_the_same(spark: Any, people: Path) -> None:
    engine = spark_engine.ENGINE
    query = Query(statistic="mean", column="x", bounds=(0, 100), by=("g",), keys=("a", "b", "zz"), epsilon=1.0)
    from_path = engine.aggregate(engine.open(people), query, selection_key=KEY)
    from_frame = engine.aggregate(engine.open(spark.read.parquet(str(people))), query, selection_key=KEY)
    from_pandas = engine.aggregate(engine.open(pl.read_parquet(people).to_pandas()), query, selection_key=KEY)
    assert from_frame == from_path
    assert from_pandas["count"] == from_path["count"]
    assert set(from_path["count"]) == {"a", "b"}  # a declared key with no rows is absent (the session fills 0)


def test_session_on_spark_returns_releases(spark: Any, people: Path) -> None:
    session = Session(spark.read.parquet(str(people)), epsilon=3.0, engine="spark", privacy_unit="pid", max_contributions=3)
    count = session.count(epsilon=1.0)
    mean = session.mean("x", (0, 100), epsilon=1.0)
    histogram = session.histogram("g", ["a", "b", "c", "d", "e"], epsilon=1.0)
    for release in (count, mean, histogram):
        assert isinstance(release, dpwitness.Release)
        assert release.to_dict()["epsilon"] == 1.0
    assert count.sensitivity == 3.0
    assert 0 <= float(mean.value) <= 100  # type: ignore[arg-type]
    assert isinstance(histogram.value, dict) and set(histogram.value) == {"a", "b", "c", "d", "e"}
    assert session.spent.epsilon == pytest.approx(3.0)
    with pytest.raises(dpwitness.BudgetExceeded):
        session.count(epsilon=0.5)


def test_seeded_sessions_release_the_same_on_both_engines(spark: Any, adult: Path, adult_schema: Path) -> None:
    """Same exact aggregates + same seeded noise streams ⇒ the same released numbers."""
    releases = {}
    for engine in ("polars", "spark"):
        session = Session(adult, epsilon=2.0, engine=engine, seed=2026, max_rows=100_000, delta_budget=1e-4, schema=adult_schema)
        releases[engine] = (
            session.mean("age", (0, 100), epsilon=1.0).value,
            session.histogram("education", epsilon=0.5).value,
            session.count(by="sex", keys=["Female", "Male"], epsilon=0.5).value,
        )
    assert releases["spark"] == releases["polars"]


def test_bad_input_spends_nothing(spark: Any, people: Path, tmp_path: Path) -> None:
    with pytest.raises(dpwitness.ParameterError, match="source"):
        engine_for("spark").open(tmp_path / "missing.parquet")
    with pytest.raises(dpwitness.ParameterError, match="source"):
        engine_for("spark").open(42)
    session = Session(people, epsilon=1.0, engine="spark")
    with pytest.raises(dpwitness.ParameterError, match="column"):
        session.sum("nope", (0, 1), epsilon=0.5)
    with pytest.raises(dpwitness.ParameterError, match="column"):
        session.mean("g", (0, 1), epsilon=0.5)  # not numeric
    assert session.spent.epsilon == 0.0


def test_an_empty_table_is_answered_at_the_same_cost(spark: Any, people: Path) -> None:
    """Emptiness is not public: an empty table (or filter result) is answered and charged like any other."""
    empty = spark.read.parquet(str(people)).limit(0)
    session = Session(empty, epsilon=2.0, engine="spark", seed=1)
    count = session.count(epsilon=0.5)
    mean = session.mean("x", (0, 100), epsilon=0.5)
    filtered = Session(people, epsilon=1.0, engine="spark", seed=1).mean("x", (0, 100), epsilon=1.0, where="x > 1e9")
    assert count.sensitivity == 1 and session.spent.epsilon == pytest.approx(1.0)
    assert 0 <= float(mean.value) <= 100 and 0 <= float(filtered.value) <= 100  # type: ignore[arg-type]


# --- filters, the null-aware Δ and column types: the same on both engines -------------------------


FILTERED_ADULT = [
    Query(statistic="count", epsilon=1.0, where="age < 20"),
    Query(statistic="mean", column="hours_per_week", bounds=(0, 100), epsilon=1.0, where="sex == 'Female' and age >= 30"),
    Query(
        statistic="sum",
        column="capital_gain",
        bounds=(0, 5000),
        epsilon=1.0,
        where="not (race in ['White', 'Black']) or age between 20 and 25",
    ),
    Query(statistic="histogram", column="education", epsilon=1.0, where="occupation is null or hours_per_week > 60"),
    Query(statistic="count", by=("education_num",), keys=(9, 10, 99), epsilon=1.0, where="income == '>50K'"),
    Query(statistic="sum", column="age", bounds=(0, 100), epsilon=1.0, where="row_number <= 5", order_by=("fnlwgt",)),
    Query(
        statistic="variance",
        column="age",
        bounds=(0, 100),
        epsilon=1.0,
        where="row_number between 100 and 2000 and sex == 'Male'",
        order_by=("education_num", "fnlwgt"),
    ),
    Query(statistic="count", epsilon=1.0, where="age > 200"),  # empty
]


@pytest.mark.parametrize("query", FILTERED_ADULT, ids=[q.label for q in FILTERED_ADULT])
def test_filtered_adult_aggregates_are_identical(spark: Any, adult: Path, query: Query) -> None:
    """The CSV is read as text by both engines (no inference), each column read as the query needs."""
    from_polars, from_spark = both(adult, query)
    assert from_spark == from_polars


def test_filtered_values_are_the_known_ones(spark: Any, adult: Path) -> None:
    frame = pl.read_csv(adult)
    engine, handle = engine_for("spark"), opened("spark", adult)
    assert engine.aggregate(handle, FILTERED_ADULT[0], selection_key=KEY) == {"count": float((frame["age"] < 20).sum())}
    first = frame.sort("fnlwgt").head(5)
    assert engine.aggregate(handle, FILTERED_ADULT[5], selection_key=KEY) == {"count": 5.0, "sum": float(first["age"].sum())}
    keyed = engine.aggregate(handle, FILTERED_ADULT[4], selection_key=KEY)["count"]
    assert isinstance(keyed, dict) and set(keyed) == {9, 10}  # declared keys come back as declared
    assert keyed[9] == float(frame.filter((pl.col("income") == ">50K") & (pl.col("education_num") == 9)).height)


def test_random_small_tables_agree_for_every_derivation(spark: Any) -> None:
    """The cases of the Polars derivation check (tests/query/test_filters.py), through Spark's exact
    aggregates: nulls, NaN, undeclared keys, filters and position windows with ties agree."""
    import random

    from dpwitness.query.queries import derivation_cases

    rng = random.Random(3)
    rows = [
        {
            "x": rng.choice([None, math.nan, 0.0, 1.0, 2.0, 3.5, 5.0, 9.0, -4.0]),
            "g": rng.choice(["a", "b", "c", None]),
            "pid": rng.choice([1, 2, 3, None]),
            "o": rng.randrange(6),
        }
        for _ in range(40)
    ]
    frame = pl.DataFrame(rows, schema={"x": pl.Float64, "g": pl.String, "pid": pl.Int64, "o": pl.Int64})
    polars_handle = engine_for("polars").open(frame)
    spark_handle = engine_for("spark").open(frame)
    cases = [q for q in derivation_cases() if q.privacy_unit is None]  # with a unit the picks differ by design
    for query in rng.sample(cases, 24):
        from_polars = engine_for("polars").aggregate(polars_handle, query, selection_key=KEY)
        from_spark = engine_for("spark").aggregate(spark_handle, query, selection_key=KEY)
        assert from_spark.keys() == from_polars.keys(), query.label
        for name, value in from_polars.items():
            assert from_spark[name] == pytest.approx(value, rel=1e-12), query.label


def test_replace_one_delta_on_spark(spark: Any, adult: Path, adult_schema: Path) -> None:
    session = Session(adult, epsilon=2.0, engine="spark", neighbours="replace-one", seed=9, schema=adult_schema)
    on_spark = session.sum("age", (50, 100), epsilon=1.0)
    assert on_spark.sensitivity == 100  # [50, 100] ∪ {0}: not U − L = 50
    assert session.count(epsilon=1.0, where="age >= 50").sensitivity == 1  # not 0: a record can leave the filter
    on_polars = Session(adult, epsilon=2.0, neighbours="replace-one", seed=9, schema=adult_schema).sum(
        "age", (50, 100), epsilon=1.0
    )
    assert on_spark.value == on_polars.value


def test_a_late_cell_on_spark_neither_fails_nor_is_quoted(spark: Any, tmp_path: Path) -> None:
    path = tmp_path / "late.csv"
    lines = ["id,income"] + [f"{i},{1000 + i % 7}" for i in range(12_000)] + ["12000,73512.25", "12001,not a number"]
    path.write_text("\n".join(lines) + "\n")
    query = Query(statistic="sum", column="income", bounds=(0, 1e5), epsilon=1.0, where="income > 1003")
    from_polars, from_spark = both(path, query)
    assert from_spark == from_polars
    assert from_spark["count"] == sum(1 for i in range(12_000) if 1000 + i % 7 > 1003) + 1
    session = Session(path, epsilon=1.0, engine="spark", dtypes={"income": "integer"})
    assert session.schema().columns["income"].value == "integer"
    with pytest.raises(dpwitness.ParameterError) as caught:
        session.count(epsilon=1.0, where="income == 'x'")
    assert caught.value.parameter == "where" and "73512" not in str(caught.value)


# --- the benchmark harness, at a tiny size (so that bench/bench_statistics.py cannot rot) -------


def test_benchmark_harness_runs_at_a_tiny_size(spark: Any, tmp_path: Path) -> None:
    import importlib.util
    import sys

    bench = Path(__file__).resolve().parents[2] / "bench"
    sys.path.insert(0, str(bench))
    try:
        spec = importlib.util.spec_from_file_location("bench_statistics", bench / "bench_statistics.py")
        assert spec is not None and spec.loader is not None
        module = importlib.util.module_from_spec(spec)
        spec.loader.exec_module(module)
        from gen_parquet import generate
    finally:
        sys.path.remove(str(bench))
    path = str(generate(4000, directory=tmp_path, quiet=True))
    assert pl.read_parquet(path).height == 4000
    results = []
    for stat in module.STATS:
        results.append({**module.worker_polars(path, stat, 1, None), "system": "polars", "stat": stat})
        results.append({**module.worker_dpwitness(path, stat, 1, 5), "system": "dpwitness", "stat": stat, "bound": 5})
    spark_dp = module.worker_dpwitness(path, "sum", 1, None, engine="spark")
    assert spark_dp["value"] == pytest.approx(results[2]["value"], abs=5000)  # a noisy sum of ~4000 ages, Δ = 100
    filtered_plain = module.worker_spark_plain(path, "filtered", 1)["value"]
    filtered_dp = module.worker_dpwitness(path, "filtered", 1, None, engine="spark")["value"]
    assert filtered_plain == pytest.approx(results[-2]["value"]) and 30 <= filtered_plain <= 100  # same filter, same mean
    assert filtered_dp == pytest.approx(filtered_plain, abs=10)  # a noisy mean of ~1000 ages
    for row in results:
        row["median_s"] = row["times_s"][0]
        assert row["median_s"] > 0
    lines, summary = module.polars_table(results, 5)
    assert len(lines) == 4 + len(module.STATS) and len(summary) == len(module.STATS)


# --- CSV records are lines on both engines; column names are names, dots and all -----------------


@pytest.mark.parametrize("where", ["top", "middle", "end"])
def test_both_engines_read_an_unclosed_quote_as_one_record(spark: Any, tmp_path: Path, where: str) -> None:
    """``41,"target`` is one record on both engines (Spark reads line by line; Polars no longer
    lets the quote swallow the following lines), so their exact aggregates agree."""
    rows = [f"{20 + i % 50},n{i}" for i in range(1000)]
    rows.insert({"top": 0, "middle": 500, "end": 1000}[where], '41,"target')
    path = tmp_path / f"unclosed-{where}.csv"
    path.write_text("age,name\n" + "\n".join(rows) + "\n")
    queries = [
        Query(statistic="count", epsilon=1.0),
        Query(statistic="sum", column="age", bounds=(0, 100), epsilon=1.0),
        Query(statistic="count", epsilon=1.0, where="age >= 41"),
        Query(statistic="count", epsilon=1.0, by=("name",), keys=("n1", "n999", "n500")),
    ]
    for query in queries:
        polars_result, spark_result = both(path, query)
        assert polars_result == spark_result, query
    assert both(path, queries[0])[0] == {"count": 1001.0}


def test_both_engines_agree_on_well_formed_quoted_cells(spark: Any, tmp_path: Path) -> None:
    path = tmp_path / "quoted.csv"
    path.write_text('"age","name"\n"41","Jane"\n42,plain\n"43","Jane"\n44,\n')
    for query in [
        Query(statistic="sum", column="age", bounds=(0, 100), epsilon=1.0),
        Query(statistic="count", epsilon=1.0, by=("name",), keys=("Jane", "plain")),
        Query(statistic="count", column="name", epsilon=1.0),
    ]:
        polars_result, spark_result = both(path, query)
        assert polars_result == spark_result, query
    assert both(path, Query(statistic="count", epsilon=1.0, by=("name",), keys=("Jane",)))[0] == {"count": {"Jane": 2.0}}


DOTTED = ["person.age", "home.city", "user.id"]


@pytest.fixture(scope="module")
def dotted_sources(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Path]:
    """The same table as Parquet (typed) and CSV (untyped), every column name holding a dot."""
    folder = tmp_path_factory.mktemp("dotted")
    rng = np.random.default_rng(11)
    frame = pl.DataFrame(
        {
            "person.age": rng.integers(18, 90, 400),
            "home.city": rng.choice(["a", "b", "c"], 400),
            "user.id": rng.integers(0, 80, 400),
        }
    )
    frame.write_parquet(folder / "dotted.parquet")
    frame.write_csv(folder / "dotted.csv")
    return {"parquet": folder / "dotted.parquet", "csv": folder / "dotted.csv"}


DOTTED_QUERIES = [
    Query(statistic="count", epsilon=1.0),
    Query(statistic="sum", column="person.age", bounds=(20, 60), epsilon=1.0),
    Query(statistic="mean", column="person.age", bounds=(0, 100), epsilon=1.0, by=("home.city",), keys=("a", "b", "c")),
    Query(statistic="count", epsilon=1.0, where="`person.age` >= 40 and `home.city` != 'b'"),
    Query(statistic="count", epsilon=1.0, privacy_unit="user.id", max_contributions=2),
    Query(statistic="sum", column="person.age", bounds=(0, 100), epsilon=1.0, privacy_unit="user.id", max_contributions=100),
    Query(
        statistic="count",
        epsilon=1.0,
        by=("home.city",),
        keys=("a", "b", "c"),
        privacy_unit="user.id",
        max_contributions=3,
        max_groups=3,
    ),
    Query(statistic="quantile", column="person.age", bounds=(0, 100), quantiles=(0.5,), bins=50, epsilon=1.0),
]


@pytest.mark.parametrize("kind", ["parquet", "csv"])
@pytest.mark.parametrize("query", DOTTED_QUERIES, ids=lambda q: f"{q.statistic}-{q.privacy_unit}-{bool(q.where)}")
def test_a_dotted_column_name_is_a_name_on_both_engines(
    spark: Any, dotted_sources: dict[str, Path], kind: str, query: Query
) -> None:
    """Spark used to read ``person.age`` as field ``age`` of a struct ``person`` (an analysis
    error, so refused before the spend); both engines now compute it, and agree."""
    polars_result, spark_result = both(dotted_sources[kind], query)
    assert polars_result == spark_result
    assert polars_result  # a real answer, not an empty one


def test_a_dotted_column_takes_a_declared_type_on_spark(spark: Any, dotted_sources: dict[str, Path]) -> None:
    engine = engine_for("spark")
    table = engine.open(dotted_sources["csv"], dtypes={"person.age": "integer"})
    assert engine.schema(table).columns["person.age"].value == "integer"
    session = Session(table, epsilon=1.0, engine="spark", seed=3)
    assert session.sum("person.age", (0, 100), epsilon=1.0).value == pytest.approx(
        float(pl.read_csv(dotted_sources["csv"])["person.age"].clip(0, 100).sum()), abs=2000
    )
