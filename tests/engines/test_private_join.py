"""Joins of two private tables (issue 30, item 1): truncation per unit and per key on each side,
then an inner join; Δ from :class:`dpwitness.privacy.neighbours.PrivateJoinBound` (one unit moves
≤ m_l·k_r + m_r·k_l joined rows each way), held here by a sweep over neighbour pairs through the
Polars engine's real aggregates, hostile tables included; bad input refused before any spend."""

from __future__ import annotations

import itertools
from typing import Any

import numpy as np
import pytest

pytest.importorskip("polars")

import polars as pl

from dpwitness.common.errors import ParameterError
from dpwitness.engines import engine_for
from dpwitness.engines.joins import join_private
from dpwitness.privacy.neighbours import Neighbours, PrivateJoinBound
from dpwitness.query.queries import Query
from dpwitness.query.resolve import PrivateJoin, Request
from dpwitness.session import Session
from dpwitness.session.joins import joined

ENGINE = engine_for("polars")
KEYS = [(1, 2, 3, 4), (5, 6, 7, 8), (2**63 - 1, 0, 2**40, 17)]


def _query(statistic: str, bound: PrivateJoinBound, **options: Any) -> Query:
    return Query(statistic=statistic, epsilon=1.0, private_join=bound, **options)  # type: ignore[arg-type]


def _exact(left: Any, right: Any, query: Query, key: tuple[int, int, int, int]) -> dict[str, Any]:
    assert query.private_join is not None
    joined = join_private(ENGINE, ENGINE.open(left), ENGINE.open(right), query.private_join, unit="pid", name="r", key=key)
    return dict(ENGINE.aggregate(joined, query, selection_key=key))


def _without(frame: Any, unit: Any) -> Any:
    return frame.filter(pl.col("pid").ne_missing(unit))


def _l1(a: Any, b: Any) -> float:
    if isinstance(a, dict) or isinstance(b, dict):
        a, b = a or {}, b or {}
        return sum(abs(float(a.get(k, 0.0)) - float(b.get(k, 0.0))) for k in set(a) | set(b))
    return abs(float(a) - float(b))


def _tables(seed: int) -> tuple[Any, Any]:
    """Two small private tables over units 0..5 and keys 0..3, with a heavy unit 9 holding many
    rows on one key on both sides, null and NaN keys, null units and null values."""
    rng = np.random.default_rng(seed)
    n, m = int(rng.integers(4, 14)), int(rng.integers(4, 14))
    left = {
        "pid": [int(u) for u in rng.integers(0, 6, n)] + [9] * 6 + [None],
        "k": [float(k) for k in rng.integers(0, 4, n)] + [1.0] * 6 + [2.0],
        "x": [float(v) for v in rng.uniform(-5, 15, n)] + [100.0] * 6 + [3.0],
    }
    right = {
        "pid": [int(u) for u in rng.integers(0, 6, m)] + [9] * 5 + [7],
        "k": [int(k) for k in rng.integers(0, 4, m)] + [1] * 5 + [None],  # integer keys against float ones
        "y": [float(v) if v > 0 else None for v in rng.uniform(-2, 8, m)] + [-50.0] * 5 + [1.0],
    }
    left["k"][0] = float("nan")
    return pl.DataFrame(left), pl.DataFrame(right, schema={"pid": pl.Int64, "k": pl.Int32, "y": pl.Float64})


BOUNDS = [PrivateJoinBound(1, 1, 1, 1, on=("k", "k")), PrivateJoinBound(2, 3, 2, 1, on=("k", "k"))]


