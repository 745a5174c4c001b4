"""Δ checked from the file: neighbouring CSV and Parquet files through each face's real reading.

Every statistic family of the library sweep (:func:`dpwitness.query.queries.derivation_cases`, plus
the quantile) is held to its derived Δ on pairs of files that differ by one physical line (the
hostile lines of :func:`hostile_lines` included) or one Parquet row, read by the Polars engine's
``open`` (CSV columns as text, and with declared types), the service's loader
(``serve/tables.py`` ``load_table``) and, for a sample of the cases, the Spark engine's ``open``.
The base files are written as Python's ``csv`` module (and pandas) write them.

The two Spark findings of issue 17 are tests of their own: one line with bare ``\\r`` fragments
moved a unit-bounded count by 501 records; an empty line replacing a line moved a replace-one
``count()`` (Δ = 0) from 200 to 199.
"""

from __future__ import annotations

import csv
import math
import random
import re
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import polars as pl
import pytest

from dpwitness.engines import engine_for
from dpwitness.engines.joins import join_private
from dpwitness.privacy.neighbours import PrivateJoinBound
from dpwitness.query.queries import Query, Statistic, derivation_cases
from dpwitness.serve.config import parse_table
from dpwitness.serve.tables import load_table
from dpwitness.witness.file_search import (
    FRESH_UNIT,
    SELECTION_KEY,
    SINGLE_UNIT,
    FileChange,
    csv_changes,
    engine_face,
    file_search,
    frame_face,
    hostile_lines,
    parquet_changes,
    sample_rows,
)

HEADER = ("pid", "x", "g", "o")
#: Cells as people write them: below, at, inside and above the cases' bounds (2, 5), empty, nan, ±inf.
VALUES: dict[str, list[Any]] = {
    "pid": [0, 1, 2, None],
    "x": [None, "nan", "inf", "-inf", -1e308, -7.0, 0.0, 2.0, 3.5, 5.0, 9.0, 1e308],
    "g": ["a", "b", "c", None],
    "o": [None, 0, 1, 2],
}
DECLARED = {"pid": "integer", "x": "float", "g": "string", "o": "integer"}
BASE_ROWS = 6


def _cases() -> list[Query]:
    quantiles = [
        Query(
            statistic="quantile",
            column="x",
            bounds=(2.0, 5.0),
            quantiles=(0.5,),
            bins=4,
            epsilon=1.0,
            neighbours=relation,
            privacy_unit=unit,
            max_contributions=2 if unit else 1,
            **grouping,
        )  # type: ignore[arg-type]
        for relation in ("add-remove", "replace-one")
        for unit in (None, "pid")
        for grouping in ({}, {"by": ("g",), "keys": ("a", "b")})
    ]
    return [*derivation_cases(), *quantiles]


CASES = _cases()


#: File pairs per relation × unit × face (every hostile line appears across them; CI's time).
PAIRS = 10
ALWAYS = ("bare-cr-fragments", "empty")


def _changes(relation: str, unit: bool, seed: int, count: int | None = PAIRS) -> list[FileChange]:
    """The pairs of one group: a seeded sample of ``count`` (the two issue-17 lines always in)."""
    rows = sample_rows(VALUES, BASE_ROWS, seed=seed)
    changes = csv_changes(HEADER, rows, relation, hostile_lines(HEADER), unit=unit)
    if count is None:
        return changes
    always = [c for c in changes if any(name in c.kind for name in ALWAYS)]
    rest = [c for c in changes if c not in always]
    rng = random.Random(seed)
    return rng.sample(always, min(3, len(always))) + rng.sample(rest, min(count - 3, len(rest)))


def _seed(face: str, relation: str, unit: bool) -> int:
    return list(FACES).index(face) * 4 + ("add-remove", "replace-one").index(relation) * 2 + unit


def _service_table(path: Path) -> Any:
    """The service's loader, with the column types the config declares."""
    section = {  # the [tables.t] section as parsed from TOML
        "path": str(path),
        "privacy_unit": "pid",
        "columns": {
            "x": {"type": "float", "bounds": [2.0, 5.0]},
            "g": {"type": "string", "categories": ["a", "b", "c"]},
            "o": {"type": "integer", "bounds": [0, 2]},
        },
    }
    return load_table(parse_table("t", section, base=path.parent)).frame


FACES = {
    "polars (CSV as text)": engine_face("polars"),
    "polars (declared types)": engine_face("polars", dtypes=DECLARED),
    "service loader": frame_face(_service_table),
}


