"""The dialect corpus: one reader, one table on every face (Polars, Spark, the service's loader).

Each file is written the way real tools write CSV (Python's ``csv`` module, pandas'
``to_csv``, Excel's ``\\r\\n`` with a byte-order mark, a TSV) or by hand the way hostile or
broken files look (unbalanced quotes, bare ``\\r``, empty lines, NUL, invalid UTF-8, a 1 MB
line, ragged lines, a line equal to the header). For each, the table every face reads must
equal :func:`reference` — Python's ``csv`` module applied line by line under the documented
rules (dpwitness.io.reader) — and DP answers at a large ε must equal the exact answers on it.
"""

from __future__ import annotations

import csv
import io
import math
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pandas as pd
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from typer.testing import CliRunner

from dpwitness import Session
from dpwitness.cli import app
from dpwitness.common.errors import ParameterError
from dpwitness.engines import engine_for
from dpwitness.io.cells import read_number
from dpwitness.io.reader import _scan_native, dialect_for, header, native_is_exact, scan_polars
from dpwitness.io.schema import Schema
from dpwitness.serve.config import parse_table
from dpwitness.serve.tables import load_table

Row = tuple[str | None, ...]
_CR = "\ue000"  # stands for a bare \r while the csv module parses (it would end the record)
csv.field_size_limit(1 << 24)  # the default (128 KiB) would refuse the corpus' 1 MB cell


# --- the reference: Python's csv module, line by line, under the documented rules -------------


def _cells(line: str, separator: str) -> list[str | None]:
    """The cells of one line: the longest prefix that ends at a separator (or at the end) and
    that ``csv`` parses strictly; a quoted cell is text (``""`` is the empty text), an empty
    unquoted cell is null."""
    cuts = [len(line), *(i for i in range(len(line) - 1, -1, -1) if line[i] == separator)]
    for cut in cuts:
        prefix = line[:cut]
        try:
            rows = list(csv.reader([prefix.replace("\r", _CR)], delimiter=separator, strict=True))
        except csv.Error:
            continue
        fields = [f.replace(_CR, "\r") for f in rows[0]] if rows else []
        cells: list[str | None] = []
        position = 0
        for field in fields:  # was this field quoted? Its raw text starts with a quote.
            quoted = prefix[position : position + 1] == '"'
            cells.append(field if quoted else field or None)
            position += (len(field.replace('"', '""')) + 2 if quoted else len(field)) + 1
        return cells
    return []


def reference(data: bytes, separator: str = ",") -> tuple[tuple[str, ...], list[Row]]:
    """Header and records of a CSV file's bytes under the documented rules."""
    text = data.decode("utf-8", errors="replace").removeprefix("\ufeff")
    lines = text.split("\n")
    if lines[-1] == "":
        lines.pop()  # a final \n ends the last record; it does not start one
    lines = [line.removesuffix("\r") for line in lines]
    names = tuple(c or "" for c in _cells(lines[0], separator))
    records = []
    for line in lines[1:]:
        cells = _cells(line, separator)[: len(names)]
        records.append(tuple(cells + [None] * (len(names) - len(cells))))
    return names, records


# --- the corpus ------------------------------------------------------------------------------

HEADER = ["id", "name", "age", "sex"]
PEOPLE: list[list[Any]] = [
    [1, "Doe, Jane", 35, "F"],
    [2, 'he said "hi"', 41, "M"],
    [3, "", 28, "F"],
    [4, "plain", None, "M"],
    [5, "a;b\tc", 52, "F"],
    [6, "two\nlines", 60, "M"],  # a writer quotes it across two physical lines: two records here
    [7, " spaced ", 19, None],
    [8, "ünïcødé", 77, "F"],
]


def _python_csv() -> bytes:
    out = io.StringIO(newline="")
    writer = csv.writer(out)  # the excel dialect: \r\n, minimal quoting
    writer.writerows([HEADER, *PEOPLE])
    return out.getvalue().encode()


