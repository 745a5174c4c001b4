"""Row filters and the null-aware Δ, end to end on the Polars engine (Spark: tests/engines/test_engine_spark.py).

* every derivation (statistic × relation × unit × grouping × filter) holds on random small
  tables and their neighbours — null ↔ value, NaN, filtered in/out, keys outside the declared
  set, null units, rows shifting positions — through the engine's real exact aggregates;
* the replace-one sum over bounds that exclude 0 no longer reveals the number of non-null
  values (the issue's k·U + Lap attack);
* types come from the query or declared metadata, never from inference over the values, and
  no failure after the spend or message depends on a value in the data;
* an empty table or an empty filter result is answered, and charged, like any other.
"""

from __future__ import annotations

import json
import math
import random
import sqlite3
import zlib
from pathlib import Path
from typing import Any

import polars as pl
import pytest
from typer.testing import CliRunner

from dpwitness import ParameterError
from dpwitness.cli import app
from dpwitness.engines.polars import ENGINE as POLARS
from dpwitness.query.queries import Query, derivation_cases
from dpwitness.session import Session

KEY = (5, 6, 7, 8)
SCHEMA = {"x": pl.Float64, "g": pl.String, "pid": pl.Int64, "o": pl.Int64}
runner = CliRunner()


# --- Δ under filters, derived ----------------------------------------------------------------

AR, R1 = "add-remove", "replace-one"


@pytest.mark.parametrize(
    ("options", "expected"),
    [
        # value filters are record-wise: add/remove Δ unchanged
        ({"statistic": "count", "where": "x > 1"}, {"count": 1}),
        ({"statistic": "sum", "column": "x", "bounds": (50, 100), "where": "x > 1"}, {"sum": 100}),
        # replace-one: the replaced record can leave or enter the filter
        ({"statistic": "count", "where": "x > 1", "neighbours": R1}, {"count": 1}),
        ({"statistic": "sum", "column": "x", "bounds": (50, 100), "where": "x > 1", "neighbours": R1}, {"sum": 100}),
        ({"statistic": "sum", "column": "x", "bounds": (-30, 10), "where": "x > 1", "neighbours": R1}, {"sum": 40}),
        # a row-position window moves rows like replace-one even under add/remove: one in, one out
        ({"statistic": "count", "where": "row_number <= 5", "order_by": ("o",)}, {"count": 1}),
        ({"statistic": "sum", "column": "x", "bounds": (50, 100), "where": "row_number <= 5", "order_by": ("o",)}, {"sum": 100}),
        ({"statistic": "sum", "column": "x", "bounds": (-30, 10), "where": "row_number <= 5", "order_by": ("o",)}, {"sum": 40}),
        (
            {"statistic": "mean", "column": "x", "bounds": (0, 10), "where": "row_number <= 5", "order_by": ("o",)},
            {"count": 1, "centred_sum": 10},
        ),
        (
            {"statistic": "count", "by": ("g",), "keys": ("a", "b"), "where": "row_number <= 5", "order_by": ("o",)},
            {"count": 2},
        ),
    ],
)
def test_sensitivity_under_filters(options: dict[str, Any], expected: dict[str, float]) -> None:
    query = Query(epsilon=1.0, **options)
    assert {p.aggregate.value: p.sensitivity for p in query.parts} == expected


def test_position_windows_change_the_grouped_coordinates_like_replace_one() -> None:
    plain = Query(statistic="count", by=("g",), keys=("a", "b", "c"), epsilon=1)
    window = Query(statistic="count", by=("g",), keys=("a", "b", "c"), epsilon=1, where="row_number <= 3", order_by=("o",))
    assert plain.parts[0].changed_coordinates == 1 and window.parts[0].changed_coordinates == 2


def test_row_number_needs_a_declared_order_and_no_unit() -> None:
    with pytest.raises(ParameterError, match="order_by") as caught:
        Query(statistic="count", epsilon=1, where="row_number <= 3")
    assert caught.value.parameter == "where"
    with pytest.raises(ParameterError, match="privacy unit"):
        Query(statistic="count", epsilon=1, where="row_number <= 3", order_by=("o",), privacy_unit="pid", max_contributions=2)


# --- every derivation against the engine's exact aggregates ------------------------------------


