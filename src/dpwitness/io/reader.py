"""The one CSV reader: every engine and face (Polars, Spark, the CLI, the service) reads a CSV
through these rules, so one file gives one table everywhere (docs/engines.md, "Reading files").

The record boundary no record can move: **one physical line is one record.**

* Bytes are UTF-8, or the declared ``encoding`` (:func:`check_encoding`; a schema's
  ``encoding = "cp1252"``, ``--encoding``), transcoded to UTF-8 as the file is streamed
  (:func:`utf8_path`); a byte sequence that is not valid is replaced by U+FFFD (never an error); a
  leading UTF-8 byte-order mark is dropped (the file's only: a record that starts with U+FEFF
  keeps it as text, even a record that is U+FEFF alone as the file's last bytes).
* The file is cut at every ``\\n``; one ``\\r`` at the end of a line is dropped (so ``\\r\\n``
  and ``\\n`` both end a record). A bare ``\\r`` elsewhere is an ordinary character (in the
  header line it is refused: :func:`refuse_bare_returns`). A final
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
config) or from the query, never from the values, and a cell is read as a number or a boolean
under the one cell grammar of :mod:`dpwitness.io.cells`, the same on every engine.

Why the fields are cut here and not by a CSV library: Polars', pyarrow's and Spark's CSV
readers let a quoted field run across line ends (one unclosed quote swallows the rest of the
file) or end records at a bare ``\\r``. So each engine reads lines with its own fast reader
(Polars: ``scan_csv`` with the line end as the only separator; Spark: ``read.text`` with
``lineSep="\\n"``) and cuts the fields with the same two regular expressions (:data:`Dialect`),
in the engine, in parallel, without collecting the file anywhere.

The fast path (Polars): where :func:`native_is_exact` shows, by a byte check of the whole
file, that Polars' own quoted parse gives exactly the table of these rules, that parse is used
instead; the table is the same either way, only the time differs.
"""

from __future__ import annotations

import atexit
import codecs
import hashlib
import re
import shutil
import tempfile
import threading
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, BinaryIO

from dpwitness.common.errors import ParameterError, Verbatim

if TYPE_CHECKING:
    import numpy as np
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


def check_encoding(encoding: str | None, parameter: str = "encoding") -> str | None:
    """The canonical name of a declared text ``encoding`` (``codecs.lookup``), None for UTF-8 (or None).

    Raises :class:`~dpwitness.ParameterError` naming ``parameter`` for a name Python does not
    know or a codec that does not decode bytes to text (e.g. ``base64``); nothing is read.
    """
    if encoding is None:
        return None
    try:
        name = codecs.lookup(encoding).name
        text = isinstance(codecs.decode(b"", name), str)
    except (LookupError, TypeError, ValueError):
        text = False
    if not (isinstance(encoding, str) and text):
        raise ParameterError(parameter, "a text encoding, e.g. utf-8, latin-1 or cp1252", encoding)
    return None if name == "utf-8" else name


_COPIES: dict[tuple[object, ...], Path] = {}  # (file identity, encoding) -> its UTF-8 copy
_COPIES_LOCK = threading.Lock()
_copies_dir: Path | None = None


def utf8_path(path: Path, encoding: str | None) -> Path:
    """``path`` itself when ``encoding`` is None (UTF-8); else a UTF-8 copy of it, decoded from ``encoding``.

    The copy is streamed (a few MiB at a time, undecodable bytes replaced by U+FFFD), written
    once per file identity (device, inode, size, modification time) and encoding into a private
    temporary folder (mode 0700) removed when the process exits; it keeps ``path``'s suffix.
    Every engine reads the copy, so one file gives one table everywhere. (Spark on a cluster:
    the copy is on the driver's disk; give the cluster a UTF-8 file instead.)

    :param encoding: a name from :func:`check_encoding` (checked again here).
    """
    encoding = check_encoding(encoding)
    if encoding is None:
        return path
    status = path.stat()
    key = (str(path.resolve()), status.st_dev, status.st_ino, status.st_size, status.st_mtime_ns, encoding)
    with _COPIES_LOCK:
        if key not in _COPIES or not _COPIES[key].is_file():
            digest = hashlib.sha256(repr(key).encode()).hexdigest()[:24]
            target = _private_dir() / f"{digest}{path.suffix}"
            decoder = codecs.getincrementaldecoder(encoding)(errors="replace")
            with path.open("rb") as source, target.open("wb") as copy:
                while block := source.read(_CHUNK):
                    copy.write(decoder.decode(block).encode("utf-8"))
                copy.write(decoder.decode(b"", final=True).encode("utf-8"))
            _COPIES[key] = target
        return _COPIES[key]


def _private_dir() -> Path:
    global _copies_dir
    if _copies_dir is None:
        _copies_dir = Path(tempfile.mkdtemp(prefix="dpwitness-utf8-"))  # mode 0700
        atexit.register(shutil.rmtree, _copies_dir, ignore_errors=True)
    return _copies_dir


