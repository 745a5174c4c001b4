"""The Session API on the Adult extract and on generated tables: values, intervals, bounding,
budget, seeding and bad input (clear error, nothing spent, nothing read)."""

from __future__ import annotations

import csv
import math
import sqlite3
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd
import polars as pl
import pytest

import dpwitness
from dpwitness import BudgetExceeded, ParameterError
from dpwitness.engines import engine_for
from dpwitness.engines.polars import ENGINE as POLARS
from dpwitness.query.queries import Query
from dpwitness.session import CompositeRelease, Session

KEY = (11, 22, 33, 44)


@pytest.fixture(scope="module")
def adult_frame(adult: Path) -> pl.DataFrame:
    return pl.read_csv(adult)


def rows_in(ledger: Path) -> int:
    if not ledger.exists():
        return 0
    with sqlite3.connect(ledger) as connection:
        (n,) = connection.execute("SELECT COUNT(*) FROM spends").fetchone()
    return int(n)


# --- the Adult extract ------------------------------------------------------------------------


def test_adult_count_mean_histogram_grouped_mean(adult: Path, adult_schema: Path, adult_frame: pl.DataFrame) -> None:
    session = Session(adult, epsilon=4.0, seed=2024, max_rows=100_000, delta_budget=1e-5, schema=adult_schema)
    count = session.count(epsilon=1.0)
    assert abs(count.value - adult_frame.height) < 30  # b = 1: |noise| > 30 has probability e^-30
    assert count.sensitivity == 1 and count.scale == 1 and count.epsilon == 1
    assert count.interval[0] < adult_frame.height < count.interval[1]  # type: ignore[index, operator]

    mean = session.mean("age", (0, 100), epsilon=1.0)
    truth = adult_frame["age"].clip(0, 100).mean()
    assert isinstance(mean, CompositeRelease) and [p.sensitivity for p in mean.parts] == [1.0, 50.0]
    low, high = mean.interval  # type: ignore[misc]
    assert low <= truth <= high and high - low < 0.2
    assert "noisy centred sum / noisy count" in mean.notice and "clamped to [0, 100]" in mean.notice

    education = session.histogram("education", epsilon=1.0)
    exact = dict(adult_frame.group_by("education").len().iter_rows())
    assert isinstance(education.value, dict)
    assert set(education.value) <= set(exact) and len(education.value) >= len(exact) - 1  # all 16 are well above τ ≈ 14
    for key, value in education.value.items():
        assert abs(value - exact[key]) < 30
    assert education.delta == pytest.approx(1e-6) and "partition selection" in education.notice

    hours = session.mean("hours_per_week", (0, 100), epsilon=1.0, by="sex")
    truth_by_sex = dict(adult_frame.group_by("sex").agg(pl.col("hours_per_week").mean()).iter_rows())
    assert isinstance(hours.value, dict) and set(hours.value) == {"Male", "Female"}
    for sex, value in hours.value.items():
        low, high = hours.interval[sex]  # type: ignore[index]
        assert low <= truth_by_sex[sex] <= high and abs(value - truth_by_sex[sex]) < 0.5
    assert session.spent.epsilon == pytest.approx(4.0) and session.remaining.epsilon == pytest.approx(0.0)
    assert session.history[0].label == "count()"
    with pytest.raises(BudgetExceeded):
        session.count(epsilon=0.01)