def _row(rng: random.Random, pid: int | None = None) -> dict[str, Any]:
    return {
        "x": rng.choice([None, math.nan, 0.0, 1.0, 2.0, 3.5, 5.0, 9.0, -4.0]),
        "g": rng.choice(["a", "b", "c", None]),  # c is outside the declared keys
        "pid": pid if pid is not None else rng.choice([1, 2, 3, None]),
        "o": rng.randrange(6),  # ties on purpose
    }


def _neighbour(rows: list[dict[str, Any]], query: Query, rng: random.Random) -> list[dict[str, Any]]:
    """One neighbour of ``rows`` under the query's relation, a whole privacy unit at a time."""
    out = [dict(r) for r in rows]
    unit = query.privacy_unit is not None
    if query.neighbours.value == "add-remove":
        if rows and rng.random() < 0.5:
            victim = rng.randrange(len(out))
            if unit and out[victim]["pid"] is not None:
                pid = out[victim]["pid"]
                return [r for r in out if r["pid"] != pid]
            return out[:victim] + out[victim + 1 :]
        if unit:
            pid = 100 + rng.randrange(3)
            return [r for r in out if r["pid"] != pid] + [_row(rng, pid) for _ in range(rng.randint(1, 4))]
        at = rng.randrange(len(out) + 1)
        return [*out[:at], _row(rng), *out[at:]]
    if not out:
        return out
    victim = rng.randrange(len(out))
    if unit and out[victim]["pid"] is not None:
        pid = out[victim]["pid"]
        return [r for r in out if r["pid"] != pid] + [_row(rng, pid) for _ in range(rng.randint(1, 4))]
    out[victim] = _row(rng)
    return out


def _shift(a: dict[str, Any], b: dict[str, Any], name: str) -> float:
    left, right = a.get(name, 0.0), b.get(name, 0.0)
    if isinstance(left, dict) or isinstance(right, dict):
        left, right = left or {}, right or {}
        return math.fsum(abs(left.get(k, 0.0) - right.get(k, 0.0)) for k in set(left) | set(right))
    return abs(left - right)


def _worst_shifts(query: Query, trials: int, seed: int) -> dict[str, float]:
    rng = random.Random(seed)
    worst = {p.aggregate.value: 0.0 for p in query.parts}
    for _ in range(trials):
        rows = [_row(rng) for _ in range(rng.randint(0, 7))]
        other = _neighbour(rows, query, rng)
        exact = [POLARS.aggregate(pl.DataFrame(r, schema=SCHEMA).lazy(), query, selection_key=KEY) for r in (rows, other)]
        for name in worst:
            worst[name] = max(worst[name], _shift(exact[0], exact[1], name))
    return worst


CASES = list(derivation_cases())


@pytest.mark.parametrize("query", CASES, ids=[f"{q.neighbours.value}:{q.label}" for q in CASES])
def test_every_derivation_holds_on_random_neighbours(query: Query) -> None:
    worst = _worst_shifts(query, trials=25, seed=zlib.crc32(query.label.encode()) % 1000)  # hash() is salted per process
    for part in query.parts:
        assert worst[part.aggregate.value] <= part.sensitivity + 1e-9, (part, worst)


def test_the_search_finds_the_old_replace_one_bug() -> None:
    """Against the old derivation (Δ = U − L = 3 for a replace-one sum over [2, 5]) the same
    search finds a neighbour pair that moves the sum by more: the check above can fail."""
    query = Query(statistic="sum", column="x", bounds=(2.0, 5.0), epsilon=1, neighbours=R1)
    assert query.parts[0].sensitivity == 5.0
    assert _worst_shifts(query, trials=60, seed=1)["sum"] > 3.0


# --- the attack: k·U + Lap(Δ/ε) revealed k -------------------------------------------


def test_replace_one_sum_no_longer_reveals_the_number_of_values() -> None:
    """Neighbours under replace-one: ten values of 1000.5 and a null, or the null replaced by
    1000.5. With bounds (1000, 1001) the old Δ was U − L = 1 and a threshold halfway told the
    tables apart every time; with Δ = 1001 its accuracy is ≈ 0.70, within e^ε/(1 + e^ε) = 0.731
    at ε = 1 (accuracy 1.0 would fail here by > 10σ)."""
    base = [1000.5] * 10
    tables = {"without": pl.DataFrame({"x": [*base, None]}), "with": pl.DataFrame({"x": [*base, 1000.5]})}
    middle = 10.5 * 1000.5
    right = 0
    trials = 300
    for name, frame in tables.items():
        session = Session(frame, epsilon=trials, neighbours=R1, seed=11 if name == "with" else 12)
        for _ in range(trials):
            release = session.sum("x", (1000, 1001), epsilon=1.0)
            assert release.sensitivity == 1001
            right += (float(release.value) > middle) == (name == "with")  # type: ignore[arg-type]
    accuracy = right / (2 * trials)
    assert accuracy < 0.731 + 4 * math.sqrt(0.731 * 0.269 / (2 * trials))