@pytest.mark.parametrize("bound", BOUNDS, ids=["k1m1", "k2-3m2-1"])
def test_the_sweep_holds_delta_for_every_unit_added_or_removed(bound: PrivateJoinBound) -> None:
    queries = [
        _query("count", bound),
        _query("sum", bound, column="x", bounds=(-5.0, 20.0)),
        _query("sum", bound, column="y", bounds=(0.0, 10.0), where="x > 0"),
        _query("count", bound, by=("k",), keys=(0.0, 1.0, 2.0, 3.0)),
    ]
    worst = [0.0] * len(queries)
    for seed, key in zip(range(5), itertools.cycle(KEYS), strict=False):
        left, right = _tables(seed)
        units = set(left["pid"].to_list()) | set(right["pid"].to_list())
        full = [_exact(left, right, q, key) for q in queries]
        for unit in units:  # D' = D without one unit (so D = D' with it added): both directions
            near = [_exact(_without(left, unit), _without(right, unit), q, key) for q in queries]
            for n, (q, a, b) in enumerate(zip(queries, full, near, strict=True)):
                part = q.parts[0]
                change = _l1(a[part.aggregate.value], b[part.aggregate.value])
                assert change <= part.sensitivity + 1e-9, (q.label, unit, change, part.sensitivity)
                worst[n] = max(worst[n], change)
    assert worst[0] >= 1  # the sweep moves the count at all


def test_the_sweep_holds_delta_when_a_unit_is_replaced() -> None:
    """Replace-one: a unit's rows in both tables replaced by heavy, hostile ones (2M rows each way)."""
    bound = BOUNDS[1]
    queries = [
        _query("count", bound, neighbours=Neighbours.REPLACE_ONE),
        _query("sum", bound, column="x", bounds=(-5.0, 20.0), neighbours=Neighbours.REPLACE_ONE),
    ]
    for seed in range(3):
        left, right = _tables(seed)
        full = [_exact(left, right, q, KEYS[seed]) for q in queries]
        for unit in {u for u in left["pid"].to_list() if u is not None}:
            rows_left = pl.DataFrame({"pid": [unit] * 4, "k": [1.0, 1.0, 2.0, 3.0], "x": [-9.0, 99.0, 20.0, -5.0]})
            rows_right = pl.DataFrame({"pid": [unit] * 3, "k": [1, 1, 3], "y": [None, 9.0, 1.0]}, schema=right.schema)
            new_left = pl.concat([_without(left, unit), rows_left])
            new_right = pl.concat([_without(right, unit), rows_right])
            for query, before in zip(queries, full, strict=True):
                after = _exact(new_left, new_right, query, KEYS[seed])
                name = query.parts[0].aggregate.value
                assert abs(after[name] - before[name]) <= query.parts[0].sensitivity, (query.label, unit)


def test_delta_is_reached_by_a_unit_on_both_sides_of_full_keys() -> None:
    """Tight: u's left row meets k_r right rows of key 1, its right row k_l left rows of key 2."""
    bound = PrivateJoinBound(2, 2, 1, 1, on=("k", "k"))
    count = _query("count", bound)
    assert count.parts[0].sensitivity == 1 * 2 + 1 * 2
    left = pl.DataFrame({"pid": [0, 1, 2, 3, 3], "k": [2, 2, 5, 1, 2]})
    right = pl.DataFrame({"pid": [4, 5, 6, 3, 3], "k": [1, 1, 1, 2, 1]})
    left_u = pl.concat([left, pl.DataFrame({"pid": [7], "k": [1]})])
    right_u = pl.concat([right, pl.DataFrame({"pid": [7], "k": [2]})])
    found = {_exact(left_u, right_u, count, k)["count"] - _exact(left, right, count, k)["count"] for k in KEYS}
    assert max(abs(c) for c in found) <= 4
    left_u = pl.DataFrame({"pid": [0, 1, 7], "k": [2, 2, 1]})
    right_u = pl.DataFrame({"pid": [4, 5, 7], "k": [1, 1, 2]})
    assert _exact(left_u, right_u, count, KEYS[0])["count"] == 4
    assert _exact(_without(left_u, 7), _without(right_u, 7), count, KEYS[0])["count"] == 0