def _pandas() -> bytes:
    frame = pd.DataFrame(PEOPLE, columns=HEADER)
    return str(frame.to_csv(index=False)).encode()


def _excel_bom() -> bytes:
    out = io.StringIO(newline="")
    csv.writer(out, quoting=csv.QUOTE_ALL).writerows([HEADER, *PEOPLE])
    return out.getvalue().encode("utf-8-sig")


def _tsv() -> bytes:
    out = io.StringIO(newline="")
    csv.writer(out, delimiter="\t", lineterminator="\n").writerows([HEADER, *PEOPLE])
    return out.getvalue().encode()


HOSTILE_LINES = [
    b'9,"unclosed,30,F',  # a quote that never closes: only this record
    b'10,"closed"then text,40,M',  # text after a closing quote
    b"11,bare\rreturn,45,F",  # a bare \r is a character, not a record end
    b"",  # an empty line: a record of nulls
    b"12,nul\x00byte,50,M",
    b"13,trailing,55,F,",  # a trailing separator
    b"14,short",  # ragged: too few
    b"15,long,65,M,extra,more",  # ragged: too many
    b"16,bad \xff\xfe utf8 \xe2\x82,70,F",  # invalid UTF-8: replaced
    b'17,"",75,M',  # quoted empty: the empty text, not null
    b"18,,80,",  # empty: null
    b"id,name,age,sex",  # a line equal to the header is a record, not a header
    b"19,crlfcr,85,F\r\r",  # \r\r\n: one \r dropped
    b"\xef\xbb\xbf20,bom inside,90,M",  # a BOM after the first line is text
    b'21,"a ""quoted"" word, and a comma",95,F',
    b"22,5'11\",x,M",  # a quote inside an unquoted cell; a non-number age
    b"\r",  # an empty line as Excel writes it (\r\n): a record of nulls
    b'24,"quoted\rreturn",34,M',  # a bare \r inside quotes
    b"23,last line without newline, 33 ,F",
]


def _hostile() -> bytes:
    return b"id,name,age,sex\r\n" + b"\n".join(HOSTILE_LINES)


def _one_megabyte() -> bytes:
    big = "x" * (1 << 20)
    return f'id,name,age,sex\n1,"{big}, still one cell",40,F\n2,{big},50,M\n3,after,60,F\n'.encode()


def _header_only() -> bytes:
    return b"id,name,age,sex\n"


def _one_line_each(write: Callable[[], bytes]) -> Callable[[], bytes]:
    """The same writer's file without the record it spread over two lines."""

    def written() -> bytes:
        data = write()
        start = data.rindex(b"\n", 0, data.index(b'"two')) + 1
        return data[:start] + data[data.index(b"\n", data.index(b'lines"', start)) + 1 :]

    return written


CORPUS: dict[str, tuple[str, Callable[[], bytes]]] = {
    "python-csv": (".csv", _python_csv),
    "python-csv, one line each": (".csv", _one_line_each(_python_csv)),
    "pandas, one line each": (".csv", _one_line_each(_pandas)),
    "excel-bom, one line each": (".csv", _one_line_each(_excel_bom)),
    "tsv, one line each": (".tsv", _one_line_each(_tsv)),
    "pandas": (".csv", _pandas),
    "excel-bom": (".csv", _excel_bom),
    "tsv": (".tsv", _tsv),
    "hostile": (".csv", _hostile),
    "one-megabyte": (".csv", _one_megabyte),
    "header-only": (".csv", _header_only),
}


@pytest.fixture(scope="module")
def corpus(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Path]:
    folder = tmp_path_factory.mktemp("corpus")
    paths = {}
    for name, (suffix, write) in CORPUS.items():
        paths[name] = folder / f"{name}{suffix}"
        paths[name].write_bytes(write())
    return paths


def _separator(path: Path) -> str:
    return "\t" if path.suffix == ".tsv" else ","


def _expected(path: Path) -> tuple[tuple[str, ...], list[Row]]:
    return reference(path.read_bytes(), _separator(path))