def _groups() -> Iterator[tuple[str, bool, list[Query]]]:
    """The cases by the file pairs they share: relation × privacy unit."""
    for relation in ("add-remove", "replace-one"):
        for unit in (False, True):
            chosen = [q for q in CASES if q.neighbours.value == relation and (q.privacy_unit is not None) == unit]
            yield relation, unit, chosen


@pytest.mark.parametrize("face", list(FACES))
@pytest.mark.parametrize(("relation", "unit"), [(r, u) for r in ("add-remove", "replace-one") for u in (False, True)])
def test_one_line_moves_every_statistic_by_at_most_its_delta(face: str, relation: str, unit: bool, tmp_path: Path) -> None:
    queries = next(q for r, u, q in _groups() if r == relation and u == unit)
    changes = _changes(relation, unit, seed=_seed(face, relation, unit))
    results = file_search(FACES[face], queries=queries, changes=changes, face=face, directory=tmp_path)
    assert len(results) == len(queries) and all(r.pairs == len(changes) for r in results)
    failures = [str(r) for r in results if r.violated]
    assert not failures, "\n\n".join(failures)


def test_the_sweep_covers_every_statistic_relation_unit_grouping_and_filter() -> None:
    assert {q.statistic for q in CASES} == set(Statistic)
    assert {(q.neighbours.value, q.privacy_unit) for q in CASES} == {
        (r, u) for r in ("add-remove", "replace-one") for u in (None, "pid")
    }
    assert {q.filtered for q in CASES} == {"none", "value", "position"}
    assert {(q.grouped, q.declared) for q in CASES} == {(False, False), (True, True), (True, False)}
    sampled = [
        change
        for face in FACES
        for r in ("add-remove", "replace-one")
        for u in (False, True)
        for change in _changes(r, u, _seed(face, r, u))
    ]
    kinds = {c.kind.removeprefix("add ").split(" at line")[0].split(" by ")[-1] for c in sampled}
    assert set(hostile_lines(HEADER)) <= kinds, set(hostile_lines(HEADER)) - kinds  # every line, somewhere
    assert any(c.kind.startswith("remove") for c in sampled)


def test_parquet_rows_move_every_statistic_by_at_most_its_delta(tmp_path: Path) -> None:
    schema = {"pid": pl.Int64, "x": pl.Float64, "g": pl.String, "o": pl.Int64}
    numbers = [None, math.nan, math.inf, -math.inf, -1e308, 0.0, 2.0, 3.5, 5.0, 9.0]
    rows = [dict(zip(HEADER, r, strict=True)) for r in sample_rows({**VALUES, "x": numbers}, BASE_ROWS, seed=3)]
    candidates = [{"pid": 0, "x": v, "g": g, "o": 1} for v, g in ((None, "a"), (math.nan, "b"), (9.0, "c"), (1e308, None))]
    for relation in ("add-remove", "replace-one"):
        for unit in (None, "pid"):
            queries = [q for q in CASES if q.neighbours.value == relation and q.privacy_unit == unit]
            changes = parquet_changes(schema, rows, relation, candidates, unit=unit)
            for face in ("polars (declared types)", "service loader"):
                results = file_search(FACES[face], queries=queries, changes=changes, face=face, directory=tmp_path)
                failures = [str(r) for r in results if r.violated]
                assert not failures, "\n\n".join(failures)


# --- private joins: one table's file changes, the other private table's file as written -------------

#: The other private table, as people write it (Python's csv module): nulls in the join key ``g``, key
#: "a" held by more units than k, a unit (7) with many rows of one key, keys on this side only ("d",
#: "a, b" quoted), and rows of the changed line's unit (FRESH_UNIT) and of the base file's one-line
#: unit (SINGLE_UNIT), so that a change moves a unit with rows on both sides.
OTHER_ROWS: list[list[Any]] = [
    [0, 2.5, "a", 1],
    [1, "nan", "a", 0],
    [2, 4.0, "a", ""],
    [3, 9.0, "", 2],
    [7, 3.0, "b", 1],
    [7, 5.0, "b", 1],
    [7, -1.0, "b", 2],
    [7, 2.0, "b", 0],
    [8, 1.0, "d", 1],
    [9, 3.5, "a, b", 1],
    [FRESH_UNIT, 4.5, "a", 1],
    [FRESH_UNIT, 2.0, "b", 2],
    [SINGLE_UNIT, 3.0, "a", 1],
    ["", 4.0, "b", 1],
]
#: k_l = 2, k_r = 3, m_l = 1, m_r = 2: M = 1·3 + 2·2 = 7 joined rows each way.
JOIN_BOUND = PrivateJoinBound(2, 3, 1, 2, on=("g", "g"))