# --- types from the query or declared metadata, never from the values ---------------------------


@pytest.fixture
def late_float_csv(tmp_path: Path) -> Path:
    """An integer-looking column whose row 12,001 holds 73512.25 (Polars' inference reads 10,000)."""
    path = tmp_path / "late.csv"
    lines = ["id,income,town"] + [f"{i},{1000 + i % 7},T{i % 3}" for i in range(12_000)]
    lines += ["12000,73512.25,T0", "12001,not a number,T1", "12002,,T2"]
    path.write_text("\n".join(lines) + "\n")
    return path


def test_a_late_cell_neither_fails_nor_is_quoted(late_float_csv: Path, tmp_path: Path) -> None:
    ledger = tmp_path / "l.db"
    untyped = Session(late_float_csv, epsilon=3, ledger=ledger, seed=1)
    assert {c: k.value for c, k in untyped.schema().columns.items()} == {"id": "untyped", "income": "untyped", "town": "untyped"}
    session = Session(late_float_csv, epsilon=3, ledger=ledger, seed=1, dtypes={"income": "float"})
    exact = POLARS.aggregate(
        POLARS.open(late_float_csv, dtypes={"income": "float"}),
        session.query("sum", "income", epsilon=1, bounds=(0, 1e5)),
        selection_key=KEY,
    )
    assert exact["count"] == 12_001  # the unparsable and the empty cell are null: not counted
    assert exact["sum"] == sum(1000 + i % 7 for i in range(12_000)) + 73512.25
    release = session.mean("income", (0, 1e5), epsilon=1)
    assert 0 <= float(release.value) <= 1e5  # type: ignore[arg-type]
    assert session.count(epsilon=1, where="income > 50000").sensitivity == 1
    assert session.count(epsilon=1, by="town", keys=["T0", "T1"]).value.keys() == {"T0", "T1"}  # type: ignore[union-attr]


def test_declared_types_are_non_strict(late_float_csv: Path) -> None:
    session = Session(late_float_csv, epsilon=2, dtypes={"income": "integer", "id": "integer"}, seed=2)
    kinds = session.schema().columns
    assert kinds["income"].value == "integer" and kinds["town"].value == "untyped"
    exact = POLARS.aggregate(
        POLARS.open(late_float_csv, dtypes={"income": "integer"}), session.query("count", "income", epsilon=1), selection_key=KEY
    )
    assert exact["count"] == 12_000  # 73512.25 is not an integer: null, like the text
    with pytest.raises(ParameterError) as caught:
        session.count(epsilon=1, where="income < 'x'")
    assert caught.value.parameter == "where"
    for bad in ({"income": "decimal"}, {"": "integer"}, ["income"]):
        with pytest.raises(ParameterError) as caught:
            Session(late_float_csv, epsilon=1, dtypes=bad)  # type: ignore[arg-type]
        assert caught.value.parameter == "dtypes"
    with pytest.raises(ParameterError) as caught:
        Session(late_float_csv, epsilon=1, dtypes={"salary": "float"}).schema()
    assert caught.value.parameter == "dtypes"


def test_no_message_quotes_a_cell(tmp_path: Path) -> None:
    secret = "SECRET-73512.25"
    path = tmp_path / "small.csv"
    path.write_text(f"age,name\n30,a\n{secret},b\n")
    session = Session(path, epsilon=5, seed=3)
    session.schema()
    messages = []
    for call in (
        lambda: session.sum("age", (0, 100), epsilon=1),
        lambda: session.count(epsilon=1, where="age < 40"),
        lambda: session.count(epsilon=1, where="age == 'x'"),
        lambda: session.histogram("age", epsilon=1),
        lambda: session.sum("nope", (0, 1), epsilon=1),
        lambda: session.count(epsilon=1, where="nope < 3"),
    ):
        try:
            messages.append(repr(call().to_dict()))
        except ParameterError as error:
            messages.append(str(error))
    assert len(messages) == 6 and not any(secret in m for m in messages[:3] + messages[4:])