def test_adult_replace_one_mean_uses_a_noisy_count(adult: Path, adult_schema: Path, adult_frame: pl.DataFrame) -> None:
    session = Session(adult, epsilon=1.5, neighbours="replace-one", seed=1, schema=adult_schema)
    mean = session.mean("age", (0, 100), epsilon=1.0)
    n = adult_frame.height
    assert isinstance(mean, CompositeRelease) and [p.sensitivity for p in mean.parts] == [1, 100]
    assert all(p.witness().ok for p in mean.parts)
    low, high = mean.interval  # type: ignore[misc]
    assert low <= adult_frame["age"].mean() <= high  # type: ignore[operator]
    count = session.count(epsilon=0.5)  # the number of rows: Δ = 0 under replace-one, exact and free
    assert count.value == n and count.epsilon == 0 and session.spent.epsilon == pytest.approx(1.0)
    non_null = session.count(column="age", epsilon=0.5)  # non-null values: a null may become a value
    assert non_null.sensitivity == 1 and non_null.epsilon == 0.5 and session.spent.epsilon == pytest.approx(1.5)


def test_replace_one_never_reveals_how_many_values_are_null() -> None:
    """D and D′ are replace-one neighbours (one record's x changes from null to 2). Nothing a
    release or a preview states outside its noisy value may tell them apart; the old "public n"
    path released the non-null count exactly (in Δ = (U − L)/n, in its scale and in its notes,
    and for free in ``preview``), and ``count(column=...)`` had Δ = 0: the exact value, free."""
    tables = [pl.DataFrame({"x": [1.0, None, 3.0, 4.0]}), pl.DataFrame({"x": [1.0, 2.0, 3.0, 4.0]})]
    seen = []
    for frame in tables:
        session = Session(frame, epsilon=10, neighbours="replace-one")
        mean = session.mean("x", (0, 10), epsilon=1)
        variance = session.variance("x", (0, 10), epsilon=1)
        count = session.count(column="x", epsilon=1)
        preview = session.preview("mean", "x", bounds=(0, 10), epsilon=1).to_dict()
        assert count.epsilon > 0 and session.spent.epsilon == pytest.approx(3)
        seen.append(
            [
                (r.sensitivity, r.scale if math.isfinite(r.scale) else None, r.notes, [p.scale for p in getattr(r, "parts", ())])
                for r in (mean, variance, count)
            ]
            + [preview]
        )
    assert seen[0] == seen[1]


def test_declared_keys_release_every_key_and_nothing_else(adult: Path) -> None:
    session = Session(adult, epsilon=1.0, seed=5)
    release = session.count(by="sex", keys=["Female", "Male", "Unknown"], epsilon=1.0)
    assert list(release.value) == ["Female", "Male", "Unknown"]  # type: ignore[arg-type]
    assert abs(release.value["Unknown"]) < 30  # type: ignore[index]
    assert release.delta == 0 and "declared" in release.notice


# --- inputs -----------------------------------------------------------------------------------


def test_every_source_kind_gives_the_same_exact_aggregates(tmp_path: Path) -> None:
    frame = pl.DataFrame({"x": [1.0, 2.5, None, 7.0, float("nan"), 120.0], "g": ["a", "b", "a", None, "b", "a"]})
    frame.write_parquet(tmp_path / "t.parquet")
    frame.write_csv(tmp_path / "t.csv")
    query = Query(statistic="sum", column="x", bounds=(0, 100), by=("g",), epsilon=1)
    sources: list[Any] = [frame, frame.lazy(), frame.to_pandas(), tmp_path / "t.parquet", str(tmp_path / "t.csv")]
    results = [POLARS.aggregate(POLARS.open(s), query, selection_key=KEY) for s in sources]
    # nulls and NaN dropped, 120 clamped to 100, the null key dropped; declared keys absent → thresholded
    expected = {"count": {"a": 2.0, "b": 1.0}, "sum": {"a": 101.0, "b": 2.5}}
    assert all(r == expected for r in results)


def test_nulls_are_dropped_and_counted_out() -> None:
    frame = pl.DataFrame({"x": [1, None, 3, None]})
    exact = POLARS.aggregate(POLARS.open(frame), Query(statistic="mean", column="x", bounds=(0, 4), epsilon=1), selection_key=KEY)
    assert exact == {"count": 2.0, "centred_sum": (1 - 2) + (3 - 2)}
    assert POLARS.aggregate(POLARS.open(frame), Query(statistic="count", epsilon=1), selection_key=KEY) == {"count": 4.0}