def test_the_reference_reads_what_the_writers_wrote() -> None:
    """The reference itself: the well-formed writers' files give back what was written (the
    field with a line break becomes two records, as the rules say)."""
    for write in (_python_csv, _pandas, _excel_bom):
        names, rows = reference(write())
        age = "35.0" if write is _pandas else "35"  # pandas writes a column with a missing value as floats
        assert names == tuple(HEADER) and len(rows) == len(PEOPLE) + 1
        assert rows[0] == ("1", "Doe, Jane", age, "F") and rows[1][:2] == ("2", 'he said "hi"')
        assert rows[5] == ("6", None, None, None) and rows[6][0] == 'lines"' and rows[6][2:] == ("M", None)
    names, rows = reference(_hostile())
    assert rows[0] == ("9", None, None, None) and rows[1] == ("10", None, None, None)
    assert rows[2] == ("11", "bare\rreturn", "45", "F") and rows[3] == (None,) * 4
    assert rows[9] == ("17", "", "75", "M") and rows[10] == ("18", None, "80", None)
    assert rows[11] == tuple(HEADER) and rows[12] == ("19", "crlfcr", "85", "F\r")


@pytest.mark.parametrize("name", list(CORPUS))
def test_polars_reads_the_reference_table(corpus: dict[str, Path], name: str) -> None:
    path = corpus[name]
    names, rows = _expected(path)
    frame = engine_for("polars").open(path).frame.collect()
    assert tuple(frame.columns) == names
    assert frame.rows() == rows


@pytest.mark.parametrize("name", list(CORPUS))
def test_the_service_loader_reads_the_reference_table_with_the_configs_types(corpus: dict[str, Path], name: str) -> None:
    path = corpus[name]
    _, rows = _expected(path)
    texts = sorted({r[1] for r in rows if r[1] is not None}) or ["none"]
    columns = {  # the table's [columns] as parsed from TOML: no types, so bounds → float, categories → string
        "id": {"bounds": [0, 100]},
        "name": {"categories": texts},
        "age": {"bounds": [0, 100]},
        "sex": {"categories": ["F", "M"]},
    }
    table = load_table(parse_table("t", {"path": str(path), "columns": columns}, base=path.parent))
    got = table.frame.with_columns(table.frame["name"].cast(str), table.frame["sex"].cast(str)).rows()
    want = [(_number(i), n, _number(a), s if s in ("F", "M") else None) for i, n, a, s in rows]
    assert got == want


def _number(cell: str | None) -> float | None:
    """A cell read as a number (the rule of every face: the cell grammar, else null)."""
    return read_number(cell)


def _exact_answers(rows: list[Row]) -> dict[str, Any]:
    ages = [a for a in (_number(r[2]) for r in rows) if a is not None and not math.isnan(a)]
    clamped = [min(max(a, 0.0), 100.0) for a in ages]
    return {
        "count": len(rows),
        "sum": sum(clamped),
        "mean": sum(clamped) / len(clamped) if clamped else None,
        "older": sum(1 for a in ages if a >= 40),
        "sex": {k: sum(1 for r in rows if r[3] == k) for k in ("F", "M")},
    }


def _dp_answers(path: Path, engine: str) -> dict[str, Any]:
    big = 1000.0  # the largest calibrated ε: count noise ~ 0.001, sum noise ~ 0.1
    # age declared float: every cell read as numbers by the cell grammar (one that does not parse is missing)
    session = Session(path, epsilon=5 * big, seed=11, engine=engine, dtypes={"age": "float"})
    answers: dict[str, Any] = {
        "count": session.count(epsilon=big).value,
        "sum": session.sum("age", (0, 100), epsilon=big).value,
        "older": session.count(epsilon=big, where="age >= 40").value,
        "sex": session.histogram("sex", ["F", "M"], epsilon=big).value,
    }
    answers["mean"] = session.mean("age", (0, 100), epsilon=big).value
    return answers