def dialect_for(path: Path, separator: str | None = None) -> Dialect:
    """The declared ``separator``, else a tab for ``.tsv`` and a comma otherwise.

    :param path: the CSV file (only its suffix is looked at; nothing is read).
    """
    if separator is None:
        separator = "\t" if path.suffix.lower() == ".tsv" else ","
    return Dialect(separator)


def header(path: Path, dialect: Dialect) -> tuple[str, ...]:
    """The column names: the file's first line (only that line is read).

    Raises :class:`~dpwitness.ParameterError` (parameter ``source``) for an empty file, an
    empty or malformed first line, or a header with empty or repeated names. The header is the
    data owner's metadata, so the message may name the columns; it never shows a record.

    :param path: the CSV file.
    :param dialect: the dialect (:func:`dialect_for`) the first line is cut with.
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
    refuse_bare_returns(text, len(cells))
    if not well_formed or cells == [None]:
        raise ParameterError("source", "a CSV file whose first line is a header (the column names)", "an empty or malformed line")
    names = tuple(c or "" for c in cells)
    # A "header" may be a record (a file without one): these messages give positions, never a name.
    if "" in names:
        empty = [i + 1 for i, name in enumerate(names) if not name]
        raise ParameterError(
            "source", "a header naming every column (no empty name)", Verbatim(f"no name at column {empty[0]} of {len(names)}")
        )
    if len(set(names)) < len(names):
        later = next(i for i, name in enumerate(names) if names.index(name) < i)
        repeated = f"column {later + 1} repeats the name of column {names.index(names[later]) + 1}"
        raise ParameterError("source", "a header with unique column names", Verbatim(repeated))
    return names


def refuse_bare_returns(first_line: str, fields: int) -> None:
    """Raise ``ParameterError("source", …)`` when the header line holds a bare ``\\r``, quoting none of it.

    Such a first line is the whole file of a writer that ends lines in ``\\r`` alone (old Mac OS,
    some spreadsheet exports): its "column names" are records, so no message may list them.

    :param first_line: the first line, without its ``\\n``.
    :param fields: how many fields the line was cut into (said in the message).
    """
    returns = first_line.removesuffix("\r").count("\r")
    if returns:
        raise ParameterError(
            "source",
            "a CSV file whose lines end in \\n or \\r\\n",
            Verbatim(
                f"a first line of {fields} fields holding {returns} bare carriage returns (\\r: old-Mac line ends?), "
                "so its names would be records (not shown); convert the line ends, e.g. tr '\\r' '\\n'"
            ),
        )


def _polars_cell(raw: pl.Expr) -> pl.Expr:
    import polars as pl

    quoted = raw.str.starts_with('"')
    inner = raw.str.slice(1, raw.str.len_chars() - 2).str.replace_all('""', '"', literal=True)
    return pl.when(quoted).then(inner).when(raw == "").then(None).otherwise(raw)


_CHUNK = 1 << 22  # bytes per step of the fast path's check (a few MiB: the masks stay in cache)
_CHECKS: dict[tuple[object, ...], bool] = {}  # file identity -> whether the native parse is exact


def native_is_exact(path: Path, *, separator: str | None = None) -> bool:
    """Whether Polars' own CSV parser gives exactly the table of the rules above for ``path``.

    A whole-file byte check (numpy, a few MiB at a time), true when the parser cannot differ
    from the rules: more than one column; no bare ``\\r``; the first record well formed with
    exactly the header's number of fields and no byte-order mark; every ``"`` opens a field
    (after the separator or a line start), closes one (before the separator or the line end)
    or is one of a doubled pair inside a quoted field; and no line end inside quotes (Polars'
    quote-aware row count equals the number of lines). Whatever the outcome, the table read
    is the same (:func:`scan_polars` falls back to the exact cut otherwise); only the time
    differs. The outcome is cached per file identity (device, inode, size, modification time).
    """
    dialect = dialect_for(path, separator)
    names = header(path, dialect)
    status = path.stat()
    key = (str(path.resolve()), status.st_dev, status.st_ino, status.st_size, status.st_mtime_ns, dialect.separator)
    if key not in _CHECKS:
        if len(_CHECKS) > 256:
            _CHECKS.clear()
        _CHECKS[key] = len(names) > 1 and _bytes_are_plain(path, dialect, names)
    return _CHECKS[key]


def _bytes_are_plain(path: Path, dialect: Dialect, names: tuple[str, ...]) -> bool:
    import numpy as np
    import polars as pl

    lines = 0
    with path.open("rb") as handle:
        handle.readline(_HEADER_LIMIT + 1)  # the header (checked by ``header``)
        first = handle.readline(_HEADER_LIMIT + 1)
        if first:
            if first.startswith(_BOM.encode()) or len(first) > _HEADER_LIMIT:
                return False
            cells, well_formed = dialect.cells(first.decode("utf-8", errors="replace").removesuffix("\n"))
            if not well_formed or len(cells) != len(names):
                return False
        pieces = _whole_lines(handle, first)
        for piece in pieces:
            buffer = np.frombuffer(piece, np.uint8)
            lines += int(np.count_nonzero(buffer == 10))
            if not _plain_block(buffer, ord(dialect.separator)):
                return False
    native = _scan_native(path, dialect, names).select(pl.len()).collect().item()
    return bool(native == lines)


def _whole_lines(handle: BinaryIO, first: bytes) -> Iterator[bytes | memoryview]:
    """The rest of the file in blocks of whole lines, each ending in ``\\n`` (one is added to a
    last line without one); a block is a view of what was read, not a copy."""
    rest = [first]  # the start of a line, in pieces (joined once: a long line costs its length)
    while block := handle.read(_CHUNK):
        end = block.rfind(b"\n") + 1
        if end == 0:
            rest.append(block)
            continue
        head = block.find(b"\n") + 1
        yield b"".join([*rest, block[:head]])
        if head < end:
            yield memoryview(block)[head:end]
        rest = [block[end:]]
    last = b"".join(rest)
    if last:
        yield last if last.endswith(b"\n") else last + b"\n"


def _plain_block(buffer: np.ndarray, separator: int) -> bool:
    """Whole lines (ending in ``\\n``): no bare ``\\r``, and every quote opens, closes or is doubled."""
    import numpy as np

    returns = np.flatnonzero(buffer == 13)
    if returns.size and (buffer[returns + 1] != 10).any():
        return False
    quotes = np.flatnonzero(buffer == 34)
    if quotes.size % 2:
        return False
    opening, closing = quotes[0::2], quotes[1::2]
    before = buffer[opening - 1]
    if opening.size and opening[0] == 0:
        before[0] = 10  # a block starts at a line start
    after = buffer[closing + 1]
    ok_before = (before == separator) | (before == 10) | (before == 34)
    ok_after = (after == separator) | (after == 10) | (after == 13) | (after == 34)
    return bool(ok_before.all() and ok_after.all())


def _scan_native(path: Path, dialect: Dialect, names: tuple[str, ...]) -> pl.LazyFrame:
    import polars as pl

    return pl.scan_csv(
        path,
        has_header=False,
        skip_lines=1,  # the header
        separator=dialect.separator,
        quote_char='"',
        schema={name: pl.String for name in names},
        encoding="utf8-lossy",
        truncate_ragged_lines=True,
    )


def _first_record_has_bom(path: Path) -> tuple[bool, bool]:
    """Whether the first record starts with U+FEFF, and whether it is only that (a lone byte-order
    mark ending the file with no final newline: Polars then sees nothing to parse at all)."""
    with path.open("rb") as handle:
        handle.readline(_HEADER_LIMIT + 1)
        bom = handle.read(3) == _BOM.encode()
        return bom, bom and handle.read(1) == b""


def scan_polars(path: Path, *, separator: str | None = None, exact: bool = False, encoding: str | None = None) -> pl.LazyFrame:
    """A lazy Polars frame of ``path`` under the rules above: every column text, one line one record.

    When :func:`native_is_exact` holds (a whole-file byte check, cached per file), the frame is
    Polars' own CSV parse, which then gives exactly the table of the rules; otherwise (or with
    ``exact=True``) every line is cut by :class:`Dialect`'s expressions. Both give the same
    table; which one ran shows only in the time. Only the columns a plan uses are read.

    :param separator: one of ``,``, ``;``, ``|`` or a tab; None (default) as :func:`dialect_for`.
    :param encoding: the file's declared text encoding (None: UTF-8); see :func:`utf8_path`.
    """
    import polars as pl

    dialect = dialect_for(path, separator)
    path = utf8_path(path, encoding)
    names = header(path, dialect)
    if not exact and native_is_exact(path, separator=dialect.separator):
        return _scan_native(path, dialect, names)
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
    bom, lone = _first_record_has_bom(path)
    if lone:  # the record is U+FEFF alone, the file's last bytes: one record, its line rebuilt below
        lines = pl.LazyFrame({_LINE: [""]}, schema={_LINE: pl.String})
    if bom:  # Polars drops a byte-order mark at the start of what it parses
        lines = lines.with_row_index("_dpw_index")
        line = pl.when(pl.col("_dpw_index") == 0).then(pl.lit(_BOM) + line).otherwise(line)
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


def read_spark(spark: SparkSession, path: Path, *, separator: str | None = None, encoding: str | None = None) -> DataFrame:
    """A Spark frame of ``path`` under the rules above: every column text, one line one record.

    Lines come from ``spark.read.text`` (``lineSep="\\n"``, split across tasks as any text
    file); the header line is the file's first (offset 0) and is dropped by position, not by
    its content; the fields are cut per line in Spark with :class:`Dialect`'s expressions.

    :param separator: one of ``,``, ``;``, ``|`` or a tab; None (default) as :func:`dialect_for`.
    :param encoding: the file's declared text encoding (None: UTF-8); see :func:`utf8_path`.
    """
    from pyspark.sql import functions as F

    dialect = dialect_for(path, separator)
    path = utf8_path(path, encoding)
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
