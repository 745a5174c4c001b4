"""Red-team review: attacks on the query layer that the derivations alone do not cover.

Each test is a pair of neighbouring inputs (or a parameter-only input) that used to be told
apart exactly, or to fail in a way a one-line error should have caught before the spend.
"""

from __future__ import annotations

import math
import re
from pathlib import Path

import polars as pl
import pytest

from dpwitness import ParameterError
from dpwitness.engines import engine_for
from dpwitness.query.predicates import parse, to_polars
from dpwitness.query.queries import Query
from dpwitness.session import Session


def _histogram_key_signs(rows: list[float]) -> list[float]:
    """The sign of each released key of an undeclared-key histogram over a float column."""
    frame = pl.DataFrame({"g": rows})
    session = Session(frame, epsilon=10, delta_budget=1e-3, max_rows=1000, seed=3)
    release = session.histogram("g", epsilon=1)
    assert isinstance(release.value, dict)
    return [math.copysign(1.0, key) for key in release.value]


def test_a_negative_zero_key_does_not_reveal_which_record_came_first() -> None:
    """D: 200 rows with key 0.0; D′: the same plus one record with key −0.0 in front. Polars
    groups ±0.0 together but shows the sign of the first row it met, so the released key used
    to read −0.0 exactly when the target was present (an unnoised answer, whatever ε)."""
    base = [0.0] * 200 + [1.0] * 200
    assert _histogram_key_signs(base) == [1.0, 1.0]
    assert _histogram_key_signs([-0.0, *base]) == [1.0, 1.0]


def _depth(text: str) -> int:
    deepest = level = 0
    for char in text:
        level += char in "(["
        level -= char in ")]"
        deepest = max(deepest, level)
    return deepest


@pytest.mark.parametrize(
    "where",
    [
        "x in [" + ",".join(["1"] * 996) + "]",
        " or ".join(["x == 1"] * 190),
        " and ".join(["x != 1"] * 180),
    ],
    ids=["in-list", "or-chain", "and-chain"],
)
def test_long_predicates_compile_to_shallow_expressions(where: str) -> None:
    """A 2,000-character `in` list or `or` chain used to compile to a left-deep tree ~1,000 levels
    deep: Polars spent ~0.2 s per schema pass on it (≈1.5 s per query, a CPU sink for the
    service) and Spark's analyser died with a java.lang.StackOverflowError. A balanced tree has
    the same meaning (and/or are associative in three-valued logic) and depth ≈ log2(n)."""
    predicate = parse(where)
    kinds = {"x": "float"}
    predicate.check(kinds)
    expression = to_polars(predicate, kinds)
    assert _depth(str(expression)) <= 4 * 12  # a chain would be ≥ 180 levels deep
    frame = pl.DataFrame({"x": [1.0, 2.0, None, float("nan")]})
    mask = frame.select(expression).to_series().to_list()
    if where.startswith("x in") or " or " in where:
        assert mask == [True, False, None, None]
    else:
        assert mask == [False, True, None, None]


@pytest.mark.parametrize(
    ("where", "rows"),
    [
        ("row_number <= 1e300", 5),
        ("row_number >= 1e19", 0),
        ("row_number between -1e300 and 3", 3),
        ("row_number < 9223372036854775808.0", 5),
        ("row_number > 1e300", 0),
        ("row_number <= -1e300", 0),
    ],
)
def test_extreme_row_number_bounds_are_a_window_not_an_engine_error(where: str, rows: int) -> None:
    """Huge position literals used to reach the engines as integers beyond 64 bits: Polars
    refused the plan with an error on `query`, Spark raised a raw Py4JError. They are windows
    like any other (a table never has 2^62 rows)."""
    frame = pl.DataFrame({"o": [1, 2, 3, 4, 5]})
    session = Session(frame, epsilon=1e3, order_by="o", seed=1)
    release = session.count(epsilon=500, where=where)
    assert abs(release.value - rows) < 0.5  # type: ignore[operator]
    low, high = parse(where).window or (0, 0)
    assert abs(low) < 2**63 and (high == math.inf or abs(high) < 2**63)


