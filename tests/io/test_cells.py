"""One cell grammar for both engines (issue 26, item 3): a cell is read as a number, a boolean or
text, and a typed value written as text, the same on Polars, on Spark and in the pure-Python
reference of :mod:`dpwitness.io.cells`.

The tricky cells are written to real CSV files and read through each engine's ``open`` with
declared types, so the whole path is tested: the reader, the declaration, the grammar.
"""

from __future__ import annotations

import datetime as dt
import math
import random
import struct
from pathlib import Path
from typing import Any

import polars as pl
import pytest

from dpwitness.engines import engine_for
from dpwitness.engines import polars as polars_engine
from dpwitness.engines.joins import join_public, prepare_public
from dpwitness.io import cells
from dpwitness.io.reader import Dialect, scan_polars
from dpwitness.query.queries import ColumnKind, Query

KEY = (1, 2, 3, 4)

# Each entry is one cell as written in the CSV file (quoted where CSV needs it): spaces of every
# kind, suffixes and spellings other number syntaxes accept, booleans, dates and timestamps.
RAW_CELLS = [
    "5", "+5", "-5", "007", "-0", " 5", "5 ", "\t5\t", " \t5 \t", "\u00a05", "5\u00a0", "\u20035", "5\u2003",
    "\u30005", "\u200b5", "5\x00", "\x005", "\ufeff5", '"5"', '" 5 "', '"5\r"', "5.", ".5", "5.25", "-.5e-3", "1e+20",
    "1E5", "1e", "e5", ".", "+", "-", "1e999", "-1e999", "4.9e-324", "9223372036854775807", "9223372036854775808",
    "-9223372036854775808", "-9223372036854775809", "5.0", "7d", "2.5f", "5L", "0x1p4", "0x10", "1_000", '"1,000"',
    "Infinity", "-Infinity", "inf", "NaN", "nan", "٥", "true", "TRUE", "True", " false\t", "FaLsE", "yes", "no",
    "1", "0", "t", "f", "fal\u017fe", "\u212aey", "true\u00a0", "2024-01-31", "2024-01-31 12:30:00",
    "2024-01-31T12:30:00.5Z", "31/01/2024", "", '""', '" "', '"text, quoted"', "é",
]  # fmt: skip
COLUMNS = ("i", "f", "b", "s", "u")  # declared integer, float, boolean, string; u untyped, read as numbers
DTYPES = {"i": "integer", "f": "float", "b": "boolean", "s": "string"}


def _write(path: Path, raws: list[str]) -> Path:
    lines = [",".join(COLUMNS)] + [",".join([raw] * len(COLUMNS)) for raw in raws]
    path.write_bytes(("\n".join(lines) + "\n").encode())
    return path


def _reference(raws: list[str]) -> list[tuple[Any, ...]]:
    """The table under the reader's rules (the cut) and the grammar's reference (the types)."""
    rows = []
    for raw in raws:
        text = Dialect(",").cells(raw)[0][0]  # the reader's own reference for the cell's text
        rows.append((cells.read_integer(text), cells.read_number(text), cells.read_boolean(text), text, cells.read_number(text)))
    return rows