def test_constructing_a_session_reads_nothing(tmp_path: Path) -> None:
    path = tmp_path / "later.csv"
    session = Session(path, epsilon=1.0)  # the file does not exist yet: nothing was opened
    path.write_text("x\n1\n2\n")
    assert session.count(epsilon=0.5).epsilon == 0.5


# --- contribution bounding ---------------------------------------------------------------------


def people(heavy_rows: int = 1000, light: int = 200, seed: int = 0) -> pl.DataFrame:
    """Person 0 has ``heavy_rows`` rows of value 100 in 10 groups; persons 1..light have one row of value 0."""
    rng = np.random.default_rng(seed)
    pid = np.concatenate([np.zeros(heavy_rows, dtype=np.int64), np.arange(1, light + 1)])
    value = np.concatenate([np.full(heavy_rows, 100.0), np.zeros(light)])
    group = np.concatenate([rng.integers(0, 10, heavy_rows), rng.integers(0, 10, light)]).astype(str)
    return pl.DataFrame({"pid": pid, "value": value, "group": group})


@pytest.mark.parametrize("k", [1, 3, 10])
def test_a_person_with_1000_rows_contributes_at_most_k(k: int) -> None:
    frame = people()
    handle = POLARS.open(frame)
    ungrouped = Query(statistic="sum", column="value", bounds=(0, 100), epsilon=1, privacy_unit="pid", max_contributions=k)
    assert POLARS.aggregate(handle, ungrouped, selection_key=KEY) == {"count": 200.0 + k, "sum": 100.0 * k}
    counted = Query(statistic="count", epsilon=1, privacy_unit="pid", max_contributions=k)
    assert POLARS.aggregate(handle, counted, selection_key=KEY) == {"count": 200.0 + k}
    grouped = Query(statistic="histogram", column="group", epsilon=1, privacy_unit="pid", max_contributions=k)
    counts = POLARS.aggregate(handle, grouped, selection_key=KEY)["count"]
    assert isinstance(counts, dict) and sum(counts.values()) == 200 + k  # ≤ k rows, so ≤ k groups, for person 0
    assert ungrouped.parts[0].sensitivity == 100.0 * k and grouped.parts[0].sensitivity == k  # Δ scales with k


def test_max_groups_bounds_the_groups_a_person_touches() -> None:
    frame = people(light=0)
    query = Query(statistic="histogram", column="group", epsilon=1, privacy_unit="pid", max_contributions=4, max_groups=2)
    counts = POLARS.aggregate(POLARS.open(frame), query, selection_key=KEY)["count"]
    assert isinstance(counts, dict) and len(counts) == 2 and set(counts.values()) == {4.0}


def test_without_bounding_one_person_would_dominate() -> None:
    """The check above is not vacuous: unbounded, person 0 moves the sum by 100 000."""
    unbounded = POLARS.aggregate(
        POLARS.open(people()), Query(statistic="sum", column="value", bounds=(0, 100), epsilon=1), selection_key=KEY
    )
    assert unbounded == {"count": 1200.0, "sum": 100_000.0}


def test_selection_is_random_and_unbiased() -> None:
    """Which k of a person's rows are kept changes with the key, and every row is kept equally often."""
    frame = pl.DataFrame({"pid": np.zeros(10, dtype=np.int64), "value": np.arange(10.0)})
    query = Query(statistic="sum", column="value", bounds=(0, 9), epsilon=1, privacy_unit="pid", max_contributions=1)
    handle = POLARS.open(frame)
    rng = np.random.default_rng(3)
    picks = [
        POLARS.aggregate(handle, query, selection_key=tuple(int(w) for w in rng.integers(0, 2**63, 4)))["sum"]
        for _ in range(1000)
    ]  # type: ignore[misc]
    frequencies = np.bincount(np.array(picks, dtype=int), minlength=10) / len(picks)
    assert np.all(np.abs(frequencies - 0.1) < 0.05)  # 5 σ for 1000 draws; a fixed pick would give 1.0 once


