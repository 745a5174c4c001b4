"""Contribution bounding (engines/polars.py ``_bound``): uniform over a unit's rows, identical rows
included, exactly min(k, rows) per unit, a function of the unit's own rows and the key only, and a
plan without ``rank().over(unit)`` (superlinear on Polars 1.36)."""

from __future__ import annotations

import numpy as np
import polars as pl
from hypothesis import given, settings
from hypothesis import strategies as st
from scipy import stats

from dpwitness.engines.polars import ENGINE as POLARS
from dpwitness.engines.polars import _bound
from dpwitness.query.queries import Query

KEY = (0x1234, 0x5678, 0x9ABC, 0xDEF0)
UNITS = 20_000
# every unit: three identical rows "a", then "b", "c", "d"; keep k = 2 of its 6 rows
ROWS = ["a", "a", "a", "b", "c", "d"]


def _kept_a_per_unit(frame: pl.DataFrame, key: tuple[int, int, int, int]) -> np.ndarray:
    query = Query(statistic="histogram", column="v", epsilon=1, privacy_unit="pid", max_contributions=2)
    kept = _bound(frame.lazy(), query, "pid", [], key).collect()
    assert kept.group_by("pid").len()["len"].max() == 2  # exactly k rows for every unit with more
    per_unit = kept.filter(pl.col("pid") < UNITS).group_by("pid").agg((pl.col("v") == "a").sum().alias("a")).sort("pid")
    assert per_unit.height == UNITS
    return per_unit["a"].to_numpy()


def test_the_pick_is_uniform_over_a_units_rows_identical_rows_included() -> None:
    frame = pl.DataFrame({"pid": np.repeat(np.arange(UNITS), len(ROWS)), "v": ROWS * UNITS})
    counts = np.bincount(_kept_a_per_unit(frame, KEY), minlength=3)
    # uniform over the 6 rows: the number of a's kept is hypergeometric (6 rows, 3 a's, 2 drawn)
    uniform = np.array([stats.hypergeom.pmf(i, 6, 3, 2) for i in range(3)])
    assert stats.chisquare(counts, uniform * UNITS).pvalue > 1e-4
    # a pick uniform over distinct values (identical rows ranked as one block) gives P(2, 1, 0 a's) = 1/4, 1/4, 1/2:
    # the same counts reject it, and a 3-point shift of the uniform's mass too
    assert stats.chisquare(counts, np.array([0.5, 0.25, 0.25]) * UNITS).pvalue < 1e-12
    assert stats.chisquare(counts, (uniform + np.array([0.03, -0.03, 0.0])) * UNITS).pvalue < 1e-12


def test_the_pick_ignores_file_order_and_other_units() -> None:
    rng = np.random.default_rng(5)
    frame = pl.DataFrame({"pid": np.repeat(np.arange(UNITS), len(ROWS)), "v": ROWS * UNITS})
    before = _kept_a_per_unit(frame, KEY)
    shuffled = frame.sample(fraction=1.0, shuffle=True, seed=7)
    assert np.array_equal(_kept_a_per_unit(shuffled, KEY), before)  # identical rows are interchangeable
    other = pl.DataFrame({"pid": np.full(50, UNITS + 1), "v": rng.choice(["a", "b"], 50).tolist()})
    with_other = _kept_a_per_unit(pl.concat([other, frame]), KEY)
    assert np.array_equal(with_other, before)  # another unit's rows change nothing here
    assert not np.array_equal(_kept_a_per_unit(frame, (1, 2, 3, 4)), before)  # and the key does


def test_units_at_or_under_the_bound_keep_every_row_and_agree_with_the_ranked_path() -> None:
    """The light path (≤ k rows: kept whole) against the ranked path on the same rows: with k ≥ the
    unit's size the ranked path keeps everything too, so both give the plain sums."""
    rng = np.random.default_rng(9)
    pid = rng.integers(0, 3000, 12_000)
    frame = pl.DataFrame({"pid": pid, "x": rng.uniform(0, 10, pid.size)})
    largest = int(frame.group_by("pid").len()["len"].max())
    for k in (largest, largest + 3):
        query = Query(statistic="sum", column="x", bounds=(0, 10), epsilon=1, privacy_unit="pid", max_contributions=k)
        exact = POLARS.aggregate(POLARS.open(frame), query, selection_key=KEY)
        assert exact["count"] == 12_000 and abs(float(exact["sum"]) - float(frame["x"].sum())) < 1e-6  # type: ignore[arg-type]
    query = Query(statistic="sum", column="x", bounds=(0, 10), epsilon=1, privacy_unit="pid", max_contributions=2)
    bounded = POLARS.aggregate(POLARS.open(frame), query, selection_key=KEY)
    expected = int(frame.group_by("pid").len()["len"].clip(upper_bound=2).sum())
    assert bounded["count"] == expected  # Σ min(rows, k) over units


# Property tests: exact counts, and a unit's pick is a function of its own rows and the key.

_unit_rows = st.lists(st.integers(0, 3), min_size=1, max_size=12)  # a unit's values, small range: duplicates often


def _frame(units: list[list[int]], first: int = 0) -> pl.DataFrame:
    pid = [first + u for u, rows in enumerate(units) for _ in rows]
    return pl.DataFrame({"pid": pid, "v": [v for rows in units for v in rows]}, schema={"pid": pl.Int64, "v": pl.Int64})