@pytest.fixture(scope="module")
def corpus(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return _write(tmp_path_factory.mktemp("cells") / "cells.csv", RAW_CELLS)


def _polars_rows(path: Path) -> list[tuple[Any, ...]]:
    table = engine_for("polars").open(path, dtypes=DTYPES)
    return table.frame.with_columns(polars_engine._as_number("u")).collect().rows()


def test_the_reference_reads_cells_as_the_grammar_says() -> None:
    assert [cells.read_integer(c) for c in ("5", " +5\t", "007", "5.0", "\u00a05", "5\x00", "9223372036854775808")] == [
        5, 5, 7, None, None, None, None,
    ]  # fmt: skip
    assert [cells.read_number(c) for c in ("5.", ".5", "1e+20", "7d", "2.5f", "0x1p4", "1_000", "inf", "NaN", "1e999")] == [
        5.0, 0.5, 1e20, None, None, None, None, None, None, math.inf,
    ]  # fmt: skip
    assert [cells.read_boolean(c) for c in ("TRUE", " True", "false", "yes", "1", "fal\u017fe", "true\u00a0")] == [
        True, True, False, None, None, None, None,
    ]  # fmt: skip
    assert [cells.write(v) for v in (1e20, 1e23, 5e-324, 0.0001, 1e-5, 2.5, 100.0, 1e16, -0.0, math.inf, True, 7)] == [
        "1e+20", "1e+23", "5e-324", "0.0001", "1e-05", "2.5", "100.0", "1e+16", "-0.0", "inf", "true", "7",
    ]  # fmt: skip
    tz = dt.timezone(dt.timedelta(hours=2))
    assert cells.write(dt.datetime(2024, 1, 31, 14, 30, 0, 5, tzinfo=tz)) == "2024-01-31 12:30:00.000005"
    assert cells.write(dt.date(2024, 1, 31)) == "2024-01-31"


def test_polars_reads_every_cell_as_the_reference(corpus: Path) -> None:
    assert _polars_rows(corpus) == _reference(RAW_CELLS)


def test_the_service_loader_reads_every_cell_as_the_reference(corpus: Path) -> None:
    """The service loads a table through the engine with its config's schema (a column with bounds
    and no type is read as a number), so through the grammar."""
    from dpwitness.serve.config import parse_table
    from dpwitness.serve.tables import load_table

    section = {  # as parsed from TOML; s (no bounds, no categories: not exposed) is loaded as the privacy unit, text
        "path": str(corpus),
        "privacy_unit": "s",
        "columns": {
            "i": {"type": "integer", "bounds": [0, 1]},
            "f": {"type": "float", "bounds": [0, 1]},
            "b": {"type": "boolean", "categories": [True, False]},
            "u": {"bounds": [0, 1]},
        },
    }
    loaded = load_table(parse_table("cells", section, base=corpus.parent))
    assert loaded.frame.select([*DTYPES, "u"]).rows() == _reference(RAW_CELLS)


# --- the findings of issue 26 -------------------------------------------------------------------

NINE = ["1", "+2", " 3", "4\u00a0", "7d", "2.5f", "0x1p4", "\u20035", "5\x00"]
NINE_BOOLEANS = ["true", "TRUE", " True", "true\u00a0", "\u2003true", "yes", "1", "t", "true\x00"]


def _nine(path: Path) -> Path:
    lines = ["x,b", *(f"{x},{b}" for x, b in zip(NINE, NINE_BOOLEANS, strict=True))]
    path.write_bytes(("\n".join(lines) + "\n").encode())
    return path


def _nine_answers(engine: str, path: Path) -> dict[str, Any]:
    chosen = engine_for(engine)
    opened = chosen.open(path, dtypes={"b": "boolean"})
    summed = chosen.aggregate(opened, Query(statistic="sum", column="x", bounds=(0, 100), epsilon=1.0), selection_key=KEY)
    histogram = chosen.aggregate(opened, Query(statistic="histogram", column="b", epsilon=1.0), selection_key=KEY)
    return {"numbers": summed["count"], "sum": summed["sum"], "true": histogram["count"].get(True, 0.0)}


def test_the_nine_row_example_is_read_as_the_reference_on_polars(tmp_path: Path) -> None:
    numbers = [n for n in map(cells.read_number, NINE) if n is not None]
    want = {"numbers": len(numbers), "sum": sum(min(max(n, 0), 100) for n in numbers), "true": 3.0}
    assert want == {"numbers": 3, "sum": 6.0, "true": 3.0}
    assert _nine_answers("polars", _nine(tmp_path / "nine.csv")) == want


def _count(engine: str, path: Path) -> float:
    opened = engine_for(engine).open(path)
    return float(engine_for(engine).aggregate(opened, Query(statistic="count", epsilon=1.0), selection_key=KEY)["count"])


def test_a_lone_byte_order_mark_record_is_one_record(tmp_path: Path) -> None:
    path = tmp_path / "bom.csv"
    path.write_bytes(b"a,b\n\xef\xbb\xbf")  # the header, then a record that is U+FEFF alone, no final newline
    assert scan_polars(path).collect().rows() == scan_polars(path, exact=True).collect().rows() == [("\ufeff", None)]
    assert _count("polars", path) == 1.0
    neighbour = tmp_path / "neighbour.csv"
    neighbour.write_bytes(b"a,b\nx")  # the same file with that one record replaced: the same count
    assert _count("polars", neighbour) == 1.0


KEYED = ["1e+20", "2.5", "true", "7", "1.0E20", "True", "7.0", "+7"]
KEYS = (1e20, 2.5, True, 7)


def _keyed_counts(engine: str, path: Path) -> Any:
    chosen = engine_for(engine)
    query = Query(statistic="count", by=("x",), keys=KEYS, epsilon=1.0)
    return chosen.aggregate(chosen.open(path), query, selection_key=KEY)["count"]


def _keyed(path: Path) -> Path:
    path.write_text("x\n" + "\n".join(KEYED) + "\n")
    return path


def test_declared_keys_of_a_text_column_are_written_as_the_grammar_writes_them(tmp_path: Path) -> None:
    """A declared key matches a text cell written as :func:`cells.write` writes it (``True`` is
    ``true``, ``1e20`` is ``1e+20``): the declared keys are public, the cells are compared as text."""
    assert [cells.write(k) for k in KEYS] == KEYED[:4]
    assert _keyed_counts("polars", _keyed(tmp_path / "keyed.csv")) == {1e20: 1.0, 2.5: 1.0, True: 1.0, 7: 1.0}


# --- values written as text ----------------------------------------------------------------------

FLOATS = [1e20, 0.1, 100.0, 1e16, 1e15, 1.5e-5, 1e-4, 2.5, -0.0, 0.0, 123456789.0, 1e7, 1e22, 1e23, 5e-324, 2.82879384806159e17,
          1.7976931348623157e308, -3.25, math.inf, -math.inf, math.nan, None]  # fmt: skip
_BITS = random.Random(26)  # and floats of every magnitude: random bit patterns (a NaN among them is written nan)
FLOATS += [struct.unpack("<d", _BITS.getrandbits(64).to_bytes(8, "little"))[0] for _ in range(2000)]
FLOATS += [round(_BITS.uniform(-1000, 1000), _BITS.randint(0, 6)) for _ in range(500)]
MOMENTS = [dt.datetime(2024, 1, 31, 12, 30), dt.datetime(1999, 12, 31, 23, 59, 59, 999999), dt.datetime(1970, 1, 1, 0, 0, 0, 5)]


TYPES = {
    "f": pl.Float64,
    "i": pl.Int64,
    "b": pl.Boolean,
    "d": pl.Date,
    "t": pl.Datetime("us"),
    "z": pl.Datetime("us", "Europe/Paris"),
}


def _typed(path: Path) -> Path:
    n = len(FLOATS)
    moments = (MOMENTS * n)[:n]
    frame = pl.DataFrame(
        {
            "f": FLOATS,
            "i": [(-1) ** k * 7 ** (k % 22) for k in range(n)],
            "b": [k % 3 == 0 if k % 5 else None for k in range(n)],
            "d": [m.date() for m in moments],
            "t": moments,
            "z": [m.replace(tzinfo=dt.UTC) for m in moments],
        },
        schema=TYPES,
    )
    frame.write_parquet(path)
    return path


TEXT = {"f": "string", "i": "string", "b": "string", "d": "string", "t": "string", "z": "string"}


def test_polars_writes_typed_values_as_the_reference(tmp_path: Path) -> None:
    path = _typed(tmp_path / "typed.parquet")
    want = [tuple(cells.write(v) for v in row) for row in pl.read_parquet(path).rows()]
    assert engine_for("polars").open(path, dtypes=TEXT).frame.collect().rows() == want


# --- Spark: the same tables ----------------------------------------------------------------------


def _spark_rows(path: Path) -> list[tuple[Any, ...]]:
    from dpwitness.engines import spark as spark_engine

    table = engine_for("spark").open(path, dtypes=DTYPES)
    return [tuple(row) for row in table.frame.withColumn("u", spark_engine._as_number("u")).collect()]


@pytest.mark.spark
def test_spark_reads_every_cell_as_polars_and_the_reference(spark: Any, spark_small_tables: Any, corpus: Path) -> None:
    with spark_small_tables(spark):
        assert _spark_rows(corpus) == _polars_rows(corpus) == _reference(RAW_CELLS)


@pytest.mark.spark
def test_the_nine_row_example_gives_one_answer_on_both_engines(spark: Any, spark_small_tables: Any, tmp_path: Path) -> None:
    path = _nine(tmp_path / "nine.csv")
    with spark_small_tables(spark):
        assert _nine_answers("spark", path) == _nine_answers("polars", path) == {"numbers": 3, "sum": 6.0, "true": 3.0}


@pytest.mark.spark
def test_spark_writes_typed_values_as_polars_and_the_reference(spark: Any, spark_small_tables: Any, tmp_path: Path) -> None:
    path = _typed(tmp_path / "typed.parquet")
    want = [tuple(cells.write(v) for v in row) for row in pl.read_parquet(path).rows()]
    with spark_small_tables(spark):
        got = [tuple(row) for row in engine_for("spark").open(path, dtypes=TEXT).frame.collect()]
    assert got == want


@pytest.mark.spark
def test_a_join_on_a_datetime_key_matches_alike_on_both_engines(spark: Any, spark_small_tables: Any, tmp_path: Path) -> None:
    moments = [dt.datetime(2024, 1, 1) + dt.timedelta(hours=7 * k, microseconds=250_000 * (k % 3)) for k in range(40)]
    private = tmp_path / "private.parquet"
    pl.DataFrame({"t": moments * 3 + [dt.datetime(2030, 1, 1)]}, schema={"t": pl.Datetime("us")}).write_parquet(private)
    labels = [f"l{k}" for k in range(20)]
    public = pl.DataFrame({"t": moments[::2], "label": labels}, schema={"t": pl.Datetime("ms"), "label": pl.String})
    prepared = prepare_public(public, key="t", private_kind=ColumnKind.STRING, columns={"label": "label"})
    counts = {}
    with spark_small_tables(spark):
        for name in ("polars", "spark"):
            engine = engine_for(name)
            joined = join_public(engine, engine.open(private, dtypes={"t": "string"}), prepared, left="t")
            counts[name] = engine.aggregate(joined, Query(statistic="count", epsilon=1.0), selection_key=KEY)["count"]
    assert counts == {"polars": 60.0, "spark": 60.0}


@pytest.mark.spark
def test_a_lone_byte_order_mark_record_is_one_record_on_spark(spark: Any, spark_small_tables: Any, tmp_path: Path) -> None:
    path = tmp_path / "bom.csv"
    path.write_bytes(b"a,b\n\xef\xbb\xbf")
    with spark_small_tables(spark):
        assert [tuple(r) for r in engine_for("spark").open(path).frame.collect()] == [("\ufeff", None)]
        spark_count = _count("spark", path)
    assert spark_count == _count("polars", path) == 1.0


@pytest.mark.spark
def test_declared_keys_of_a_text_column_match_alike_on_spark(spark: Any, spark_small_tables: Any, tmp_path: Path) -> None:
    path = _keyed(tmp_path / "keyed.csv")
    with spark_small_tables(spark):
        assert _keyed_counts("spark", path) == _keyed_counts("polars", path) == {1e20: 1.0, 2.5: 1.0, True: 1.0, 7: 1.0}