def test_bounding_of_a_session_uses_the_session_unit() -> None:
    frame = people()
    session = Session(frame, epsilon=2, privacy_unit="pid", max_contributions=2, seed=9)
    release = session.sum("value", (0, 100), epsilon=1)
    assert release.sensitivity == 200 and abs(release.value - 200) < 200 * 30  # type: ignore[operator]
    assert "each pid keeps at most 2 row(s)" in release.notice


# --- budget, preview, seeding ------------------------------------------------------------------


def test_budget_exceeded_is_raised_before_any_data_is_read(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    reads: list[str] = []
    original = type(POLARS).aggregate

    def spying(self: Any, handle: Any, query: Query, *, selection_key: Any) -> Any:
        reads.append(query.label)
        return original(self, handle, query, selection_key=selection_key)

    monkeypatch.setattr(type(POLARS), "aggregate", spying)
    ledger = tmp_path / "b.db"
    session = Session(pl.DataFrame({"x": [1, 2, 3]}), epsilon=1.0, ledger=ledger, account="people")
    session.count(epsilon=0.75)
    assert reads == ["count()"] and rows_in(ledger) == 1
    with pytest.raises(BudgetExceeded, match="nothing was released"):
        session.sum("x", (0, 5), epsilon=0.5)
    assert reads == ["count()"] and rows_in(ledger) == 1 and session.spent.epsilon == pytest.approx(0.75)


def test_preview_spends_nothing_and_matches_the_release(tmp_path: Path) -> None:
    ledger = tmp_path / "p.db"
    frame = pl.DataFrame({"x": np.arange(100.0)})
    session = Session(frame, epsilon=1.0, ledger=ledger, account="people", seed=4, max_rows=100_000, delta_budget=1e-4)
    preview = session.preview("sum", "x", bounds=(0, 200), epsilon=0.5)
    assert session.spent.epsilon == 0 and rows_in(ledger) == 0
    assert preview.scale == 400 and preview.interval == pytest.approx((-400 * math.log(20), 400 * math.log(20)))
    release = session.sum("x", (0, 200), epsilon=0.5)
    assert release.scale == preview.scale and release.half_width == pytest.approx(preview.interval[1])  # type: ignore[index]
    histogram = session.preview("histogram", "x", epsilon=0.5)
    assert histogram.threshold is not None and histogram.delta == pytest.approx(1e-6)
    assert "interval" in session.preview("mean", "x", bounds=(0, 1), epsilon=0.1).to_dict()


def test_seeded_sessions_reproduce_and_never_share_noise(tmp_path: Path) -> None:
    frame = pl.DataFrame({"x": np.arange(1000.0)})
    first, second = (Session(frame, epsilon=10, seed=42) for _ in range(2))
    a = [first.count(epsilon=1).value for _ in range(3)]
    b = [second.count(epsilon=1).value for _ in range(3)]
    assert a == b and len(set(a)) == 3  # reproducible; each query its own stream
    other = Session(frame, epsilon=10, seed=43).count(epsilon=1).value
    assert other != a[0]
    release = first.count(epsilon=1)
    assert release.seeded and release.seed == 42 and "NOT for production" in release.notice
    secure = Session(frame, epsilon=1).count(epsilon=1)
    assert not secure.seeded and "secure" in secure.randomness
    # a reopened ledger continues the stream numbering: no noise reused across sessions
    ledger = tmp_path / "s.db"
    before = Session(frame, epsilon=10, seed=42, ledger=ledger, account="people").count(epsilon=1).value
    after = Session(frame, epsilon=10, seed=42, ledger=ledger, account="people").count(epsilon=1).value
    assert before == a[0] and after == a[1]


def test_seeded_sessions_never_share_noise_between_different_queries() -> None:
    """Two sessions with one seed (or two spends racing on one ledger) see the same position in
    the history. Different queries there must still get different noise: with shared noise,
    count() − count(column="x") would be the exact number of nulls in x."""
    frame = pl.DataFrame({"x": [1.0, None, None, 4.0, None] * 20})
    rows = Session(frame, epsilon=10, seed=7).count(epsilon=1)
    non_null = Session(frame, epsilon=10, seed=7).count(column="x", epsilon=1)
    assert rows.value - non_null.value != 60  # type: ignore[operator]
    again = Session(frame, epsilon=10, seed=7).count(column="x", epsilon=1)
    assert again.value == non_null.value  # still reproducible


@pytest.mark.parametrize(
    ("rows", "epsilon", "steps_log2"),
    [(5_000_000, 1e3, 60), ((1 << 25) + (1 << 22), 1e2, 60), (10_000_000, 1e3, 61)],
)
def test_a_large_aggregate_is_released_near_the_truth_never_clipped(rows: int, epsilon: float, steps_log2: int) -> None:
    """At a large ε the grid is fine: 2^60 steps is ≈ 4.2M rows at ε = 10^3, ≈ 33.6M at 10^2.
    Counts and sums past it used to be clipped there (5M rows came out as 4,194,304 ± 0.003);
    now nothing is clipped, and past 2^61 steps the sampler adds the noise in Python integers
    (noise.exact_add_noise_on_grid), so they come out right, with the interval b·ln 20 of the
    noise. Lazy frames: nothing is materialised."""
    frame = pl.LazyFrame().select(pl.repeat(1.0, rows).alias("x"), pl.repeat("a", rows).alias("g"))
    session = Session(frame, epsilon=1e4, seed=11)
    count = session.count(epsilon=epsilon)
    total = session.sum("x", (0, 1), epsilon=epsilon)
    grouped = session.sum("x", (0, 1), epsilon=epsilon, by="g", keys=["a", "b"])
    noise = count.mechanism.noise  # type: ignore[union-attr]
    assert rows >= math.ldexp(1.0, steps_log2 + noise.granularity_log2)  # past the old clip (60), the int64 path (61)
    scale = 1.0 / epsilon
    for released in (count, total, grouped):
        value = released.value["a"] if isinstance(released.value, dict) else released.value  # type: ignore[index]
        assert abs(value - rows) < 12 * scale  # P(|Laplace| > 12b) = e^-12: a clipped value is off by > 10^5
        low, high = released.interval["a"] if isinstance(released.interval, dict) else released.interval  # type: ignore[index,misc]
        assert (high - low) / 2 == pytest.approx(scale * math.log(20), rel=1e-6)
        assert low < value < high
    assert grouped.value["b"] == pytest.approx(0.0, abs=12 * scale)  # type: ignore[index]


@pytest.mark.parametrize("epsilon", [0.1, 0.7, 1.0, 3.0])
def test_partition_threshold_holds_delta_for_the_sampler_actually_used(epsilon: float) -> None:
    """A key only one row holds is released with the *sampler's* tail probability, a two-sided
    geometric on the grid whose scale is calibrated slightly above Δ/ε: that, not the ideal
    Laplace tail, must stay ≤ δ."""
    session = Session(pl.DataFrame({"g": ["a"]}), epsilon=10, max_rows=100_000, delta_budget=1e-5)
    query = session.query("histogram", "g", epsilon=epsilon)
    plan = session._plan(query)
    noise = plan.mechanisms[0].noise
    assert noise is not None and plan.threshold is not None
    p = math.exp(-noise.granularity / noise.scale)
    steps = math.ceil((plan.threshold - 1) / noise.granularity)  # released iff 1 + γ·X ≥ τ
    assert p**steps / (1 + p) <= query.delta and plan.delta == query.delta


def test_composite_interval_covers_the_truth() -> None:
    """The Bonferroni interval of a noisy-ratio mean holds the exact mean ≥ 95% of the time."""
    frame = pl.DataFrame({"x": np.linspace(0, 10, 30)})
    session = Session(frame, epsilon=1e9, seed=11)
    covered = 0
    trials = 300
    for _ in range(trials):
        release = session.mean("x", (0, 10), epsilon=0.5)
        low, high = release.interval  # type: ignore[misc]
        covered += low <= 5.0 <= high
    assert covered / trials >= 0.95
    assert release.to_dict()["scale"] is None and len(release.to_dict()["parts"]) == 2


def test_variance_from_noisy_moments() -> None:
    values = np.random.default_rng(1).uniform(0, 10, 50_000)
    session = Session(pl.DataFrame({"x": values}), epsilon=2, seed=2)
    release = session.variance("x", (0, 10), epsilon=1)
    low, high = release.interval  # type: ignore[misc]
    assert low <= values.var() <= high and abs(release.value - values.var()) < 0.2  # type: ignore[operator]
    replace_one = Session(pl.DataFrame({"x": values}), epsilon=1, neighbours="replace-one", seed=2).variance(
        "x", (0, 10), epsilon=1
    )
    assert isinstance(replace_one, CompositeRelease) and [p.sensitivity for p in replace_one.parts] == [1, 10, 25]
    assert abs(replace_one.value - values.var()) < 0.2  # type: ignore[operator]


# --- bad input: a clear error, nothing spent, the ledger unchanged ------------------------------


@pytest.fixture
def small_csv(tmp_path: Path) -> Path:
    path = tmp_path / "small.csv"
    with path.open("w", newline="") as handle:
        writer = csv.writer(handle)
        writer.writerow(["age", "name", "pid"])
        writer.writerows([[30, "a", 1], [40, "b", 1], [50, "c", 2]])
    return path


BAD = [
    (
        "missing file",
        lambda p: Session(p.parent / "absent.csv", epsilon=1, ledger=p.parent / "l.db").count(epsilon=0.1),
        "source",
    ),
    ("missing column", lambda p: Session(p, epsilon=1, ledger=p.parent / "l.db").mean("weight", (0, 1), epsilon=0.1), "column"),
    (
        "column declared as text",
        lambda p: Session(p, epsilon=1, ledger=p.parent / "l.db", dtypes={"name": "string"}).sum("name", (0, 1), epsilon=0.1),
        "column",
    ),
    ("L ≥ U", lambda p: Session(p, epsilon=1, ledger=p.parent / "l.db").mean("age", (50, 50), epsilon=0.1), "bounds"),
    ("NaN bounds", lambda p: Session(p, epsilon=1, ledger=p.parent / "l.db").sum("age", (0, math.nan), epsilon=0.1), "bounds"),
    ("ε = 0", lambda p: Session(p, epsilon=1, ledger=p.parent / "l.db").count(epsilon=0), "epsilon"),
    ("ε < 0", lambda p: Session(p, epsilon=1, ledger=p.parent / "l.db").count(epsilon=-1), "epsilon"),
    ("session ε ≤ 0", lambda p: Session(p, epsilon=0, ledger=p.parent / "l.db"), "epsilon"),
    ("unknown engine", lambda p: Session(p, epsilon=1, engine="duckdb", ledger=p.parent / "l.db"), "engine"),
    ("unknown relation", lambda p: Session(p, epsilon=1, neighbours="swap-two", ledger=p.parent / "l.db"), "neighbours"),
    (
        "missing unit",
        lambda p: Session(p, epsilon=1, privacy_unit="person", max_contributions=2, ledger=p.parent / "l.db").count(epsilon=0.1),
        "privacy_unit",
    ),
    ("k without unit", lambda p: Session(p, epsilon=1, max_contributions=2, ledger=p.parent / "l.db"), "privacy_unit"),
    (
        "key of the wrong kind",
        lambda p: Session(p, epsilon=1, ledger=p.parent / "l.db").histogram("age", [30, "x"], epsilon=0.1),
        "keys",
    ),
    ("unknown by", lambda p: Session(p, epsilon=1, ledger=p.parent / "l.db").count(by="town", epsilon=0.1), "by"),
    (
        "bad file type",
        lambda p: Session(p.with_suffix(".json"), epsilon=1, ledger=p.parent / "l.db").count(epsilon=0.1),
        "source",
    ),
]


@pytest.mark.parametrize(("name", "call", "parameter"), BAD, ids=[b[0] for b in BAD])
def test_bad_input_is_a_clear_error_and_spends_nothing(small_csv: Path, name: str, call: Any, parameter: str) -> None:
    ledger = small_csv.parent / "l.db"
    Session(small_csv, epsilon=1, ledger=ledger).count(epsilon=0.1)  # one honest spend first
    small_csv.with_suffix(".json").write_text("{}")
    with pytest.raises(ParameterError) as caught:
        call(small_csv)
    assert caught.value.parameter == parameter, name
    assert rows_in(ledger) == 1


def test_an_empty_table_gets_a_noisy_answer_at_the_same_cost(tmp_path: Path) -> None:
    """Emptiness is not public (the empty table and a one-row table are add/remove neighbours):
    an empty table is answered, and charged, like any other."""
    path = tmp_path / "empty.csv"
    path.write_text("age,name\n")
    ledger = tmp_path / "e.db"
    for source in (path, pl.DataFrame({"age": []}, schema={"age": pl.Int64})):
        session = Session(source, epsilon=2, ledger=ledger, account=str(id(source)), seed=3, dtypes={"age": "integer"})
        count = session.count(epsilon=0.5)
        mean = session.mean("age", (0, 100), epsilon=0.5)
        assert session.spent.epsilon == pytest.approx(1.0)
        assert count.sensitivity == 1 and isinstance(count.value, float)
        assert 0 <= float(mean.value) <= 100  # type: ignore[arg-type]
    assert rows_in(ledger) == 4


def test_pandas_source_and_engine_registry() -> None:
    frame = pd.DataFrame({"x": [1.0, 2.0, 3.0]})
    assert Session(frame, epsilon=1, seed=0).sum("x", (0, 3), epsilon=1).query == "sum(x) in [0, 3]"
    assert engine_for("polars") is POLARS
    assert dpwitness.Session is Session


@pytest.mark.parametrize("neighbours", ["add-remove", "replace-one"])
def test_keyed_releases_pass_their_own_witness(adult: Path, adult_schema: Path, neighbours: str) -> None:
    session = Session(adult, epsilon=10.0, neighbours=neighbours, max_rows=50_000, delta_budget=1e-5, schema=adult_schema)
    for release in (
        session.histogram("education", epsilon=1.0),
        session.count(epsilon=1.0, by="sex", keys=["Female", "Male"]),
        session.sum("age", (0, 100), epsilon=1.0, by="sex", keys=["Female", "Male"]),
    ):
        report = release.witness()
        assert report.ok, (release.query, report.verdict)


def test_a_composite_release_is_witnessed_through_its_parts(adult: Path, adult_schema: Path) -> None:
    from dataclasses import replace

    from dpwitness.attacks.tamper import inverted_laplace

    release = Session(adult, epsilon=5.0, schema=adult_schema).mean("age", (0, 100), epsilon=1.0)
    assert isinstance(release, CompositeRelease)
    report = release.witness()
    assert report.ok and "2 parts" in report.verdict
    assert report.claimed_epsilon == pytest.approx(1.0) and report.worst_log_ratio <= 1.0
    # one mis-calibrated part turns the whole statistic red
    count, total = release.parts
    bad = inverted_laplace(sensitivity=count.sensitivity * 4, epsilon=count.epsilon).release(0.0)
    tampered = replace(release, parts=(bad, total))
    assert not tampered.witness().ok and "VIOLATED" in tampered.witness().verdict


def test_run_async_spends_before_reading_and_releases_as_run(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    import asyncio

    reads: list[int] = []
    original = type(POLARS).aggregate
    ledger = tmp_path / "b.db"

    def spying(self: Any, handle: Any, query: Query, *, selection_key: Any) -> Any:
        reads.append(rows_in(ledger))  # the spend is committed before any read
        return original(self, handle, query, selection_key=selection_key)

    monkeypatch.setattr(type(POLARS), "aggregate", spying)
    session = Session(pl.DataFrame({"x": [1, 2, 3]}), epsilon=1.0, ledger=ledger, account="people")
    release = asyncio.run(session.run_async(session.query("sum", "x", epsilon=0.75, bounds=(0, 5))))
    assert reads == [1] and release.epsilon == pytest.approx(0.75) and release.sensitivity == 5
    with pytest.raises(BudgetExceeded, match="nothing was released"):
        asyncio.run(session.run_async(session.query("count", epsilon=0.5)))
    assert reads == [1] and rows_in(ledger) == 1
    seeded = Session(pl.DataFrame({"x": [1, 2, 3]}), epsilon=1.0, seed=7)
    with pytest.raises(ParameterError, match="seed"):
        asyncio.run(seeded.run_async(seeded.query("count", epsilon=0.5)))


def test_an_unseeded_run_reads_no_spend_history(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    """The history's length keys a seeded session's streams only: unseeded, the spend reads nothing back."""
    from dpwitness.privacy.budget import Ledger

    reads: list[str] = []
    original = Ledger.history

    def counting(self: Ledger, account: str) -> Any:
        reads.append(account)
        return original(self, account)

    monkeypatch.setattr(Ledger, "history", counting)
    session = Session(pl.DataFrame({"x": [1, 2, 3]}), epsilon=1.0, ledger=tmp_path / "b.db", account="people")
    session.count(epsilon=0.25)
    assert reads == [] and rows_in(tmp_path / "b.db") == 1
    seeded = Session(pl.DataFrame({"x": [1, 2, 3]}), epsilon=1.0, ledger=tmp_path / "s.db", account="people", seed=3)
    seeded.count(epsilon=0.25)
    assert reads == ["people"]


def test_a_query_asked_again_reuses_its_plan_and_still_pays_each_time(tmp_path: Path) -> None:
    """A service asks the same shapes over and over: the session keeps each resolved query and
    plan (keyed by the request, the total and the table), never the spend or the noise."""
    from dpwitness.query.resolve import Request

    frame = pl.DataFrame({"g": ["a", "b", "a"], "x": [1.0, 2.0, 3.0]})
    session = Session(frame, epsilon=1.0, seed=7)
    request = Request("sum", "x", epsilon=0.4, bounds=(0.0, 5.0))
    query = session.resolve(request)
    assert session.resolve(Request("sum", "x", epsilon=0.4, bounds=(0.0, 5.0))) is query  # an equal request
    assert session._plan(query) is session._plan(query)
    first, second = session.run(query), session.run(query)
    assert session.spent.epsilon == pytest.approx(0.8)  # each run pays
    assert first.value != second.value  # and draws its own noise
    with pytest.raises(BudgetExceeded):
        session.run(query)
    assert session.spent.epsilon == pytest.approx(0.8) and len(session.releases) == 2
    listed = Request("histogram", "g", epsilon=0.1, keys=["a", "b"])  # a list (from JSON): not kept, still resolved
    assert session.resolve(listed) == session.resolve(listed)
    joined = session.over(lambda engine, handle: handle)  # another table: its own plans
    assert joined._plan(query) is not session._plan(query) and joined._plan(query) == session._plan(query)