def test_truncation_bounds_the_rows_of_a_heavy_key_and_unit() -> None:
    """Without truncation one key of 50 × 40 rows would join 2000 rows; with k = (3, 2), 6."""
    left = pl.DataFrame({"pid": list(range(50)), "k": [1] * 50})
    right = pl.DataFrame({"pid": list(range(40)), "k": [1] * 40})
    assert _exact(left, right, _query("count", PrivateJoinBound(3, 2, 1, 1, on=("k", "k"))), KEYS[0])["count"] == 6
    heavy = pl.DataFrame({"pid": [1] * 30, "k": list(range(30))})  # one unit, many keys: m = 2 rows kept
    spread = pl.DataFrame({"pid": list(range(30)), "k": list(range(30))})
    got = _exact(heavy, spread, _query("count", PrivateJoinBound(5, 5, 2, 1, on=("k", "k"))), KEYS[1])
    assert got["count"] == 2


def test_hostile_keys_never_fail_and_join_by_their_text() -> None:
    bound = PrivateJoinBound(4, 4, 4, 4, on=("k", "j"))
    count = _query("count", bound)
    cases = [
        ({"pid": [1, 2, None], "k": [1, None, 3]}, {"pid": [1, 2, 3], "j": ["1", "x", None]}, 1),
        ({"pid": [1.0, float("nan")], "k": [1.5, float("nan")]}, {"pid": [1, 2], "j": [1.5, float("nan")]}, 1),
        ({"pid": ["a", "b"], "k": [True, False]}, {"pid": ["a", "c"], "j": ["true", "false"]}, 2),
        ({"pid": [1, 2], "k": ["2", "2"]}, {"pid": [1, 2], "j": [2, 2]}, 4),
        ({"pid": [1, 2], "k": [0, 1]}, {"pid": [1, 2], "j": [-0.0, 1.0]}, 2),  # integers against floats, ±0
        ({"pid": [1, 2], "k": [1.0, 2.5]}, {"pid": [1, 2], "j": ["1", "2.5"]}, 1),  # a float as text: "1.0"
    ]
    for left, right, expected in cases:
        assert _exact(pl.DataFrame(left), pl.DataFrame(right), count, KEYS[0])["count"] == expected
    categorical = pl.DataFrame({"pid": [1, 2], "k": ["a", "b"]}, schema={"pid": pl.Int64, "k": pl.Categorical})
    assert _exact(categorical, pl.DataFrame({"pid": [3], "j": ["b"]}), count, KEYS[0])["count"] == 1


def test_delta_and_the_release_state_the_join() -> None:
    bound = PrivateJoinBound(2, 3, 4, 5, on=("k", "k"))
    assert bound.changed_rows(Neighbours.ADD_REMOVE) == 4 * 3 + 5 * 2
    assert bound.changed_rows(Neighbours.REPLACE_ONE) == 2 * (4 * 3 + 5 * 2)
    total = _query("sum", bound, column="x", bounds=(-10.0, 5.0))
    assert total.parts[0].sensitivity == 22 * 15.0
    assert _query("sum", bound, column="x", bounds=(2.0, 5.0)).parts[0].sensitivity == 22 * 5.0
    assert "private join on k = k" in total.label and "= 22 joined rows" in total.label
    left = pl.DataFrame({"pid": [1, 2, 3], "k": [1, 1, 2], "x": [1.0, 2.0, 3.0]})
    right = pl.DataFrame({"pid": [1, 2], "key": [1, 2], "x": [5.0, 7.0]})
    session = Session(left, epsilon=5.0, privacy_unit="pid", seed=3)
    join = PrivateJoin(right, on=("k", "key"), max_rows_per_key=2, name="r")
    release = session.ask(Request("sum", "r.x", epsilon=1.0, bounds=(0.0, 10.0), join=join))
    assert release.sensitivity == 40.0  # M = 1·2 + 1·2 = 4 joined rows, each ≤ 10
    assert "private join on k = key" in str(release)
    assert release.neighbours == "add/remove one unit's rows in both joined tables (n is private)"
    alone = session.ask(Request("sum", "x", epsilon=1.0, bounds=(0.0, 10.0)))
    assert alone.neighbours == "add/remove all rows of one pid (n is private)"


