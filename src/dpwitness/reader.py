"""The one CSV reader: every engine and face (Polars, Spark, the CLI, the service) reads a CSV
through these rules, so one file gives one table everywhere (docs/engines.md, "Reading files").

The record boundary no record can move: **one physical line is one record.**

* Bytes are UTF-8; a byte sequence that is not is replaced by U+FFFD (never an error); a
  leading UTF-8 byte-order mark is dropped.
* The file is cut at every ``\\n``; one ``\\r`` at the end of a line is dropped (so ``\\r\\n``
  and ``\\n`` both end a record). A bare ``\\r`` elsewhere is an ordinary character. A final
  ``\\n`` does not start another record.
* The first line is the header: the column names, parsed like a record; it must be present,
  well formed, with unique non-empty names (else :class:`~dpwitness.ParameterError`, before
  anything is read or spent).
* Within a line (RFC 4180): fields are cut at the declared separator; a field that starts
  with ``"`` is quoted and runs to the next ``"`` that is not doubled; it may hold the
  separator, ``\\r`` and ``""`` (read as ``"``), and must be followed by the separator or the
  end of the line. A ``"`` inside an unquoted field is an ordinary character.
* An empty unquoted field is null; a quoted empty field ``""`` is the empty text ``""``
  (both are null when read as a number).
* An empty line is a record whose every cell is null (never skipped: the row count of a file
  is its number of lines, so replacing one line by another never removes a record).
* A malformed line (a quote that does not close, or text after a closing quote) is one record
  whose every cell is null. A ragged line: missing trailing cells are null, extra fields are
  dropped. Whatever one line holds changes that one record only.

Every cell is text: types come from a declaration (a schema, ``dtypes=``, the service's
config) or from the query, never from the values.

Why the fields are cut here and not by a CSV library: Polars', pyarrow's and Spark's CSV
readers let a quoted field run across line ends (one unclosed quote swallows the rest of the
file) or end records at a bare ``\\r``. So each engine reads lines with its own fast reader
(Polars: ``scan_csv`` with the line end as the only separator; Spark: ``read.text`` with
``lineSep="\\n"``) and cuts the fields with the same two regular expressions (:data:`Dialect`),
in the engine, in parallel, without collecting the file anywhere.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

from dpwitness.errors import ParameterError

if TYPE_CHECKING:
    import polars as pl
    from pyspark.sql import Column, DataFrame, SparkSession

#: The separators a CSV may declare, by name and as written in a regular expression.
SEPARATORS = {",": ",", ";": ";", "\t": r"\t", "|": r"\|"}
_LINE = "_dpw_line"
_FIELDS = "_dpw_fields"
_QUOTED = "_dpw_quoted"
_BOM = "\ufeff"
_HEADER_LIMIT = 1 << 24  # a header line longer than 16 MiB is not a header


@dataclass(frozen=True)
class Dialect:
    """A CSV dialect: the separator and the regular expressions that cut a line with it.

    Both are applied to the line + one separator. ``readable`` matches the longest prefix made
    of well-formed fields each followed by the separator (the whole text for a well-formed
    line); ``field`` then matches one field and its separator (find-all, every match non-empty,
    so every engine's "find all" gives the same fields). ``*_java`` are the same expressions
    with possessive quantifiers (they match the same text: a well-formed field has one end; they
    keep Java's backtracking engine from recursing once per character); Rust's and Python's
    engines do not need them.
    """

    separator: str

    def __post_init__(self) -> None:
        if self.separator not in SEPARATORS:
            raise ParameterError("separator", "one of ',', ';', '|' or a tab", self.separator)

    def _patterns(self, java: bool) -> tuple[str, str]:
        s = SEPARATORS[self.separator]
        plus, star = ("++", "*+") if java else ("+", "*")
        quoted = f'"(?:[^"]{plus}|""){star}"'
        unquoted = f'[^"{s}][^{s}]{star}'
        return rf"\A((?:(?:{quoted}|{unquoted})?{s}){star})", f"({quoted}|[^{s}]{star}){s}"

    @property
    def readable(self) -> str:
        return self._patterns(java=False)[0]

    @property
    def field(self) -> str:
        return self._patterns(java=False)[1]

    @property
    def readable_java(self) -> str:
        return self._patterns(java=True)[0]

    @property
    def field_java(self) -> str:
        return self._patterns(java=True)[1]

    def cells(self, line: str) -> tuple[list[str | None], bool]:
        """One line's readable cells and whether the whole line was well formed (for the header)."""
        text = line.removesuffix("\r") + self.separator
        if '"' not in text:
            return [_cell(c) for c in text.split(self.separator)[:-1]], True
        match = re.match(self.readable, text)
        prefix = match.group(1) if match else ""
        return [_cell(m.group(1)) for m in re.finditer(self.field, prefix)], len(prefix) == len(text)


def _cell(raw: str) -> str | None:
    if raw.startswith('"'):
        return raw[1:-1].replace('""', '"')
    return raw or None


def dialect_for(path: Path, separator: str | None = None) -> Dialect:
    """The declared ``separator``, else a tab for ``.tsv`` and a comma otherwise."""
    if separator is None:
        separator = "\t" if path.suffix.lower() == ".tsv" else ","
    return Dialect(separator)


def header(path: Path, dialect: Dialect) -> tuple[str, ...]:
    """The column names: the file's first line (only that line is read).

    Raises :class:`~dpwitness.ParameterError` (parameter ``source``) for an empty file, an
    empty or malformed first line, or a header with empty or repeated names. The header is the
    data owner's metadata, so the message may name the columns; it never shows a record.
    """
    try:
        with path.open("rb") as handle:
            first = handle.readline(_HEADER_LIMIT + 1)
    except OSError as error:
        raise ParameterError("source", "a readable CSV file", type(error).__name__) from None
    if not first:
        raise ParameterError("source", "a CSV file with a header line", "an empty file (0 bytes)")
    if len(first) > _HEADER_LIMIT:
        raise ParameterError("source", "a CSV file whose first line is a header", "a first line longer than 16 MiB")
    text = first.decode("utf-8", errors="replace").removeprefix(_BOM).removesuffix("\n")
    cells, well_formed = dialect.cells(text)
    if not well_formed or cells == [None]:
        raise ParameterError("source", "a CSV file whose first line is a header (the column names)", "an empty or malformed line")
    names = tuple(c or "" for c in cells)
    if "" in names:
        raise ParameterError("source", "a header naming every column (no empty name)", list(names))
    if len(set(names)) < len(names):
        raise ParameterError("source", "a header with unique column names", list(names))
    return names


def _polars_cell(raw: pl.Expr) -> pl.Expr:
    import polars as pl

    quoted = raw.str.starts_with('"')
    inner = raw.str.slice(1, raw.str.len_chars() - 2).str.replace_all('""', '"', literal=True)
    return pl.when(quoted).then(inner).when(raw == "").then(None).otherwise(raw)


def scan_polars(path: Path, *, separator: str | None = None) -> pl.LazyFrame:
    """A lazy Polars frame of ``path`` under the rules above: every column text, one line one record.

    Only the header is read now; the lines are read when the plan runs, and only the cells of
    the columns a plan uses are cut out of them.
    """
    import polars as pl

    dialect = dialect_for(path, separator)
    names = header(path, dialect)
    lines = pl.scan_csv(
        path,
        has_header=False,
        skip_lines=1,  # the header
        separator="\n",  # no field separator: each line is one text cell
        quote_char=None,
        schema={_LINE: pl.String},
        encoding="utf8-lossy",
    )
    line = pl.col(_LINE).fill_null("")  # an empty line: one empty field, so a record of nulls
    quoted = line.str.contains('"', literal=True)
    plain = line.str.split(dialect.separator)
    readable = (line + pl.lit(dialect.separator)).str.extract(dialect.readable, 1)
    parsed = readable.str.extract_all(dialect.field)  # each field with its separator
    lines = lines.select(quoted.alias(_QUOTED), pl.when(quoted).then(parsed).otherwise(plain).alias(_FIELDS))
    # Each step its own projection: an expression is computed once, not once per use.
    raw = [
        pl.when(pl.col(_QUOTED))
        .then(pl.col(_FIELDS).list.get(i, null_on_oob=True).str.head(-1))
        .otherwise(pl.col(_FIELDS).list.get(i, null_on_oob=True))
        .alias(name)
        for i, name in enumerate(names)
    ]
    return lines.select(raw).select([_polars_cell(pl.col(name)).alias(name) for name in names])


def read_spark(spark: SparkSession, path: Path, *, separator: str | None = None) -> DataFrame:
    """A Spark frame of ``path`` under the rules above: every column text, one line one record.

    Lines come from ``spark.read.text`` (``lineSep="\\n"``, split across tasks as any text
    file); the header line is the file's first (offset 0) and is dropped by position, not by
    its content; the fields are cut per line in Spark with :class:`Dialect`'s expressions.
    """
    from pyspark.sql import functions as F

    dialect = dialect_for(path, separator)
    names = header(path, dialect)
    raw = spark.read.option("lineSep", "\n").text(str(path))
    first = (F.input_file_block_start() == 0) & ((F.monotonically_increasing_id() % F.lit(1 << 33)) == 0)
    lines = raw.select(F.col("value").alias(_LINE), first.alias("_dpw_first")).filter(~F.col("_dpw_first"))
    line = F.regexp_replace(F.make_valid_utf8(F.col(_LINE)), "\r\\z", "")
    plain = F.split(line, SEPARATORS[dialect.separator], -1)
    readable = F.regexp_extract(F.concat(line, F.lit(dialect.separator)), dialect.readable_java, 1)
    parsed = F.regexp_extract_all(readable, F.lit(dialect.field_java), F.lit(1))
    fields = F.when(line.contains('"'), parsed).otherwise(plain)
    frame = lines.select(fields.alias("_dpw_fields"))
    return frame.select([_spark_cell(F.get(F.col("_dpw_fields"), i)).alias(name) for i, name in enumerate(names)])


def _spark_cell(raw: Column) -> Column:
    from pyspark.sql import functions as F

    inner = F.regexp_replace(raw.substr(F.lit(2), F.length(raw) - 2), '""', '"')
    return F.when(raw.startswith('"'), inner).when(raw == "", F.lit(None)).otherwise(raw)