# --- before the spend: bounds whose sums could overflow ----------------------------------------


@pytest.mark.parametrize("bounds", [(0, 1e300), (-1e308, 1e308), (0, 2.0**50 + 2**30), (-(2.0**51), 0)])
def test_huge_bounds_are_refused_before_the_spend(adult: Path, tmp_path: Path, bounds: tuple[float, float]) -> None:
    ledger = tmp_path / "l.db"
    session = Session(adult, epsilon=1, ledger=ledger)
    with pytest.raises(ParameterError) as caught:
        session.sum("age", bounds, epsilon=0.5)
    assert caught.value.parameter == "bounds" and "2^50" in str(caught.value)
    assert session.spent.epsilon == 0
    result = runner.invoke(
        app, ["query", str(adult), "--epsilon", "1", "--sum", f"age:{bounds[0]}:{bounds[1]}", "--ledger", str(ledger)]
    )
    assert result.exit_code == 2 and "bounds" in result.output and "Traceback" not in result.output
    with sqlite3.connect(ledger) as connection:
        assert connection.execute("SELECT COUNT(*) FROM spends").fetchone()[0] == 0


def test_the_largest_accepted_bounds_release(adult: Path, adult_schema: Path) -> None:
    release = Session(adult, epsilon=1, seed=4, schema=adult_schema).sum("age", (-(2.0**50), 2.0**50), epsilon=1)
    assert math.isfinite(float(release.value))  # type: ignore[arg-type]


# --- no public emptiness ------------------------------------------------------------------------


def test_an_empty_filter_result_is_answered_at_the_same_cost(adult: Path, adult_schema: Path) -> None:
    session = Session(adult, epsilon=10, seed=5, schema=adult_schema)
    for where in ("age > 200", "age < 30"):
        count = session.count(epsilon=1, where=where)
        mean = session.mean("hours_per_week", (0, 100), epsilon=1, where=where)
        variance = session.variance("hours_per_week", (0, 100), epsilon=1, where=where)
        assert count.epsilon == mean.epsilon == variance.epsilon == 1
        assert 0 <= float(mean.value) <= 100 and 0 <= float(variance.value) <= 2500  # type: ignore[arg-type]
    assert session.spent.epsilon == pytest.approx(6)
    assert not hasattr(session.schema(), "empty")


# --- through the session and the CLI ------------------------------------------------------------


def test_the_tutorial_questions(adult: Path, adult_schema: Path) -> None:
    session = Session(adult, epsilon=4, seed=6, order_by="fnlwgt", schema=adult_schema)
    young = session.count(epsilon=1, where="age < 20")
    assert abs(float(young.value) - 1657) < 30  # type: ignore[arg-type]
    hours = session.mean("hours_per_week", (0, 100), epsilon=1, where="sex == 'Female' and age >= 30")
    assert abs(float(hours.value) - 38.05) < 1  # type: ignore[arg-type]
    assert "where sex == 'Female' and age >= 30" in hours.query
    first = session.sum("age", (0, 100), epsilon=1, where="row_number <= 5")
    assert first.sensitivity == 100  # one record in, one out: like replace-one
    assert abs(float(first.value) - 145) < 100 * math.log(1 / 0.001)  # type: ignore[arg-type]


def test_cli_where_and_the_replace_one_delta(adult: Path, adult_schema: Path) -> None:
    args = [
        "query",
        str(adult),
        "--schema",
        str(adult_schema),
        "--epsilon",
        "2",
        "--count",
        "--sum",
        "age:50:100",
        "--where",
        "age >= 50",
        "--json",
        "--seed",
        "1",
    ]
    result = runner.invoke(app, [*args, "--neighbours", "replace-one"])
    assert result.exit_code == 0, result.output
    releases = json.loads(result.stdout)["releases"]
    assert [r["sensitivity"] for r in releases] == [1.0, 100.0]  # not 0 and U − L = 50
    assert all("where age >= 50" in r["query"] for r in releases)
    bad = runner.invoke(app, ["query", str(adult), "--epsilon", "1", "--count", "--where", "(age < 20"])
    assert bad.exit_code == 2 and "where" in bad.output and "position 1" in bad.output
