"""The data owner's file check: what the reader will do with a CSV, said before anyone queries it.

:func:`check_file` READS THE VALUES of the file (it is part of the data owner's step, ``dpwitness
schema FILE``, outside differential privacy) and reports, with counts and the first few line
numbers — never a cell's value:

* lines holding a bare ``\\r`` (old-Mac line ends: the reader cuts records at ``\\n`` only, so a
  file whose lines end in ``\\r`` alone is one header line holding everything);
* lines with bytes that are not UTF-8 (the reader replaces them by U+FFFD: a Latin-1 or cp1252
  file loses its accented letters unless its ``encoding`` is declared), or, with a declared
  encoding, lines with bytes that encoding cannot decode;
* malformed lines (a quote that does not close, text after a closing quote: the reader makes
  them records of nulls), ragged lines (fewer fields than the header: the missing cells are null;
  more: the extra fields are dropped) and empty lines (records of nulls);
* cells that will not parse as their column's declared or inferred type (the engines read them
  as missing), and, in a column inferred as text, the cells that are not numbers when most are.

It cuts lines at the reader's record boundary (:mod:`dpwitness.io.reader`: one ``\\n``-ended line is
one record, one ``\\r`` before the ``\\n`` dropped) and cuts fields with the reader's own
:class:`~dpwitness.io.reader.Dialect`, so it reports what every engine will read. Line numbers count
physical lines from 1 (the header). Query time never runs it: those counts describe the data.

A first line holding a bare ``\\r`` is refused by the reader itself
(:func:`dpwitness.io.reader.refuse_bare_returns`, at query time too): its "column names" are records,
and no message may quote them.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from dpwitness.common.errors import ParameterError, require
from dpwitness.io.reader import Dialect, check_encoding, dialect_for, header, utf8_path
from dpwitness.io.schema import POLARS_READERS, ColumnKind

#: How many line numbers each finding lists.
FIRST_LINES = 5


@dataclass
class Finding:
    """One kind of trouble: how many lines (or cells) have it and the first few line numbers."""

    kind: str
    what: str
    column: str | None = None
    count: int = 0
    lines: list[int] = field(default_factory=list)

    def add(self, line: int) -> None:
        self.count += 1
        if len(self.lines) < FIRST_LINES:
            self.lines.append(line)

    def text(self) -> str:
        where = ", ".join(str(n) for n in self.lines) + (", …" if self.count > len(self.lines) else "")
        subject = f"column {self.column!r}: " if self.column is not None else ""
        what = self.what if self.count > 1 else re.sub(r"\b(line|cell)s\b", r"\1", self.what, count=1)
        return f"{subject}{self.count:,} {what} (line{'s' if self.count > 1 else ''} {where})"

    def to_dict(self) -> dict[str, Any]:
        return {"kind": self.kind, "column": self.column, "count": self.count, "first_lines": list(self.lines)}


@dataclass(frozen=True)
class FileReport:
    """What the reader will do with a file: its records, its columns and every :class:`Finding`."""

    records: int
    columns: tuple[str, ...]
    findings: tuple[Finding, ...]

    @property
    def clean(self) -> bool:
        return not self.findings

    def text(self) -> str:
        """The report as lines of text (counts and line numbers only, never a cell)."""
        head = f"file check: {self.records:,} records under a header of {len(self.columns)} columns"
        if self.clean:
            return head + ": every line well formed, decodable, with the header's number of fields; every cell fits its type."
        return "\n".join([head + ":", *(f"  {f.text()}" for f in self.findings)])

    def to_dict(self) -> dict[str, Any]:
        return {"records": self.records, "columns": list(self.columns), "findings": [f.to_dict() for f in self.findings]}


def check_file(
    source: str | Path,
    *,
    separator: str | None = None,
    kinds: Mapping[str, ColumnKind] | None = None,
    encoding: str | None = None,
) -> FileReport:
    """READS THE VALUES of the CSV ``source`` and reports what the reader will do with each line (see the module).

    :param separator: the separator the file is read with (default as :func:`dpwitness.io.reader.dialect_for`).
    :param kinds: each column's declared or inferred type; cells that do not fit are counted per column
        (default: none checked). A ``string`` column is also checked for cells that are not numbers
        when most of its cells are.
    :param encoding: the file's declared text encoding (None: UTF-8); the file is checked as the
        reader reads it, transcoded to UTF-8 (:func:`dpwitness.io.reader.utf8_path`).
    """
    encoding = check_encoding(encoding)
    path = Path(source)
    if not path.is_file():
        raise ParameterError("source", "an existing CSV file", str(source))
    dialect = dialect_for(path, separator)
    path = utf8_path(path, encoding)
    names = header(path, dialect)
    bare = Finding("bare_cr", "lines holding a bare \\r (the reader ends records at \\n only; a \\r inside a line is text)")
    if encoding is None:
        what = "lines with bytes that are not UTF-8 (read as U+FFFD; Latin-1 or cp1252? declare it: --encoding cp1252)"
        invalid = Finding("not_utf8", what)
    else:  # the copy holds U+FFFD where the declared encoding could not decode a byte
        invalid = Finding("not_decoded", f"lines with bytes that are not {encoding} (read as U+FFFD)")
    fits = _is_utf8 if encoding is None else _no_replacement
    malformed = Finding("malformed", "malformed lines (an unclosed quote, or text after a closing quote): read as nulls")
    short = Finding("short", f"lines with fewer than the header's {len(names)} fields (the missing cells are null)")
    long = Finding("long", f"lines with more than the header's {len(names)} fields (the extra fields are dropped)")
    empty = Finding("empty", "empty lines (each a record of nulls)")
    records = 0
    with path.open("rb") as handle:
        first = handle.readline(1 << 24)
        if not fits(first):
            invalid.add(1)
        for number, raw in enumerate(handle, start=2):
            records += 1
            line = raw.removesuffix(b"\n").removesuffix(b"\r")
            if b"\r" in line:
                bare.add(number)
            if not fits(line):
                invalid.add(number)
            if not line:
                empty.add(number)
                continue
            cells, well_formed = dialect.cells(line.decode("utf-8", errors="replace"))
            if not well_formed:
                malformed.add(number)
            elif len(cells) < len(names):
                short.add(number)
            elif len(cells) > len(names):
                long.add(number)
    findings = [f for f in (bare, invalid, malformed, short, long, empty) if f.count]
    if kinds:
        findings += _cell_findings(path, dialect, {n: k for n, k in kinds.items() if n in names})  # the UTF-8 copy
    return FileReport(records, names, tuple(findings))


def _is_utf8(data: bytes) -> bool:
    try:
        data.decode("utf-8")
    except UnicodeDecodeError:
        return False
    return True


def _no_replacement(data: bytes) -> bool:
    return "\ufffd".encode() not in data


def _cell_findings(path: Path, dialect: Dialect, kinds: Mapping[str, ColumnKind]) -> list[Finding]:
    """Per column: the cells the engines will read as missing under its type (one pass, in Polars)."""
    pl = require("polars", "polars", "the file check's type counts")
    from dpwitness.io.cells import polars_number
    from dpwitness.io.reader import scan_polars

    frame = scan_polars(path, separator=dialect.separator).with_row_index("_dpw_line", offset=2)
    checks: dict[str, tuple[str, Any]] = {}
    for name, kind in kinds.items():
        present = pl.col(name).str.strip_chars().fill_null("") != ""
        if kind is ColumnKind.STRING:
            fails = present & polars_number(pl.col(name)).is_null()  # the cell grammar's number
            numbers = (present & polars_number(pl.col(name)).is_not_null()).sum()
            checks[name] = ("string", (fails, numbers, present.sum()))
        elif kind in POLARS_READERS:
            checks[name] = (kind.value, (present & POLARS_READERS[kind](pl.col(name)).is_null(), None, None))
    if not checks:
        return []
    exprs = []
    for index, (_, (fails, numbers, present)) in enumerate(checks.values()):
        first = pl.col("_dpw_line").filter(fails).head(FIRST_LINES).implode()
        exprs += [fails.sum().alias(f"n{index}"), first.alias(f"l{index}")]
        if numbers is not None:
            exprs += [numbers.alias(f"num{index}"), present.alias(f"pre{index}")]
    row = frame.select(exprs).collect().row(0, named=True)
    findings = []
    for index, (name, (label, _)) in enumerate(checks.items()):
        count = int(row[f"n{index}"] or 0)
        if not count:
            continue
        if label == "string":
            if 2 * int(row[f"num{index}"] or 0) <= int(row[f"pre{index}"] or 0):
                continue  # a text column: its cells are not meant to be numbers
            what = "cells that are not numbers where most are (declare the column numeric: they are then read as missing)"
        else:
            what = f"cells that do not parse as {label} (the engines read them as missing)"
        found = Finding("type", what, name, count, [int(n) for n in row[f"l{index}"]])
        findings.append(found)
    return findings