def _join_queries(relation: str) -> list[Query]:
    def query(statistic: str, **options: Any) -> Query:
        return Query(statistic=statistic, epsilon=1.0, neighbours=relation, private_join=JOIN_BOUND, **options)  # type: ignore[arg-type]

    return [
        query("count"),
        query("sum", column="x", bounds=(2.0, 5.0)),
        query("sum", column="r.x", bounds=(2.0, 5.0)),
        query("count", by=("g",), keys=("a", "b")),
    ]


def _join_face(side: str, other: Path, dtypes: dict[str, str] | None) -> Any:
    """The Polars engine's ``open`` of the changed file (the ``side`` table) and of the other one,
    then :func:`join_private` and the engine's exact aggregates (fixed selection key)."""
    engine = engine_for("polars")

    def evaluate(jobs: Any) -> list[Any]:
        found = []
        for query, path in jobs:
            changed, fixed = engine.open(str(path), dtypes=dtypes), engine.open(str(other), dtypes=dtypes)
            left, right = (changed, fixed) if side == "left" else (fixed, changed)
            joined = join_private(engine, left, right, JOIN_BOUND, unit="pid", name="r", key=SELECTION_KEY)
            found.append(engine.aggregate(joined, query, selection_key=SELECTION_KEY))
        return found

    return evaluate


@pytest.mark.parametrize("dtypes", [None, DECLARED], ids=["CSV as text", "declared types"])
@pytest.mark.parametrize("side", ["left", "right"])
def test_one_line_of_either_private_table_moves_a_join_by_at_most_its_delta(side: str, dtypes: Any, tmp_path: Path) -> None:
    """A line added, removed or replaced (hostile lines included) in one private table's CSV, the
    other's CSV as written: the unit's rows change on one side (a unit with rows on both sides
    included), which moves ≤ M joined rows each way (PrivateJoinBound's proof, one side's term)."""
    other = tmp_path / "other.csv"
    with other.open("w", newline="") as handle:
        csv.writer(handle, lineterminator="\n").writerows([HEADER, *OTHER_ROWS])
    face = _join_face(side, other, dtypes)
    for number, relation in enumerate(("add-remove", "replace-one")):
        queries = _join_queries(relation)
        scale = 1 + number  # replace-one: 2M
        assert [q.parts[0].sensitivity for q in queries] == [7.0 * scale, 35.0 * scale, 35.0 * scale, 14.0 * scale]
        changes = _changes(relation, True, seed=7 + number + 2 * (side == "right"))
        results = file_search(face, queries=queries, changes=changes, face=f"join ({side})", directory=tmp_path)
        failures = [str(r) for r in results if r.violated]
        assert not failures, "\n\n".join(failures)
        assert max(r.shift for r in results) > 0  # the changes reach the joined rows


# --- the search can fail: a reader that ends a record at a bare \r ---------------------------------


def _splits_at_bare_cr(path: Path) -> pl.DataFrame:
    """A deliberately wrong reader (what Spark's CSV reader did): a bare \\r ends a record too."""
    text = path.read_bytes().decode("utf-8", "replace")
    lines = [line for line in re.split(r"\r\n|\n|\r", text) if line]
    rows = [(line.split(",") + [None] * 4)[:4] for line in lines[1:]]
    return pl.DataFrame(rows, schema=dict.fromkeys(HEADER, pl.String), orient="row")


def test_the_file_search_finds_a_reader_that_splits_lines_and_shrinks_to_a_minimal_pair(tmp_path: Path) -> None:
    query = Query(statistic="count", epsilon=1.0, privacy_unit="pid", max_contributions=1)
    changes = _changes("add-remove", True, seed=1, count=None)
    wrong = frame_face(_splits_at_bare_cr)
    (found,) = file_search(wrong, queries=[query], changes=changes, face="wrong reader", directory=tmp_path)
    assert found.violated and found.shift > 100 * found.claimed == 100.0
    assert found.change.kind.startswith("add bare-cr-fragments")
    assert found.change.records == ()  # shrunk: no other line is needed
    assert found.d() == b"pid,x,g,o\n" and b"\r" in found.d_prime()  # type: ignore[operator]
    assert "minimal violating pair of files" in str(found)
    (right,) = file_search(FACES["polars (CSV as text)"], queries=[query], changes=changes, face="polars", directory=tmp_path)
    assert right.ok