def _assert_close(got: dict[str, Any], want: dict[str, Any]) -> None:
    for name, tolerance in (("count", 0.05), ("sum", 2.0), ("older", 0.05)):  # ≥ 20 noise scales
        assert got[name] == pytest.approx(want[name], abs=tolerance), name
    assert dict(got["sex"]) == pytest.approx(want["sex"], abs=0.05)
    if want["mean"] is not None:
        assert got["mean"] == pytest.approx(want["mean"], abs=0.5)


@pytest.mark.parametrize("name", [n for n, (suffix, _) in CORPUS.items() if n != "header-only"])
def test_dp_answers_at_a_large_epsilon_are_the_exact_answers_on_polars(corpus: dict[str, Path], name: str) -> None:
    path = corpus[name]
    _assert_close(_dp_answers(path, "polars"), _exact_answers(_expected(path)[1]))


@pytest.mark.spark
def test_spark_reads_the_same_table_and_answers_on_every_file(spark: Any, corpus: dict[str, Path]) -> None:
    engine = engine_for("spark")
    for name, path in corpus.items():
        names, rows = _expected(path)
        frame = engine.open(path).frame
        assert tuple(frame.columns) == names, name
        assert sorted(map(tuple, frame.collect()), key=repr) == sorted(rows, key=repr), name
    path = corpus["hostile"]  # the DP path on Spark once (each Spark query is a job: seconds)
    _assert_close(_dp_answers(path, "spark"), _exact_answers(_expected(path)[1]))


# --- bad input: one-line errors before anything is read or spent -------------------------------


@pytest.mark.parametrize(
    ("content", "why"),
    [
        (b"", "empty file"),
        (b"\nid,age\n1,2\n", "no header"),
        (b'id,"age\n1,2\n', "malformed header"),
        (b"id,,age\n1,2,3\n", "empty name"),
        (b"id,id\n1,2\n", "repeated name"),
    ],
)
def test_a_file_without_a_usable_header_is_refused_on_every_face(tmp_path: Path, content: bytes, why: str) -> None:
    path = tmp_path / "bad.csv"
    path.write_bytes(content)
    with pytest.raises(ParameterError) as caught:
        engine_for("polars").open(path)
    assert caught.value.parameter == "source" and "\n" not in str(caught.value), why
    session = Session(path, epsilon=1.0)
    with pytest.raises(ParameterError):
        session.count(epsilon=0.5)
    assert session.spent.epsilon == 0
    with pytest.raises(ParameterError):
        load_table(parse_table("t", {"path": str(path), "columns": {"age": {"bounds": [0, 1]}}}, base=tmp_path))
    result = CliRunner().invoke(app, ["query", str(path), "--count", "--epsilon", "1"])
    assert result.exit_code == 2 and "source" in result.output and "Traceback" not in result.output
    assert len(result.output.strip().splitlines()) == 1


def test_an_unknown_separator_is_refused(tmp_path: Path) -> None:
    path = tmp_path / "t.csv"
    path.write_text("a,b\n1,2\n")
    with pytest.raises(ParameterError) as caught:
        engine_for("polars").open(path, separator=":")
    assert caught.value.parameter == "separator"
    table = engine_for("polars").open(path, separator=";")
    assert table.frame.collect().rows() == [("1,2",)]


def test_one_line_changes_one_record_only(tmp_path: Path) -> None:
    """Replacing any line of a file by any hostile line changes exactly that record: every other
    record, and the number of records, stay as they were."""
    base = [f"{i},n{i},{20 + i},{'FM'[i % 2]}".encode() for i in range(30)]
    for hostile in HOSTILE_LINES:
        for where in (0, 15, 29):
            lines = list(base)
            lines[where] = hostile
            path = tmp_path / "one.csv"
            path.write_bytes(b"id,name,age,sex\n" + b"\n".join(lines) + b"\n")
            rows = engine_for("polars").open(path).frame.collect().rows()
            original = reference(b"id,name,age,sex\n" + b"\n".join(base) + b"\n")[1]
            assert len(rows) == len(original)
            assert [r for i, r in enumerate(rows) if i != where] == [r for i, r in enumerate(original) if i != where]