def _kept(frame: pl.DataFrame, k: int, key: tuple[int, int, int, int] = KEY) -> dict[int, list[int]]:
    query = Query(statistic="sum", column="v", bounds=(0, 3), epsilon=1, privacy_unit="pid", max_contributions=k)
    kept = _bound(frame.lazy(), query, "pid", [], key).collect()
    per_unit = kept.group_by("pid").agg(pl.col("v").sort())
    return {int(p): list(v) for p, v in per_unit.iter_rows()}


@settings(max_examples=60, deadline=None)
@given(units=st.lists(_unit_rows, min_size=1, max_size=15), k=st.integers(1, 6))
def test_every_unit_keeps_exactly_min_k_rows_and_only_its_own(units: list[list[int]], k: int) -> None:
    kept = _kept(_frame(units), k)
    assert sorted(kept) == list(range(len(units)))
    for u, rows in enumerate(units):
        assert len(kept[u]) == min(k, len(rows))
        remaining = list(rows)
        for v in kept[u]:  # a sub-multiset of the unit's rows
            remaining.remove(v)


@settings(max_examples=40, deadline=None)
@given(
    units=st.lists(_unit_rows, min_size=1, max_size=10),
    others=st.lists(_unit_rows, min_size=0, max_size=10),
    k=st.integers(1, 5),
    seed=st.integers(0, 2**32 - 1),
)
def test_a_units_pick_ignores_row_order_and_the_other_units_rows(
    units: list[list[int]], others: list[list[int]], k: int, seed: int
) -> None:
    """The same units, alone and then shuffled among other units' rows (ids above theirs): the same kept multisets."""
    alone = _kept(_frame(units), k)
    mixed = pl.concat([_frame(units), _frame(others, first=len(units))]).sample(fraction=1.0, shuffle=True, seed=seed)
    together = _kept(mixed, k)
    assert {u: together[u] for u in alone} == alone


def test_the_plan_sorts_and_never_ranks_within_a_window() -> None:
    """Growth guard without a clock: ``rank().over(unit)`` (superlinear in the rows on Polars 1.36) is not in
    the plan, for the rows path and the keys-per-unit path; the selection is sorts and order-keeping windows."""
    frame = pl.LazyFrame({"pid": [1, 1, 2], "g": ["a", "b", "a"], "v": [1.0, 2.0, 3.0]})
    rows = Query(statistic="sum", column="v", bounds=(0, 5), epsilon=1, privacy_unit="pid", max_contributions=1)
    keys = Query(statistic="histogram", column="g", epsilon=1, privacy_unit="pid", max_contributions=1, max_groups=1)
    for plan in (_bound(frame, rows, "pid", [], KEY), _bound(frame.select("pid", "g"), keys, "pid", ["g"], KEY)):
        text = plan.explain(optimized=False)
        assert "rank" not in text.lower()
        assert "sort" in text.lower()


def test_keys_per_unit_are_exactly_min_g_and_rows_per_key_min_k() -> None:
    rng = np.random.default_rng(3)
    pid = rng.integers(0, 400, 6000)
    frame = pl.DataFrame({"pid": pid, "g": rng.choice(list("abcdef"), pid.size)})
    query = Query(statistic="histogram", column="g", epsilon=1, privacy_unit="pid", max_contributions=2, max_groups=3)
    kept = _bound(frame.lazy(), query, "pid", ["g"], KEY).collect()
    want = frame.group_by("pid").agg(pl.col("g").n_unique().clip(upper_bound=3).alias("want"))
    got = kept.group_by("pid").agg(pl.col("g").n_unique().alias("got"))
    assert want.join(got, on="pid", how="left").filter(pl.col("want") != pl.col("got")).height == 0
    sizes = frame.group_by("pid", "g").len().rename({"len": "n"})
    per_key = kept.group_by("pid", "g").len().join(sizes, on=["pid", "g"])
    assert (per_key["len"] == per_key["n"].clip(upper_bound=2)).all()


def test_the_streaming_engine_keeps_the_same_rows_and_a_larger_bound_keeps_a_superset() -> None:
    """A unit keeps its first k rows by the keyed draw (``group_by(unit).head(k)`` after the sort): the
    streaming engine, whose morsels run in parallel, keeps what the in-memory one keeps, and the rows kept
    under k are among those kept under k + 1 (a head that ignored the draw's order would break both)."""
    rng = np.random.default_rng(11)
    n = 400_000  # many morsels
    frame = pl.LazyFrame({"pid": rng.integers(0, n // 6, n), "row": np.arange(n), "v": rng.integers(0, 5, n)})

    def kept(k: int, engine: str) -> set[int]:
        query = Query(statistic="sum", column="v", bounds=(0, 5), epsilon=1, privacy_unit="pid", max_contributions=k)
        return set(_bound(frame, query, "pid", [], KEY).collect(engine=engine)["row"].to_list())  # type: ignore[call-overload]

    three, four = kept(3, "in-memory"), kept(4, "in-memory")
    assert kept(3, "streaming") == three and kept(4, "streaming") == four
    assert three < four
    assert len(four) - len(three) > n // 10