# --- Spark: its own opening of the files ----------------------------------------------------------


def _spark_cases() -> list[Query]:
    """A sample for Spark's time: one query per statistic, rotating over relation × unit and
    over grouping and filter (the Polars faces and the service's loader run every case)."""
    groups = list(_groups())
    chosen: list[Query] = []
    for number, statistic in enumerate(Statistic):
        _, _, queries = groups[number % len(groups)]
        matching = [q for q in queries if q.statistic is statistic]
        chosen.append(matching[(7 * number) % len(matching)])
    return chosen


@pytest.fixture
def spark_small(spark: Any, spark_small_tables: Any) -> Iterator[Any]:
    """The shared session, tuned for files of a few lines while a test runs, then restored."""
    with spark_small_tables(spark):
        yield spark


@pytest.mark.spark
def test_spark_one_line_moves_a_sample_of_statistics_by_at_most_their_delta(spark_small: Any, tmp_path: Path) -> None:
    face = engine_face("spark", dtypes=DECLARED)
    sample = _spark_cases()
    assert {q.statistic for q in sample} == set(Statistic)
    lines = hostile_lines(HEADER)
    kept = {k: lines[k] for k in ("bare-cr-fragments", "empty", "unbalanced-quote")}
    # One base file for every query (its one-line unit is just a line without a unit), the
    # lines added at the end: 8 distinct files, each opened once (Spark's opening costs ~1 s).
    rows = sample_rows(VALUES, 3, seed=5)
    changes = [
        c
        for relation in ("add-remove", "replace-one")
        for c in csv_changes(HEADER, rows, relation, kept, unit=True)
        if c.removed is not None or c.at == len(c.records)
    ]
    results = file_search(face, queries=sample, changes=changes, face="spark", directory=tmp_path)
    assert len(results) == len(sample)
    failures = [str(r) for r in results if r.violated]
    assert not failures, "\n\n".join(failures)


def _two_hundred(unit: bool) -> tuple[tuple[str, ...], list[list[Any]]]:
    header = ("id", "note", "n") if unit else ("note", "n")
    rows = [[i, "ok", i % 7] if unit else ["ok", i % 7] for i in range(200)]
    return header, rows


@pytest.mark.spark
def test_spark_one_line_of_bare_cr_fragments_is_one_record(spark_small: Any, tmp_path: Path) -> None:
    """Issue 17: `999,free text\\r1000\\r…\\r1499,3` added to a 200-row CSV moved Spark's count under
    privacy_unit="id", max_contributions=1 (Δ = 1) by 501; one line must be one record."""
    header, rows = _two_hundred(unit=True)
    line = hostile_lines(header, unit=FRESH_UNIT)["bare-cr-fragments"]
    assert line.startswith(b"999,free text\r1000\r1001\r") and line.endswith(b"\r1499,3")
    changes = [c for c in csv_changes(header, rows, "add-remove", {"bare-cr-fragments": line}) if c.at == len(c.records)]
    query = Query(statistic="count", epsilon=1.0, privacy_unit="id", max_contributions=1)
    assert query.parts[0].sensitivity == 1.0
    for face in (engine_face("spark"), engine_face("spark", dtypes={"id": "integer"})):
        (result,) = file_search(face, queries=[query], changes=changes, face="spark", directory=tmp_path, shrink=False)
        assert not result.violated, str(result)
        assert result.shift == 1.0  # one line, one record, one unit


@pytest.mark.spark
def test_spark_replacing_a_line_by_an_empty_line_keeps_the_count(spark_small: Any, tmp_path: Path) -> None:
    """Issue 17: under replace-one, `count()` has Δ = 0 (no noise); replacing one line of a 200-row
    CSV by an empty line moved Spark's count 200 → 199. An empty line is a record (of nulls)."""
    header, rows = _two_hundred(unit=False)
    changes = [c for c in csv_changes(header, rows, "replace-one", {"empty": b""}) if c.at == 100]
    query = Query(statistic="count", epsilon=1.0, neighbours="replace-one")
    assert query.parts[0].sensitivity == 0.0
    spark_face = engine_face("spark")
    (result,) = file_search(spark_face, queries=[query], changes=changes, face="spark", directory=tmp_path, shrink=False)
    assert not result.violated, str(result)
    assert result.shift == 0.0
