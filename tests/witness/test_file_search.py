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

import math
import random
import re
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import polars as pl
import pytest

from dpwitness.query.queries import Query, Statistic, derivation_cases
from dpwitness.serve.config import parse_table
from dpwitness.serve.tables import load_table
from dpwitness.witness.file_search import (
    FRESH_UNIT,
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