@pytest.mark.spark
def test_spark_splits_a_file_across_tasks_and_drops_only_the_header(spark: Any, tmp_path: Path) -> None:
    """With 64 KiB splits a 1 MB file is read by many tasks: every line is one record, the header
    (offset 0) is dropped once, and a line equal to the header elsewhere stays a record."""
    lines = [f'{i},"n, {i}",{i % 90}' for i in range(40_000)]
    lines[20_000] = "id,name,age"
    path = tmp_path / "split.csv"
    path.write_text("id,name,age\n" + "\n".join(lines) + "\n")
    previous = spark.conf.get("spark.sql.files.maxPartitionBytes")
    spark.conf.set("spark.sql.files.maxPartitionBytes", str(64 * 1024))
    try:
        frame = engine_for("spark").open(path).frame
        assert frame.rdd.getNumPartitions() > 4
        got = sorted(map(tuple, frame.collect()), key=repr)
    finally:
        spark.conf.set("spark.sql.files.maxPartitionBytes", previous)
    assert got == sorted(reference(path.read_bytes())[1], key=repr)


def test_the_service_loader_types_and_starts_alike_whatever_one_record_holds(tmp_path: Path) -> None:
    """No type oracle, no start-up that depends on a record: one changed line (a float where
    integers were, early or after row 10,000; an unclosed quote; an empty line) leaves the
    loaded table's types, and its number of rows, as they were."""
    base = ["id,hours,sex"] + [f"{i},40,{'FM'[i % 2]}" for i in range(12_000)]
    variants = {"same": {}, "early float": {5: "5,37.5,M"}, "late float": {11_000: "11000,37.5,F"}}
    variants |= {"unclosed quote": {7: '7,"40,F'}, "empty line": {9: ""}, "text": {3: "3,forty,M"}}
    columns = {"hours": {"bounds": [0, 99]}, "sex": {"categories": ["F", "M"]}}  # [columns] as parsed from TOML
    schemas = set()
    for name, changes in variants.items():
        lines = list(base)
        for index, line in changes.items():
            lines[index + 1] = line
        path = tmp_path / f"{name}.csv"
        path.write_text("\n".join(lines) + "\n")
        table = load_table(parse_table("t", {"path": str(path), "columns": columns}, base=tmp_path))
        assert table.frame.height == 12_000, name
        schemas.add(str(table.frame.schema))
        assert table.frame["hours"].dtype.is_float()
    assert len(schemas) == 1


def test_a_declared_separator_reaches_the_reader_through_the_session(tmp_path: Path) -> None:
    path = tmp_path / "semicolons.csv"
    path.write_text('id;name;age\n1;"Doe; Jane";40\n2;Lee;50\n')
    session = Session(path, epsilon=2000.0, separator=";", seed=3, dtypes={"age": "integer"})
    assert session.sum("age", (0, 100), epsilon=1000.0).value == pytest.approx(90, abs=2.0)
    assert session.count(epsilon=1000.0, where="name = 'Doe; Jane'").value == pytest.approx(1, abs=0.05)
    with pytest.raises(ParameterError) as caught:
        Session(path, epsilon=1.0, separator=":")
    assert caught.value.parameter == "separator"


# --- the fast path: Polars' own parser, taken only where it gives exactly the same table ---------

FAST = {"python-csv, one line each", "pandas, one line each", "excel-bom, one line each", "tsv, one line each", "one-megabyte"}


def _native(path: Path) -> list[Row]:
    dialect = dialect_for(path)
    return _scan_native(path, dialect, header(path, dialect)).collect().rows()


