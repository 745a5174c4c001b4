"""A table's schema: column names and types, and what the data owner declared about them.

One class, :class:`Schema`, for two sources of the same idea:

* an engine's *metadata* (a CSV header, a Parquet footer, a frame's dtypes), returned by
  ``Engine.schema()`` before any spend: names and kinds, never a row (``declared`` False);
* a data owner's *declaration* (``declared`` True): a TOML file (:meth:`Schema.load`), written
  once by :meth:`Schema.infer` / ``dpwitness schema FILE`` and reviewed. It gives each column's
  type and, optionally, its public clamping bounds, its public categories and the privacy unit.

:meth:`Schema.infer` **reads the values** of the data. It is the data owner's step, outside
differential privacy: run it on your own data, review what it wrote (bounds and categories
taken from the data are disclosed by anything that uses them), and keep the file. Everything
else here reads no data: a declared schema is public metadata, and queries are checked against
it before any spend.

Types are declared, never inferred at query time. A CSV's schema is the one given
(``schema=``, ``--schema``, a service table's ``schema``) or else the file ``STEM.schema.toml``
beside it (:func:`schema_beside`; ``people.csv`` → ``people.schema.toml``), and every release says
which. Without one (and without ``dtypes=``) a CSV column is ``untyped`` text: it can be counted,
grouped and compared with text, but a statistic or a comparison that needs numbers is refused
before any spend (:meth:`Schema.undeclared_number`).
"""

from __future__ import annotations

import itertools
import math
import os
import tomllib
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from enum import StrEnum
from pathlib import Path
from typing import TYPE_CHECKING, Any

import numpy as np

from dpwitness.common.errors import ParameterError, Verbatim, require
from dpwitness.common.validation import check_count
from dpwitness.io.cells import SPACES, polars_boolean, polars_integer, polars_number
from dpwitness.io.reader import check_encoding
from dpwitness.privacy.neighbours import check_bounds

if TYPE_CHECKING:
    import polars as pl

#: The format of a schema file (the ``schema_version`` key); a later format gets a new number.
SCHEMA_VERSION = 1
#: :meth:`Schema.infer` lists the categories of a text column with at most this many values, when asked.
DEFAULT_MAX_CATEGORIES = 20
#: The most categories one column may declare (a longer list is not a category list).
MAX_CATEGORIES = 10_000
#: The most combinations of declared keys a grouping may have (checked before any is built).
MAX_KEYS = 1 << 20


class ColumnKind(StrEnum):
    """A column's type, from declared metadata (a Parquet or frame schema, ``dtypes=``, a schema file).

    ``untyped`` is a column whose type nobody declared (a CSV column without a schema): it is
    held as text — a key, a count's column, compared with text — and a statistic or a comparison
    that needs numbers refuses it (declare its type). Types are never inferred from the values
    at query time: one record could flip an inferred type.
    """

    INTEGER = "integer"
    FLOAT = "float"
    STRING = "string"
    BOOLEAN = "boolean"
    UNTYPED = "untyped"
    OTHER = "other"

    @property
    def numeric(self) -> bool:
        return self in (ColumnKind.INTEGER, ColumnKind.FLOAT)

    @property
    def keyable(self) -> bool:
        """Whether the column can be a key (group, histogram, join, privacy unit, order): every engine
        hashes and orders its values alike. ``other`` (lists, structs, binary, durations, dates,
        decimals, integers wider than Int64…) cannot: declare its type (``dtypes=``) to normalise it."""
        return self is not ColumnKind.OTHER


#: The column types that ``dtypes=`` or a schema file can declare.
DECLARABLE = (ColumnKind.INTEGER, ColumnKind.FLOAT, ColumnKind.STRING, ColumnKind.BOOLEAN)

#: The Polars type each declarable kind is read as (one map for every engine and table).
POLARS_TYPES = {
    ColumnKind.INTEGER: "Int64",
    ColumnKind.FLOAT: "Float64",
    ColumnKind.STRING: "String",
    ColumnKind.BOOLEAN: "Boolean",
}