def test_a_bad_window_is_still_a_where_error() -> None:
    with pytest.raises(ParameterError, match=re.escape("where")):
        parse("row_number != 3")


def _bounded_sum(rows: list[tuple[int, float]], *, key: tuple[int, int, int, int]) -> float:
    from dpwitness.engines import engine_for
    from dpwitness.query.queries import Query

    query = Query(statistic="sum", column="x", bounds=(0.0, 10.0), epsilon=1.0, privacy_unit="pid", max_contributions=1)
    frame = pl.DataFrame({"pid": [p for p, _ in rows], "x": [x for _, x in rows]}).lazy()
    exact = engine_for("polars").aggregate(frame, query, selection_key=key)
    return float(exact["sum"])  # type: ignore[arg-type]


@pytest.mark.parametrize("key", [(1, 2, 3, 4), (2**63 + 5, 7, 2**64 - 1, 0), (0, 0, 0, 0)])
def test_a_unit_keeps_the_same_rows_whatever_other_units_are_added(key: tuple[int, int, int, int]) -> None:
    """Contribution bounding in Polars used to rank a unit's rows by a keyed hash of their
    position in the whole table: adding one unit in front shifted every other unit's positions
    and re-drew which of their rows were kept, so for a fixed key the bounded sum moved by far
    more than Δ (the library's own sensitivity search failed on `mean by g per pid`, flakily).
    DP then rested on Polars' hash behaving as a keyed PRF. Now, as in the Spark engine, a row's
    draw depends only on its unit and its rank among that unit's rows."""
    units = [(pid, x) for pid in range(200) for x in (0.0, 10.0)]
    before = _bounded_sum(units, key=key)
    for added in ([(999, 10.0)], [(999, 10.0), (999, 0.0), (999, 10.0)]):
        after = _bounded_sum(added + units, key=key)
        assert abs(after - before) <= 10.0  # Δ = k·max(|L|, |U|) = 10
    assert _bounded_sum(list(reversed(units)), key=key) == before  # the file order of rows does not matter
    assert 0 < before < 2000  # a real selection: some units keep 0, others 10


@pytest.mark.parametrize("statistic", ["mean", "variance"])
@pytest.mark.parametrize(
    "bounds",
    [(1e15, math.nextafter(1e15, math.inf)), (1e9, 1e9 + 1e-6), (-(2.0**50), math.nextafter(-(2.0**50), 0.0)), (0.0, 100.0)],
)
def test_centred_terms_stay_within_their_derived_range(statistic: str, bounds: tuple[float, float]) -> None:
    """The engines compute v − c with c = fl((L + U)/2), which is not the midpoint when L + U is
    not representable: with L = 1e15 and U the next double, one row moved the centred sum by
    0.125 against a derived Δ of h = 0.0625 (2×), and the centred squares by 4× their Δ. An
    analyst picks the bounds, so this was a chosen privacy loss above ε. Δ now comes from the
    float centre the engines really subtract."""
    from dpwitness.engines import engine_for
    from dpwitness.query.queries import Query

    query = Query(statistic=statistic, column="x", bounds=bounds, epsilon=1.0)
    engine = engine_for("polars")
    empty = engine.aggregate(pl.DataFrame({"x": []}, schema={"x": pl.Float64}).lazy(), query, selection_key=(0, 0, 0, 0))
    for x in (*bounds, bounds[0] - 1e6, bounds[1] + 1e6, 0.5 * (bounds[0] + bounds[1])):
        one = engine.aggregate(pl.DataFrame({"x": [x]}).lazy(), query, selection_key=(0, 0, 0, 0))
        for part in query.parts:
            name = part.aggregate.value
            assert abs(float(one[name]) - float(empty[name])) <= part.sensitivity, (x, name)  # type: ignore[arg-type]
    if bounds == (0.0, 100.0):  # an exact midpoint: the textbook Δ, unchanged
        assert [p.sensitivity for p in query.parts][1] == 50.0


# --- one CSV record is one line, whatever quotes it holds (Polars) ------------------------------

_UNCLOSED = '41,"target'