def _refused(session: Session, request: Request, parameter: str) -> None:
    with pytest.raises(ParameterError) as error:
        session.ask(request)
    assert error.value.parameter == parameter
    assert "secret" not in str(error.value)
    assert session.spent.epsilon == 0


def test_bad_input_is_refused_by_name_before_any_spend() -> None:
    left = pl.DataFrame({"pid": [1, 2], "k": ["secret", "b"], "x": [1.0, 2.0]})
    right = pl.DataFrame({"pid": [1, 2], "k": ["secret", "b"], "when": [[1], [2]]})
    session = Session(left, epsilon=5.0, privacy_unit="pid")
    ok = PrivateJoin(right, on="k", max_rows_per_key=1)
    _refused(session, Request("count", epsilon=1.0, join=PrivateJoin(right, on="k")), "max_rows_per_key")
    _refused(session, Request("count", epsilon=1.0, join=PrivateJoin(right, on="k", max_rows_per_key=0)), "max_rows_per_key")
    three = PrivateJoin(right, on="k", max_rows_per_key=(1, 2, 3))  # type: ignore[arg-type]
    _refused(session, Request("count", epsilon=1.0, join=three), "max_rows_per_key")
    bad_unit = PrivateJoin(right, on="k", max_rows_per_key=1, max_rows_per_unit=(1, -1))
    _refused(session, Request("count", epsilon=1.0, join=bad_unit), "max_rows_per_unit")
    _refused(session, Request("count", epsilon=1.0, join=PrivateJoin(right, on="nope", max_rows_per_key=1)), "on")
    _refused(session, Request("count", epsilon=1.0, join=PrivateJoin(right, on=("k",), max_rows_per_key=1)), "on")  # type: ignore[arg-type]
    _refused(session, Request("count", epsilon=1.0, join=PrivateJoin(right, on="when", max_rows_per_key=1)), "on")
    _refused(session, Request("mean", "x", epsilon=1.0, bounds=(0.0, 1.0), join=ok), "statistic")
    _refused(session, Request("count", epsilon=1.0, by="x", join=ok), "keys")
    _refused(session, Request("count", epsilon=1.0, where="row_number <= 1", join=ok), "where")
    _refused(session, Request("sum", "missing", epsilon=1.0, bounds=(0.0, 1.0), join=ok), "column")
    _refused(Session(left, epsilon=5.0), Request("count", epsilon=1.0, join=ok), "privacy_unit")
    # a join's query run over the session's own (untruncated, unjoined) rows would break its Δ: refused
    with pytest.raises(ParameterError) as error:
        session.run(session.resolve(Request("count", epsilon=1.0, join=ok)))
    assert error.value.parameter == "join" and session.spent.epsilon == 0
    with pytest.raises(ParameterError):
        joined(session, ok).run(session.resolve(Request("count", epsilon=1.0)))
    assert session.spent.epsilon == 0


# --- SQL: the same request through the compiler ------------------------------------------------
pytest.importorskip("sqlglot")


def _sql_session() -> tuple[Session, Any]:
    left = pl.DataFrame({"pid": [1, 1, 2, 3, None], "k": [1, 2, 1, None, 1], "x": [1.0, 2.0, 3.0, 4.0, 5.0]})
    right = pl.DataFrame({"pid": [1, 2, 2, 4], "k": [1, 1, 2, 1], "x": [10.0, 20.0, 30.0, None], "g": ["u", "v", "u", "v"]})
    return Session(left, epsilon=5.0, privacy_unit="pid", seed=7), right