#: The cell-grammar reader (:mod:`dpwitness.io.cells`) of text declared as each typed kind, in the
#: order a text column's narrowest type is tried (one map for every Polars table, check and join).
POLARS_READERS: dict[ColumnKind, Callable[[pl.Expr], pl.Expr]] = {
    ColumnKind.INTEGER: polars_integer,
    ColumnKind.FLOAT: polars_number,
    ColumnKind.BOOLEAN: polars_boolean,
}

#: Polars integer types that fit in Int64 (what Spark's ``long`` holds); wider ones are ``other``.
_INT64_INTEGERS = {"Int8", "Int16", "Int32", "Int64", "UInt8", "UInt16", "UInt32"}


def polars_kind(dtype: Any) -> ColumnKind:
    """The kind of a column of Polars type ``dtype`` (metadata only; no value is read).

    Integers that fit in Int64 are ``integer``, Float32/64 ``float``, String, Categorical and Enum
    ``string``, Boolean ``boolean``; everything else (UInt64 and 128-bit integers, Decimal, dates
    and times, durations, binary, lists, arrays, structs, null, objects) is ``other``, as
    :func:`spark_kind` reads the same file on Spark.
    """
    name = str(dtype)
    if dtype.is_integer():
        return ColumnKind.INTEGER if name in _INT64_INTEGERS else ColumnKind.OTHER
    if dtype.is_float():
        return ColumnKind.FLOAT
    if name == "Boolean":
        return ColumnKind.BOOLEAN
    if name in ("String", "Utf8") or name.startswith(("Categorical", "Enum")):
        return ColumnKind.STRING
    return ColumnKind.OTHER


def spark_kind(dtype: Any) -> ColumnKind:
    """The kind of a column of Spark type ``dtype``, read as :func:`polars_kind` reads Polars' types
    (byte to long ``integer``, float and double ``float``, string, char and varchar ``string``,
    boolean; decimal, dates, timestamps, intervals, binary, arrays, maps and structs ``other``)."""
    name = type(dtype).__name__
    if name in ("ByteType", "ShortType", "IntegerType", "LongType"):
        return ColumnKind.INTEGER
    if name in ("FloatType", "DoubleType"):
        return ColumnKind.FLOAT
    if name == "BooleanType":
        return ColumnKind.BOOLEAN
    if name in ("StringType", "VarcharType", "CharType"):
        return ColumnKind.STRING
    return ColumnKind.OTHER


def parse_dtypes(dtypes: Mapping[str, Any] | None) -> dict[str, ColumnKind]:
    """Validate ``dtypes=``: column name → one of integer, float, string, boolean."""
    if dtypes is None:
        return {}
    if not isinstance(dtypes, Mapping):
        raise ParameterError("dtypes", "a mapping of column name to integer, float, string or boolean", type(dtypes).__name__)
    out: dict[str, ColumnKind] = {}
    for name, kind in dtypes.items():
        if not (isinstance(name, str) and name) or str(getattr(kind, "value", kind)) not in {k.value for k in DECLARABLE}:
            raise ParameterError("dtypes", "a mapping of column name to integer, float, string or boolean", {name: kind})
        out[name] = ColumnKind(str(getattr(kind, "value", kind)))
    return out


def value_fits(kind: ColumnKind, value: Any) -> bool:
    """Whether a declared key (or category) can equal a value of a column of this kind."""
    if kind is ColumnKind.STRING:
        return isinstance(value, str)
    if kind is ColumnKind.BOOLEAN:
        return isinstance(value, bool | np.bool_)
    if kind is ColumnKind.INTEGER:
        return isinstance(value, int | np.integer) and not isinstance(value, bool)
    if kind is ColumnKind.FLOAT:
        return isinstance(value, int | float | np.number) and not isinstance(value, bool)
    if kind is ColumnKind.UNTYPED:  # text: a key is compared as text, so "9" and 9 both mean the cell "9"
        return isinstance(value, str | int | np.integer) and not isinstance(value, bool)
    return True