@pytest.mark.parametrize("name", list(CORPUS))
def test_each_path_reads_the_reference_table_where_it_is_taken(corpus: dict[str, Path], name: str) -> None:
    """The exact cut always gives the reference; the byte check admits the writers' well-formed
    files (and refuses the others), and where it admits a file Polars' own parse is the reference."""
    path = corpus[name]
    _, rows = _expected(path)
    assert scan_polars(path, exact=True).collect().rows() == rows
    assert native_is_exact(path) == (name in FAST or name == "header-only")
    if native_is_exact(path):
        assert _native(path) == rows
        assert scan_polars(path).collect().rows() == rows


# Lines that sit at the fast path's edges: quotes at a field's boundaries, doubled, misplaced.
EDGE_LINES = [
    b'30,"a""b",1,F',
    b'31,"""",1,F',
    b'32,"a"",b",1,F',
    b'33,""a,1,F',
    b'34,"a"" ,1,F',
    b'35,a"b,1,F',
    b'36,"a" ,1,F',
    b'37, "a",1,F',
    b'"38","x",1,"F"',
    b'39,"a,1,F\n40,b",1,F',  # a quote pair across a line end: two malformed records
    b'41,"x"',  # ragged and quoted
    b'42,"a""',
    b"43,x,1,F\r\n44,y,2,M",
    b"",
]


def _hostile_in_quoted_base(line: bytes, where: int) -> bytes:
    lines = [f'{i},"n, {i}",{20 + i},{"FM"[i % 2]}'.encode() for i in range(30)]
    lines[where] = line
    return b"id,name,age,sex\n" + b"\n".join(lines) + b"\n"


def test_a_file_with_one_line_outside_the_fast_path_reads_the_exact_table(tmp_path: Path) -> None:
    """Every hostile or edge line, first, in the middle or last of a file of quoted records:
    the table read is the reference, whichever path the check picks; where the check picks
    the fast path, Polars' own parse is the reference too. Both outcomes occur."""
    taken = set()
    for number, line in enumerate(HOSTILE_LINES + EDGE_LINES):
        for where in (0, 15, 29):
            path = tmp_path / f"line{number}-{where}.csv"
            path.write_bytes(_hostile_in_quoted_base(line, where))
            _, rows = _expected(path)
            assert engine_for("polars").open(path).frame.collect().rows() == rows, (line, where)
            fast = native_is_exact(path)
            taken.add(fast)
            if fast:
                assert _native(path) == rows, (line, where)
    assert taken == {True, False}
    for line in (b'9,"unclosed,30,F', b'10,"closed"then text,40,M', b"11,bare\rreturn,45,F", b"22,5'11\",x,M", EDGE_LINES[9]):
        path = tmp_path / "fallback.csv"
        path.write_bytes(_hostile_in_quoted_base(line, 15))
        assert not native_is_exact(path), line


_FIELD = st.sampled_from(
    ["", "a", "x y", '"a"', '""', '"a""b"', '""""', '"a,b"', '"a', 'b"', 'a"b', '"a"b', '"a" ', "\r", "\ufeff", "\x00", '"\r"']
)
_LINE_OF_FIELDS = st.lists(_FIELD, min_size=0, max_size=5).map(",".join)


@settings(max_examples=200, deadline=None)
@given(st.lists(_LINE_OF_FIELDS, min_size=1, max_size=6))
def test_the_byte_check_never_admits_a_file_polars_reads_differently(lines: list[str]) -> None:
    """Random lines of well-formed, malformed and stray quoted fields, bare \\r, byte-order marks
    and NUL after a clean first record: whenever the check admits the file, Polars' own parse
    equals the reference (and the table read is the reference either way)."""
    import tempfile

    data = ("id,name,age\n1,x,2\n" + "\n".join(lines) + "\n").encode()
    with tempfile.TemporaryDirectory() as folder:
        path = Path(folder) / "random.csv"
        path.write_bytes(data)
        _, rows = reference(data)
        assert scan_polars(path).collect().rows() == rows
        if native_is_exact(path):
            assert _native(path) == rows