def test_sql_compiles_to_the_python_request_and_reads_the_truncated_join() -> None:
    from dpwitness.session.sql import compile_for, target

    session, right = _sql_session()
    statement = "SELECT COUNT(*), SUM(CLAMP(b.x, 0, 50)) FROM data a JOIN visits b ON a.k = b.k"
    options: dict[str, Any] = {"private": {"visits": right}, "max_rows_per_key": (2, 3), "max_rows_per_unit": 2}
    compiled = compile_for(session, statement, epsilon=2.0, name="data", **options)
    join = PrivateJoin(right, on=("k", "k"), max_rows_per_key=(2, 3), max_rows_per_unit=2, name="visits")
    assert compiled.queries == (
        session.resolve(Request("count", epsilon=1.0, join=join)),
        session.resolve(Request("sum", "visits.x", epsilon=1.0, bounds=(0.0, 50.0), join=join)),
    )
    assert compiled.queries[0].parts[0].sensitivity == 2 * 3 + 2 * 2
    over = target(session, compiled)
    # key 1: left units 1, 2 × right 1, 2, 4 → 6 rows; key 2: left 1 × right 2 → 1 row; null unit and key dropped
    for key in KEYS:
        assert over.engine.aggregate(over._opened(), compiled.queries[0], selection_key=key) == {"count": 7.0}
        exact = over.engine.aggregate(over._opened(), compiled.queries[1], selection_key=key)
        assert exact == {"count": 5.0, "sum": 2 * (10.0 + 20.0) + 30.0}  # the sum's count: non-null b.x
    where = compile_for(session, f"{statement} WHERE g = 'u' AND a.x < 2", epsilon=2.0, name="data", **options)
    filtered = target(session, where)
    # key 1 with g = 'u': right unit 1 only, left x < 2: unit 1's row → 1 row (b.x = 10); key 2: b's 'u' row, a.x = 2.0 fails
    assert filtered.engine.aggregate(filtered._opened(), where.queries[1], selection_key=KEYS[0]) == {"count": 1.0, "sum": 10.0}
    answer = session.sql(statement, epsilon=2.0, name="data", **options)
    assert "private join on k = k" in str(answer)
    assert session.spent.epsilon == pytest.approx(2.0)


@pytest.mark.parametrize(
    ("statement", "bounds", "reason"),
    [
        ("SELECT COUNT(*) FROM data a JOIN visits b ON a.k = b.k", None, "a private JOIN needs max_rows_per_key=…"),
        ("SELECT COUNT(*) FROM data a LEFT JOIN visits b ON a.k = b.k", 2, "inner JOIN"),
        ("SELECT COUNT(*) FROM data a JOIN visits b ON k = b.k", 2, "each qualified"),
        ("SELECT COUNT(*) FROM data a JOIN visits b ON a.k = b.nope", 2, "unknown column of 'visits'"),
        ("SELECT AVG(CLAMP(b.x, 0, 1)) FROM data a JOIN visits b ON a.k = b.k", 2, "count or sum"),
        ("SELECT COUNT(DISTINCT pid) FROM data a JOIN visits b ON a.k = b.k", 2, "COUNT(DISTINCT"),
        ("SELECT g, COUNT(*) FROM data a JOIN visits b ON a.k = b.k GROUP BY g", 2, "declared keys"),
        ("SELECT COUNT(*) FROM data a JOIN data b ON a.k = b.k", 2, "self-join"),
        ("SELECT SUM(CLAMP(x, 0, 1)) FROM data a JOIN visits b ON a.k = b.k", 2, "ambiguous"),
    ],
)
def test_sql_refuses_a_private_join_it_cannot_bound_before_any_spend(statement: str, bounds: Any, reason: str) -> None:
    from dpwitness.sql import SqlError

    session, right = _sql_session()
    with pytest.raises(SqlError) as error:
        session.sql(statement, epsilon=1.0, name="data", private={"visits": right}, max_rows_per_key=bounds)
    assert reason in str(error.value) and "\n" not in str(error.value)
    assert session.spent.epsilon == 0


def test_sql_refuses_a_private_join_without_a_privacy_unit() -> None:
    from dpwitness.sql import SqlError

    _, right = _sql_session()
    session = Session(pl.DataFrame({"pid": [1], "k": [1]}), epsilon=1.0)
    with pytest.raises(SqlError, match="privacy unit"):
        session.sql(
            "SELECT COUNT(*) FROM data a JOIN visits b ON a.k = b.k", epsilon=1.0, private={"visits": right}, max_rows_per_key=1
        )