@dataclass(frozen=True)
class Schema:
    """Column names and kinds, and (declared by the data owner) bounds, categories and a privacy unit.

    ``columns`` maps each name to its :class:`ColumnKind` (or its name). ``bounds`` gives a
    numeric column's public clamping range [L, U]; ``categories`` a column's public values
    (the only keys ever released for it); ``privacy_unit`` the column that identifies a
    person; ``encoding`` the CSV file's text encoding (None: UTF-8; read by every face through
    :func:`dpwitness.io.reader.utf8_path`). ``declared`` is True for a data owner's schema (a file, :meth:`infer`), False for
    an engine's metadata. Validated on construction; reads no data. Whether the table (or a
    filter's result) is empty is *not* public: an empty selection gets a noisy answer like any
    other (see docs/statistics.md). ``source`` is the name of the file the metadata describes
    (e.g. ``people.csv``), used only to say how to declare its types; it is not compared.
    """

    columns: Mapping[str, ColumnKind]
    bounds: Mapping[str, tuple[float, float]] = field(default_factory=dict)
    categories: Mapping[str, tuple[Any, ...]] = field(default_factory=dict)
    privacy_unit: str | None = None
    declared: bool = False
    encoding: str | None = None
    source: str | None = field(default=None, compare=False)

    def __post_init__(self) -> None:
        if not isinstance(self.columns, Mapping):
            raise ParameterError("schema", "a mapping of column name to type", type(self.columns).__name__)
        columns: dict[str, ColumnKind] = {}
        for name, kind in self.columns.items():
            try:
                columns[name] = ColumnKind(str(getattr(kind, "value", kind)))
            except ValueError:
                raise ParameterError(f"schema.columns.{name}.type", _TYPES, kind) from None
            if not (isinstance(name, str) and name):
                raise ParameterError("schema.columns", "column names that are non-empty text", name)
            if self.declared and columns[name] not in DECLARABLE:
                raise ParameterError(f"schema.columns.{name}.type", _TYPES, kind)
        bounds: dict[str, tuple[float, float]] = {}
        for name, pair in dict(self.bounds).items():
            where = f"schema.columns.{name}.bounds"
            if name not in columns or not columns[name].numeric:
                raise ParameterError(where, "declared only on an integer or float column", columns.get(name, "absent"))
            if isinstance(pair, str | bytes) or len(pair) != 2:
                raise ParameterError(where, "[L, U] with finite L < U", pair)
            bounds[name] = check_bounds(pair[0], pair[1], where)
        categories: dict[str, tuple[Any, ...]] = {}
        for name, values in dict(self.categories).items():
            where = f"schema.columns.{name}.categories"
            if name not in columns:
                raise ParameterError(where, "declared only on a column of the schema", name)
            listed = tuple(values) if isinstance(values, Iterable) and not isinstance(values, str | bytes) else ()
            kind = columns[name]
            if not 0 < len(listed) <= MAX_CATEGORIES or len(set(listed)) != len(listed):
                raise ParameterError(where, f"a non-empty list of at most {MAX_CATEGORIES} distinct values", values)
            if not all(value_fits(kind, v) for v in listed):
                raise ParameterError(where, f"values of the column's type ({kind.value})", list(listed))
            categories[name] = listed
        unit = self.privacy_unit
        if unit is not None and not (isinstance(unit, str) and unit in columns):
            raise ParameterError("schema.privacy_unit", f"a column of the schema ({', '.join(columns)})", unit)
        object.__setattr__(self, "encoding", check_encoding(self.encoding, "schema.encoding"))
        object.__setattr__(self, "columns", columns)
        object.__setattr__(self, "bounds", bounds)
        object.__setattr__(self, "categories", categories)

    # --- what it declares -----------------------------------------------------------------------
    @property
    def dtypes(self) -> dict[str, str]:
        """The declared types as ``dtypes=`` for an engine's ``open`` (untyped and other kinds left out)."""
        return {name: kind.value for name, kind in self.columns.items() if kind in DECLARABLE}

    def bounds_for(self, column: str | None) -> tuple[float, float] | None:
        """``column``'s declared clamping bounds [L, U], or None when it declares none."""
        return None if column is None else self.bounds.get(column)

    def keys_for(
        self, columns: str | Iterable[str], *, given: Mapping[str, Sequence[Any]] | None = None
    ) -> tuple[Any, ...] | None:
        """The declared keys of a grouping by ``columns`` (a string is one column, as ``by`` reads it):
        one column's categories, or for several every combination of theirs (tuples, in column
        order); None when a column declares none (its keys are then undeclared).

        :param given: public keys a face gives for some columns (SQL's ``WHERE col IN (…)``, a
            public table's values), used in place of the declared categories.

        More than :data:`MAX_KEYS` combinations raise ``ParameterError("by", …)`` before any is built.
        """
        names = (columns,) if isinstance(columns, str) else tuple(columns)
        lists = {**self.categories, **{name: tuple(values) for name, values in (given or {}).items()}}
        if not names or not all(c in lists for c in names):
            return None
        if len(names) == 1:
            return tuple(lists[names[0]])
        size = math.prod(len(lists[c]) for c in names)
        if size > MAX_KEYS:
            raise ParameterError("by", f"at most {MAX_KEYS} combinations of declared keys", f"{size} for {', '.join(names)}")
        return tuple(itertools.product(*(lists[c] for c in names)))

    def check_header(self, names: Iterable[str], *, source: str = "the file") -> None:
        """Raise ``ParameterError("schema", …)`` unless every declared column is in the file's header.

        Columns of the file that the schema leaves out are *undeclared*: a query naming one is
        refused (:meth:`dpwitness.query.queries.Query.check_schema`). Reads the header only.

        :param names: the file's column names (its header line).
        :param source: how the message names the file (default "the file").
        """
        header = list(names)
        missing = [name for name in self.columns if name not in header]
        if missing:
            shown = ", ".join(header) if len(header) <= 30 else ", ".join(header[:30]) + ", …"
            raise ParameterError("schema", f"columns of {source}'s header ({shown}): the schema does not match the file", missing)

    def missing_column(self, parameter: str, name: str) -> ParameterError:
        """The error for a query naming a column this schema does not have.

        :param parameter: the query's parameter that named it (e.g. ``column``, ``by``).
        :param name: the column named.
        """
        listed = ", ".join(self.columns)
        if self.declared:
            return ParameterError(parameter, f"a column declared in the schema ({listed})", f"{name} (undeclared)")
        return ParameterError(parameter, f"a column of the table ({listed})", name)

    def undeclared_number(self, parameter: str, name: str) -> ParameterError:
        """The error for a statistic or a comparison that needs numbers from the untyped (CSV text)
        column ``name``: it names every way to declare the column's type, and quotes no value.

        :param parameter: the query's parameter that asked for numbers (``column``, ``where``).
        :param name: the untyped column.
        """
        file = self.source or "FILE.csv"
        beside = f"{Path(file).stem}.schema.toml"
        ways = (
            f'dtypes={{"{name}": "integer"}} or --dtype {name}:integer, schema=FILE or --schema FILE, '
            f"or {beside} beside the file: dpwitness schema {file} > {beside}"
        )
        return ParameterError(
            parameter, f"a column with a declared numeric type ({ways})", Verbatim(f"{name!r} (untyped CSV text)")
        )

    # --- reading and writing the declaration ------------------------------------------------------
    @classmethod
    def load(cls, path: str | os.PathLike[str]) -> Schema:
        """A declared schema from a TOML file (see docs/schema.md for its format); reads no data.

        :param path: the TOML file (UTF-8); a missing or unreadable one raises ``ParameterError("schema", …)``.
        """
        source = Path(path)
        try:
            text = source.read_text(encoding="utf-8")
        except (FileNotFoundError, IsADirectoryError, NotADirectoryError):
            raise ParameterError("schema", "an existing schema TOML file", str(source)) from None
        except UnicodeDecodeError:
            raise ParameterError("schema", "a UTF-8 TOML file", str(source)) from None
        return cls.from_toml(text, where=str(source))

    @classmethod
    def from_toml(cls, text: str, *, where: str = "schema") -> Schema:
        """A declared schema from TOML text: ``[columns.NAME]`` tables with ``type`` and optional
        ``bounds = [L, U]`` and ``categories = [...]``; an optional top-level ``privacy_unit``.
        ``where`` names the text's origin (a path) in a TOML syntax error (default "schema")."""
        try:
            raw = tomllib.loads(text)
        except tomllib.TOMLDecodeError as error:
            raise ParameterError("schema", "valid TOML", f"{where}: {error}") from None
        return cls.from_mapping(raw)

    @classmethod
    def from_mapping(cls, raw: Mapping[str, Any], *, prefix: str = "schema") -> Schema:
        """A declared schema from parsed TOML (also a service config's ``[tables.NAME]`` body).

        :param raw: the parsed mapping: ``schema_version``, ``columns``, optional ``privacy_unit``,
            ``encoding`` (the CSV's text encoding, e.g. "cp1252"), ``source``.
        :param prefix: the parameter name errors are prefixed with (default "schema"; a service
            config passes its table's key); other prefixes allow keys beside the schema's own.
        """
        version = raw.get("schema_version", SCHEMA_VERSION)
        if version != SCHEMA_VERSION:
            raise ParameterError(f"{prefix}.schema_version", f"{SCHEMA_VERSION} (this version of dpwitness)", version)
        unknown = sorted(set(raw) - {"schema_version", "columns", "privacy_unit", "encoding", "source"})
        if unknown and prefix == "schema":
            expected = "only schema_version, source, privacy_unit, encoding and [columns.NAME] tables"
            raise ParameterError("schema", expected, unknown)
        body = raw.get("columns")
        if not isinstance(body, Mapping) or not body:
            raise ParameterError(f"{prefix}.columns", "at least one [columns.NAME] table with a type", body)
        columns: dict[str, Any] = {}
        bounds: dict[str, Any] = {}
        categories: dict[str, Any] = {}
        for name, spec in body.items():
            where = f"{prefix}.columns.{name}"
            if not isinstance(spec, Mapping) or "type" not in spec:
                raise ParameterError(f"{where}.type", _TYPES, None if not isinstance(spec, Mapping) else spec.get("type"))
            extra = sorted(set(spec) - {"type", "bounds", "categories", "description"})
            if extra:
                raise ParameterError(where, "only type, bounds, categories and description", extra)
            columns[name] = spec["type"]
            if "bounds" in spec:
                bounds[name] = spec["bounds"] if isinstance(spec["bounds"], list) else ()
            if "categories" in spec:
                categories[name] = spec["categories"] if isinstance(spec["categories"], list) else ()
        try:
            kinds = {name: ColumnKind(str(kind)) for name, kind in columns.items()}
        except ValueError:
            bad = next(name for name, kind in columns.items() if str(kind) not in set(ColumnKind))
            raise ParameterError(f"{prefix}.columns.{bad}.type", _TYPES, columns[bad]) from None
        for name, values in categories.items():  # TOML has no float/int distinction for a float column's 1
            if kinds[name] is ColumnKind.FLOAT and isinstance(values, list):
                categories[name] = [float(v) if isinstance(v, int) and not isinstance(v, bool) else v for v in values]
        encoding = check_encoding(raw.get("encoding"), f"{prefix}.encoding")
        try:
            return cls(kinds, bounds, categories, raw.get("privacy_unit"), declared=True, encoding=encoding)
        except ParameterError as error:  # the constructor names its keys schema.…: name them as the caller's
            if prefix == "schema" or not error.parameter.startswith("schema."):
                raise
            raise ParameterError(prefix + error.parameter.removeprefix("schema"), error.expected, error.got) from None

    def to_toml(self, *, source: str | None = None) -> str:
        """The schema as a TOML file, with a header saying what it is and that it was read from data.

        :param source: the data file it describes, written as ``source = …``; None (default) writes none.
        """
        lines = [
            "# dpwitness schema: the data owner's declaration of this table's columns.",
            "# Written by `dpwitness schema` / dpwitness.Schema.infer, which READ THE VALUES of the data:",
            "# this is the data owner's step, outside differential privacy. Review it, keep it, and use it",
            "# with Session(..., schema=...), `dpwitness query --schema` or a service table's `schema`.",
            "# Bounds and categories taken from the data disclose them: widen or replace them with public",
            "# knowledge (e.g. age in [0, 120]) before sharing this file or releasing anything with it.",
            f"schema_version = {SCHEMA_VERSION}",
        ]
        if source is not None:
            lines.append(f"source = {_toml_value(source)}")
        if self.encoding is not None:
            lines.append(f"encoding = {_toml_value(self.encoding)}")
        if self.privacy_unit is not None:
            lines.append(f"privacy_unit = {_toml_value(self.privacy_unit)}")
        for name, kind in self.columns.items():
            lines += ["", f"[columns.{_toml_value(name)}]", f"type = {_toml_value(kind.value)}"]
            if name in self.bounds:
                pair = [int(b) if kind is ColumnKind.INTEGER and b.is_integer() else b for b in self.bounds[name]]
                lines.append(f"bounds = {_toml_value(pair)}")
            if name in self.categories:
                lines.append(f"categories = {_toml_value(list(self.categories[name]))}")
        return "\n".join(lines) + "\n"

    # --- the data owner's step: reading the values -------------------------------------------------
    @classmethod
    def infer(
        cls,
        source: Any,
        *,
        bounds: bool = False,
        categories: int = 0,
        privacy_unit: str | None = None,
        encoding: str | None = None,
    ) -> Schema:
        """READS THE VALUES of ``source`` (a CSV/Parquet path or a Polars/pandas frame) and declares
        its columns: the data owner's step, outside DP — review the result and keep it (:meth:`to_toml`).

        A CSV is read through the same reader every engine uses (every cell text); a column is
        ``integer`` when every non-empty cell is a whole number, else ``float`` when every one
        is a number, else ``boolean`` when every one is true/false, else ``string`` (a column
        with no value is ``string``). Typed sources (Parquet, frames) keep their declared types.
        ``bounds`` adds each numeric column's [min, max] (when min < max); ``categories`` = N > 0
        lists the values of each text column with at most N distinct values. ``privacy_unit``
        names the column that identifies a person (checked to exist); ``encoding`` is a CSV's text
        encoding (None: UTF-8), kept in the schema so every face reads the file the same way.
        """
        encoding = check_encoding(encoding)
        if not isinstance(bounds, bool):
            raise ParameterError("bounds", "True or False", bounds)
        check_count(
            "categories",
            categories,
            minimum=0,
            maximum=MAX_CATEGORIES,
            expected=f"a whole number of distinct values from 0 (none) to {MAX_CATEGORIES}",
        )
        pl = require("polars", "polars", "Schema.infer")
        # The Polars engine's own opening (the one reader), looked up by name like every engine.
        engine = require("dpwitness.engines.polars", "polars", "Schema.infer").ENGINE
        table = engine.open(source, encoding=encoding)
        metadata = engine.schema(table)
        frame = table.frame
        kinds: dict[str, ColumnKind] = {}
        text = [name for name, kind in metadata.columns.items() if kind is ColumnKind.UNTYPED]
        if text:
            kinds.update(_text_kinds(pl, frame, text))
        for name, kind in metadata.columns.items():
            if name not in text and kind in DECLARABLE:
                kinds[name] = kind
        kinds = {name: kinds[name] for name in metadata.columns if name in kinds}  # the file's order
        typed = engine.open(table, dtypes={n: k.value for n, k in kinds.items() if n in text}).frame
        found_bounds: dict[str, tuple[float, float]] = {}
        found_categories: dict[str, tuple[Any, ...]] = {}
        numeric = [n for n, k in kinds.items() if k.numeric] if bounds else []
        listed = [n for n, k in kinds.items() if k is ColumnKind.STRING] if categories else []
        if numeric or listed:
            exprs = [pl.col(n).cast(pl.Float64).fill_nan(None).min().alias(f"min:{n}") for n in numeric]
            exprs += [pl.col(n).cast(pl.Float64).fill_nan(None).max().alias(f"max:{n}") for n in numeric]
            exprs += [pl.col(n).drop_nulls().n_unique().alias(f"distinct:{n}") for n in listed]
            stats = typed.select(exprs).collect().row(0, named=True)
            for name in numeric:
                low, high = stats[f"min:{name}"], stats[f"max:{name}"]
                if low is not None and high is not None and math.isfinite(low) and math.isfinite(high) and low < high:
                    found_bounds[name] = (low, high)
            small = [n for n in listed if 0 < stats[f"distinct:{n}"] <= categories]
            if small:
                values = typed.select([pl.col(n).drop_nulls().unique().sort().implode() for n in small]).collect().row(0)
                found_categories = {n: tuple(v) for n, v in zip(small, values, strict=True)}
        if privacy_unit is not None and privacy_unit not in kinds:
            raise ParameterError("privacy_unit", f"a column of the table ({', '.join(kinds)})", privacy_unit)
        return cls(kinds, found_bounds, found_categories, privacy_unit, declared=True, encoding=encoding)