def test_the_check_is_redone_when_the_file_changes(tmp_path: Path) -> None:
    path = tmp_path / "changing.csv"
    path.write_bytes(_hostile_in_quoted_base(b"5,plain,25,F", 5))
    assert native_is_exact(path)
    path.write_bytes(_hostile_in_quoted_base(b'5,"unclosed,25,F', 5))
    assert not native_is_exact(path)
    assert scan_polars(path).collect().rows() == _expected(path)[1]


def test_the_check_reads_blocks_of_whole_lines(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """With 64-byte blocks, lines (one of 1,000 bytes) span blocks: the check still admits a clean
    file, ending with or without a line end, and still finds one stray quote in a late block."""
    from dpwitness.io import reader

    monkeypatch.setattr(reader, "_CHUNK", 64)
    lines = [f'{i},"n, {i}",{"y" * (1000 if i == 7 else 3)},{"FM"[i % 2]}'.encode() for i in range(40)]
    for name, data, admitted in [
        ("clean.csv", b"id,name,x,sex\n" + b"\n".join(lines) + b"\n", True),
        ("no-final-newline.csv", b"id,name,x,sex\n" + b"\n".join(lines), True),
        ("stray.csv", b"id,name,x,sex\n" + b"\n".join([*lines[:35], b'35,a"b,1,F', *lines[36:]]) + b"\n", False),
    ]:
        path = tmp_path / name
        path.write_bytes(data)
        assert native_is_exact(path) is admitted, name
        assert scan_polars(path).collect().rows() == _expected(path)[1], name


# --- a declared encoding: Latin-1 and cp1252 files read as their text on every engine --------

#: Each file's rows, written in its own encoding: é, € and the smart quotes are cp1252-only or Latin-1 bytes.
ENCODED = {
    "latin-1": [("name", "town"), ("José", "Ashby"), ("Renée", "Ashby"), ("Zoë", "Bourne")],
    "cp1252": [("name", "price", "note"), ("José", "€5", "“ok”"), ("Renée", "€6", "it’s"), ("Zoë", "€7", "")],
}


def _encoded(tmp_path: Path, encoding: str) -> Path:
    path = tmp_path / f"{encoding}.csv"
    path.write_bytes("".join(",".join(row) + "\r\n" for row in ENCODED[encoding]).encode(encoding))
    return path


def _rows(encoding: str) -> list[tuple[str | None, ...]]:
    return [tuple(cell or None for cell in row) for row in ENCODED[encoding][1:]]


@pytest.mark.parametrize("encoding", list(ENCODED))
def test_a_declared_encoding_reads_the_files_text_on_polars(tmp_path: Path, encoding: str) -> None:
    path = _encoded(tmp_path, encoding)
    assert b"\xe9" in path.read_bytes()  # é as one byte: not UTF-8
    for exact in (False, True):
        frame = scan_polars(path, encoding=encoding, exact=exact).collect()
        assert tuple(frame.columns) == ENCODED[encoding][0]
        assert frame.rows() == _rows(encoding)
    undeclared = scan_polars(path).collect()  # as before: the bytes that are not UTF-8 become U+FFFD
    assert undeclared["name"][0] == "Jos\ufffd"
    session = Session(str(path), epsilon=100, encoding=encoding, seed=7)
    release = session.histogram("name", ["José", "Renée", "Zoë"], epsilon=100)
    assert {key: round(v) for key, v in release.value.items()} == {"José": 1, "Renée": 1, "Zoë": 1}


def test_a_schemas_encoding_is_how_every_face_reads_the_file(tmp_path: Path) -> None:
    path = _encoded(tmp_path, "cp1252")
    written = Schema.infer(str(path), categories=5, encoding="cp1252")
    assert written.encoding == "cp1252" and written.categories["price"] == ("€5", "€6", "€7")
    toml = written.to_toml(source=path.name)
    assert 'encoding = "cp1252"' in toml
    (tmp_path / "cp1252.schema.toml").write_text(toml, encoding="utf-8")
    session = Session(str(path), epsilon=100, seed=7)  # the schema beside the file declares the encoding
    assert session.encoding == "cp1252"
    assert {key: round(v) for key, v in session.histogram("note", epsilon=100).value.items()} == {"it’s": 1, "“ok”": 1}
    with pytest.raises(ParameterError, match="encoding"):
        Session(str(path), epsilon=1, encoding="latin-1")  # contradicts the schema
    with pytest.raises(ParameterError, match=r"schema\.encoding"):
        Schema.from_toml('schema_version = 1\nencoding = "klingon"\n[columns.name]\ntype = "string"\n')


def test_the_service_reads_a_table_in_its_declared_encoding(tmp_path: Path) -> None:
    """The service's loader reads through the same reader: a schema beside the file (or the
    table's own ``encoding`` key) declares the encoding, and the categories are the file's text."""
    path = _encoded(tmp_path, "cp1252")
    body = {"path": str(path), "columns": {"note": {"type": "string", "categories": ["“ok”", "it’s"]}}}
    table = load_table(parse_table("t", {**body, "encoding": "cp1252"}, base=tmp_path))
    assert sorted(v for v in table.frame["note"].to_list() if v is not None) == ["it’s", "“ok”"]
    undeclared = load_table(parse_table("t", body, base=tmp_path))  # UTF-8: the smart quotes are not the file's text
    assert undeclared.frame["note"].null_count() == 3
    (tmp_path / "cp1252.schema.toml").write_text(
        Schema.infer(str(path), categories=5, encoding="cp1252").to_toml(), encoding="utf-8"
    )
    beside = load_table(parse_table("t", {"path": str(path)}, base=tmp_path))
    assert beside.schema.encoding == "cp1252" and "€5" in beside.frame["price"].to_list()


@pytest.mark.parametrize("encoding", ["klingon", "base64", 7])
def test_an_unknown_encoding_is_refused_naming_the_parameter_before_anything_is_read(tmp_path: Path, encoding: Any) -> None:
    missing = tmp_path / "absent.csv"  # never opened: the name is checked first
    with pytest.raises(ParameterError, match=r"^encoding must be a text encoding"):
        Session(str(missing), epsilon=1, encoding=encoding)
    done = CliRunner().invoke(app, ["query", str(missing), "--epsilon", "1", "--count", "--encoding", str(encoding)])
    assert done.exit_code == 2 and "--encoding must be a text encoding" in done.output
    done = CliRunner().invoke(app, ["schema", str(missing), "--encoding", str(encoding)])
    assert done.exit_code == 2 and "--encoding must be a text encoding" in done.output


@pytest.mark.spark
def test_a_declared_encoding_reads_the_same_table_on_spark(spark: Any, tmp_path: Path) -> None:
    engine = engine_for("spark")
    for encoding in ENCODED:
        path = _encoded(tmp_path, encoding)
        frame = engine.open(path, encoding=encoding).frame
        assert tuple(frame.columns) == ENCODED[encoding][0]
        assert sorted(map(tuple, frame.collect())) == sorted(_rows(encoding))


@pytest.mark.parametrize(
    ("first_line", "said"),
    [
        ("38,Ashby,,F\n", "no name at column 3 of 4"),
        ("38,Ashby,38,F\n", "column 3 repeats the name of column 1"),
    ],
)
def test_a_header_made_of_data_is_refused_without_quoting_it(tmp_path: Path, first_line: str, said: str) -> None:
    """A file without a header: its first record is read as the names. An empty or repeated "name"
    is refused by position, never by quoting the cells (they are one person's record)."""
    path = tmp_path / "headerless.csv"
    path.write_text(first_line + "41,Bourne,41,M\n", encoding="utf-8")
    with pytest.raises(ParameterError, match="source") as refused:
        header(path, dialect_for(path))
    message = str(refused.value)
    assert said in message and "Ashby" not in message and "38" not in message