def _csv_with(tmp_path: Path, record: str | None, where: str) -> Path:
    """1,000 rows of (age, name), plus ``record`` at the top, the middle or the end."""
    rows = [f"{20 + i % 50},n{i}" for i in range(1000)]
    if record is not None:
        rows.insert({"top": 0, "middle": 500, "end": 1000}[where], record)
    path = tmp_path / f"{where}-{record is not None}.csv"
    path.write_text("age,name\n" + "\n".join(rows) + "\n")
    return path


def _exact(path: Path, query: Query) -> dict[str, float]:
    engine = engine_for("polars")
    result = engine.aggregate(engine.open(path), query, selection_key=(1, 2, 3, 4))
    assert isinstance(result, dict)
    return {name: float(value) for name, value in result.items() if isinstance(value, float)}


@pytest.mark.parametrize("where", ["top", "middle", "end"])
def test_an_unclosed_quote_is_one_record_not_the_rest_of_the_file(tmp_path: Path, where: str) -> None:
    """Adding ``41,"target`` moves a count by exactly 1 and a sum by its clamped value, never more."""
    without, with_ = _csv_with(tmp_path, None, where), _csv_with(tmp_path, _UNCLOSED, where)
    count = Query(statistic="count", epsilon=1.0)
    assert _exact(without, count)["count"] == 1000
    assert _exact(with_, count)["count"] == 1001  # was 0 (top) or 500 (middle): the quote swallowed the rest
    total = Query(statistic="sum", column="age", bounds=(0, 100), epsilon=1.0)
    assert _exact(with_, total)["sum"] - _exact(without, total)["sum"] == 41.0
    filtered = Query(statistic="count", epsilon=1.0, where="age >= 60")
    assert _exact(with_, filtered)["count"] == _exact(without, filtered)["count"]  # 41 is not ≥ 60


@pytest.mark.parametrize("where", ["top", "middle", "end"])
def test_an_unclosed_quote_never_fails_a_query_after_the_spend(tmp_path: Path, where: str) -> None:
    path = _csv_with(tmp_path, _UNCLOSED, where)
    session = Session(path, epsilon=10.0, seed=7, dtypes={"age": "integer"})
    session.count(epsilon=1.0)
    session.sum("age", (0, 100), epsilon=1.0)
    session.mean("age", (0, 100), epsilon=1.0)
    session.count(epsilon=1.0, where="age >= 30 and name != 'n3'")
    session.histogram("name", ["n1", "n2", '"target', "target"], epsilon=1.0)
    assert session.spent.epsilon == pytest.approx(5.0)


def test_well_formed_quoted_cells_are_unquoted(tmp_path: Path) -> None:
    """A quoted cell loses its quotes (``""`` inside is a quote); ``""`` alone is the empty text
    (an empty unquoted cell is null); a quote inside an unquoted cell is text (dpwitness.io.reader)."""
    path = tmp_path / "quoted.csv"
    path.write_text('"age","name"\n"41","he said ""hi"""\n42,plain\n43,""\n44,a"b\n45,\n')
    engine = engine_for("polars")
    table = engine.open(path)
    assert set(engine.schema(table).columns) == {"age", "name"}
    rows = table.frame.collect().rows()
    assert rows == [("41", 'he said "hi"'), ("42", "plain"), ("43", ""), ("44", 'a"b'), ("45", None)]
    total = Query(statistic="sum", column="age", bounds=(0, 100), epsilon=1.0)
    assert _exact(path, total)["sum"] == 41 + 42 + 43 + 44 + 45


def test_a_quoted_separator_stays_in_its_cell(tmp_path: Path) -> None:
    """RFC 4180: ``"Doe, Jane"`` is one cell; no later cell shifts (the old reader split it)."""
    path = tmp_path / "comma.csv"
    path.write_text('age,name,hours\n30,plain,40\n31,"Doe, Jane",50\n32,other,60\n')
    engine = engine_for("polars")
    rows = engine.open(path).frame.collect().rows()
    assert rows == [("30", "plain", "40"), ("31", "Doe, Jane", "50"), ("32", "other", "60")]
    assert _exact(path, Query(statistic="count", epsilon=1.0))["count"] == 3