_TYPES = "one of integer, float, string, boolean"


def _text_kinds(pl: Any, frame: Any, names: list[str]) -> dict[str, ColumnKind]:
    """The narrowest declarable type that every non-empty cell of each text column fits (one pass)."""
    exprs = []
    for name in names:  # each type as the engines will read the cells once it is declared (the cell grammar)
        cell = pl.col(name)
        present = cell.is_not_null() & (cell.str.strip_chars(SPACES) != "")
        exprs.append(present.sum().alias(f"present:{name}"))
        for kind, read in POLARS_READERS.items():
            exprs.append((present & read(cell).is_not_null()).sum().alias(f"{kind.value}:{name}"))
    counts = frame.select(exprs).collect().row(0, named=True)
    kinds: dict[str, ColumnKind] = {}
    for name in names:
        present = counts[f"present:{name}"]
        kinds[name] = ColumnKind.STRING
        for kind in POLARS_READERS:
            if present > 0 and counts[f"{kind.value}:{name}"] == present:
                kinds[name] = kind
                break
    return kinds


def load_schema(schema: Schema | str | os.PathLike[str] | None) -> Schema | None:
    """``schema=`` as given to a session or a command: a :class:`Schema`, a TOML path, or None."""
    if schema is None:
        return None
    if isinstance(schema, Schema):
        if not schema.declared:
            raise ParameterError("schema", "a declared schema (Schema.load, Schema.infer or Schema(..., declared=True))", schema)
        return schema
    if isinstance(schema, str | os.PathLike):
        return Schema.load(schema)
    raise ParameterError("schema", "a dpwitness.Schema or the path of a schema TOML file", type(schema).__name__)


#: The suffix of the schema file read beside a CSV: ``people.csv`` → ``people.schema.toml``.
BESIDE_SUFFIX = ".schema.toml"


def schema_beside(source: Any) -> Path | None:
    """The schema file beside the CSV path ``source`` (same folder, same stem, ``.schema.toml``),
    or None: ``source`` is not a CSV/TSV path, or no such file exists. Reads nothing."""
    if not isinstance(source, str | os.PathLike):
        return None
    path = Path(source)
    if path.suffix.lower() not in (".csv", ".tsv", ".txt"):
        return None
    beside = path.with_name(path.stem + BESIDE_SUFFIX)
    return beside if beside.is_file() else None


# --- a small TOML writer: strings, numbers, booleans and flat lists are all a schema holds ----------


def _toml_value(value: Any) -> str:
    if isinstance(value, bool | np.bool_):
        return "true" if value else "false"
    if isinstance(value, int | np.integer):
        return str(int(value))
    if isinstance(value, float | np.floating):
        number = float(value)
        if not math.isfinite(number):
            return "nan" if math.isnan(number) else ("inf" if number > 0 else "-inf")
        if number.is_integer() and abs(number) < 2**53:
            return f"{number:.1f}"
        return repr(number)
    if isinstance(value, str):
        escaped = (_ESCAPES.get(ch, ch) if ord(ch) >= 0x20 or ch in _ESCAPES else f"\\u{ord(ch):04x}" for ch in value)
        return '"' + "".join(escaped) + '"'
    if isinstance(value, list | tuple):
        return "[" + ", ".join(_toml_value(v) for v in value) + "]"
    raise TypeError(f"no TOML form for {type(value).__name__}")


_ESCAPES = {'"': '\\"', "\\": "\\\\", "\b": "\\b", "\t": "\\t", "\n": "\\n", "\f": "\\f", "\r": "\\r", "\x7f": "\\u007f"}


__all__ = [
    "BESIDE_SUFFIX",
    "DECLARABLE",
    "ColumnKind",
    "Schema",
    "load_schema",
    "parse_dtypes",
    "schema_beside",
    "value_fits",
]
