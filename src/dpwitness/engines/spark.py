"""The distributed engine: one Spark plan per query, for data that outgrows one machine.

Install with ``pip install 'dpwitness[spark]'`` (pyspark and a Java 17+ runtime). This module
is imported only when a session asks for ``engine="spark"`` (see :func:`dpwitness.engines.engine_for`).

It computes the exact aggregates of a :class:`~dpwitness.query.queries.Query`, following the
contract in :mod:`dpwitness.engines` step for step (nulls/NaN dropped, declared keys kept,
contribution bounding, clamping to [L, U] as float64, count / sum / centred moments); the
session adds the noise once, on the driver. Only a handful of numbers (one row, or one row
per key) ever come back to the driver.

Random row selection (contribution bounding). Spark has no stable row order, so a row's
position inside its unit is its rank when the unit's rows are sorted by the query's own
columns (identical rows are interchangeable, so which of them gets which position changes
nothing). Each (unit[, key], position) gets a pseudo-random 64-bit value from Spark's
``xxhash64`` keyed with the session's four secret 64-bit words (``selection_key``, from
:func:`dpwitness.noise.bit_source`: the OS CSPRNG unless the session is seeded), and the
unit keeps its ``k`` rows with the smallest values: a uniformly random k-subset, which
depends only on the key and that unit's own rows (adding or removing another unit never
changes it). ``max_groups`` picks a unit's keys the same way, by a keyed value of
(unit, key), ties broken by the key itself so that at most ``max_groups`` keys survive.
The selection is the same *rule* as the Polars engine's; the pseudo-random values differ
(Polars' hash is not Spark's), so with bounding that actually drops rows the two engines
agree in distribution, and exactly wherever the selection cannot matter (a count, units
with ≤ k rows, units whose rows are equal).
"""

from __future__ import annotations

import os
import shutil
from collections.abc import Collection, Mapping, Sequence
from dataclasses import dataclass
from functools import reduce
from pathlib import Path
from typing import TYPE_CHECKING, Any

from dpwitness.common.errors import ParameterError
from dpwitness.engines import CheckedShapes, SelectionKey, declared_keys, plan_shape
from dpwitness.io.cells import spark_boolean, spark_integer, spark_number, spark_text, write
from dpwitness.io.reader import read_spark
from dpwitness.io.schema import spark_kind
from dpwitness.mechanisms.quantiles import bin_scale
from dpwitness.query.predicates import to_spark
from dpwitness.query.queries import Aggregate, Aggregates, ColumnKind, Query, Schema, parse_dtypes

if TYPE_CHECKING:
    from pyspark.sql import Column, DataFrame, SparkSession

_CSV = {".csv", ".tsv", ".txt"}
_PARQUET = {".parquet", ".pq"}
_SELECTED = "__dpw_rank"
_ROW = "__dpw_position"
_BIN = "__dpw_bin"
#: Plan shapes that passed :meth:`SparkEngine.check` (per table schema): analysed once each.
_CHECKED = CheckedShapes()


def local_session(
    *,
    cores: int = 2,
    shuffle_partitions: int = 4,
    driver_memory: str | None = None,
    app_name: str = "dpwitness",
) -> SparkSession:
    """A local Spark session bound to 127.0.0.1 (``local[cores]``, no web UI), or the active one.

    Starting the JVM takes several seconds: start it once and reuse it. ``driver_memory``
    (e.g. ``"4g"``) only takes effect when no session is running yet.

    :param cores: the worker threads of ``local[cores]``; default 2.
    :param shuffle_partitions: ``spark.sql.shuffle.partitions``, the partitions of a shuffle
        (a group-by); default 4 (Spark's own default, 200, is meant for clusters).
    :param driver_memory: the driver's heap, in Spark's size syntax; default None: Spark's.
    :param app_name: the application's name as Spark shows it; default ``"dpwitness"``.

    Like ``driver_memory``, every parameter only applies when no session is active: an active
    session is returned as it is.
    """
    if shutil.which("java") is None and not os.environ.get("JAVA_HOME"):
        raise RuntimeError("Spark needs a Java runtime (17 or later): none found on PATH and JAVA_HOME is not set")
    os.environ.setdefault("SPARK_LOCAL_IP", "127.0.0.1")
    from pyspark.sql import SparkSession

    active = SparkSession.getActiveSession()
    if active is not None:
        return active
    builder = (
        SparkSession.builder.master(f"local[{cores}]")
        .appName(app_name)
        .config("spark.driver.bindAddress", "127.0.0.1")
        .config("spark.driver.host", "127.0.0.1")
        .config("spark.ui.enabled", "false")
        .config("spark.ui.showConsoleProgress", "false")
        .config("spark.sql.shuffle.partitions", str(shuffle_partitions))
        .config("spark.sql.session.timeZone", "UTC")
        .config("spark.sql.execution.arrow.pyspark.enabled", "true")
    )
    if driver_memory is not None:
        builder = builder.config("spark.driver.memory", driver_memory)
    session = builder.getOrCreate()
    session.sparkContext.setLogLevel("ERROR")
    return session


@dataclass(frozen=True)
class SparkTable:
    """A Spark DataFrame and the columns nobody declared a type for (held as text)."""

    frame: DataFrame
    untyped: frozenset[str] = frozenset()


_SPARK_TYPES = {ColumnKind.INTEGER: "long", ColumnKind.FLOAT: "double", ColumnKind.STRING: "string"}


class SparkEngine:
    """The Spark engine (this module's ``ENGINE``), under the contract of :mod:`dpwitness.engines`.

    ``handle`` is the table ``open`` returned (or a Spark DataFrame), ``query`` a checked
    :class:`~dpwitness.query.queries.Query`, and ``selection_key`` the four 64-bit words that key
    contribution bounding's random choice of rows (the same words, the same rows kept).
    ``aggregate`` collects ``plan`` and hands its rows to ``read``, whose ``untyped`` names the
    table's text columns (default none), so that declared keys read from text cells come back
    as the declared values (see :func:`dpwitness.engines.declared_keys`).
    """

    name = "spark"

    def open(
        self, source: Any, *, dtypes: Mapping[str, Any] | None = None, separator: str | None = None, encoding: str | None = None
    ) -> SparkTable:
        """A Spark table over ``source``: a Spark DataFrame, a CSV/Parquet path, or a pandas/Polars frame.

        A Parquet path only reads the file's footer; a CSV path only its header, and its lines
        are read by :func:`dpwitness.io.reader.read_spark` (the rules of every face: one physical
        line, one record; ``separator`` declared, else a tab for ``.tsv`` and a comma; ``encoding``
        declared, else UTF-8). Every
        CSV column is text (``untyped``) unless ``dtypes`` declares it (never Spark's type
        inference, which reads the values). Declared types are non-strict casts (``try_cast``).
        """
        declared = parse_dtypes(dtypes)
        table = self._open(source, separator, encoding)
        if not declared:
            return table
        frame, names = table.frame, table.frame.columns
        missing = [c for c in declared if c not in names]
        if missing:
            raise ParameterError("dtypes", f"columns of the table ({', '.join(names)})", missing)
        for column, kind in declared.items():
            frame = frame.withColumn(column, _declare(frame, column, kind))
        return SparkTable(frame, table.untyped - set(declared))

    def _open(self, source: Any, separator: str | None = None, encoding: str | None = None) -> SparkTable:
        from pyspark.sql import DataFrame

        if isinstance(source, SparkTable):
            return source
        if isinstance(source, DataFrame):
            return SparkTable(source)
        if isinstance(source, str | os.PathLike):
            path = Path(source)
            if not path.exists():
                raise ParameterError("source", "an existing CSV or Parquet file (or a Parquet folder)", str(source))
            suffix = path.suffix.lower()
            spark = local_session()
            if path.is_dir() or suffix in _PARQUET:
                return SparkTable(spark.read.parquet(str(path)))
            if suffix in _CSV:  # the one reader of every face: one physical line, one record
                frame = read_spark(spark, path, separator=separator, encoding=encoding)
                return SparkTable(frame, frozenset(frame.columns))
            raise ParameterError("source", "a file ending in .csv, .tsv, .parquet or .pq, or a Parquet folder", str(source))
        module = type(source).__module__.split(".")[0]
        if module == "pandas" and type(source).__name__ == "DataFrame":
            import polars as pl

            return SparkTable(_from_polars(pl.from_pandas(source)))  # the Polars engine's conversion
        if module == "polars" and type(source).__name__ in ("DataFrame", "LazyFrame"):
            return SparkTable(_from_polars(source.collect() if type(source).__name__ == "LazyFrame" else source))
        raise ParameterError("source", "a Spark DataFrame, a CSV/Parquet path or a pandas/Polars frame", type(source).__name__)

    def schema(self, handle: SparkTable | DataFrame) -> Schema:
        """Column names and kinds from Spark's schema (metadata only: no row is read)."""
        from pyspark.errors import PySparkException

        table = _table(handle)
        try:
            fields = table.frame.schema.fields
        except PySparkException as error:
            raise ParameterError("source", "a readable table", type(error).__name__) from None
        return Schema({f.name: ColumnKind.UNTYPED if f.name in table.untyped else spark_kind(f.dataType) for f in fields})

    def check(self, handle: SparkTable | DataFrame, query: Query) -> None:
        """Build (and so analyse) the plan without running it, before the spend."""
        from pyspark.errors import PySparkException

        table = _table(handle)
        try:
            shape = (table.frame.schema.json(), table.untyped, plan_shape(query))
            if shape in _CHECKED:  # the outcome depends on the schema and the query's shape only
                return
            self.plan(table, query, selection_key=(0, 0, 0, 0)).schema  # noqa: B018  (analysis only)
        except PySparkException as error:
            raise ParameterError("query", "a query this table's column types support", type(error).__name__) from None
        _CHECKED.add(shape)

    def aggregate(self, handle: SparkTable | DataFrame, query: Query, *, selection_key: SelectionKey) -> Aggregates:
        rows = self.plan(handle, query, selection_key=selection_key).collect()
        return self.read(query, rows, untyped=_table(handle).untyped)

    def read(self, query: Query, rows: Sequence[Sequence[Any]], *, untyped: Collection[str] = frozenset()) -> Aggregates:
        """The aggregates in the rows of :meth:`plan` (each in the plan's column order), as
        :meth:`aggregate` returns them: for a caller that collects many plans in one job."""
        names = [a.value for a in query.aggregates]
        if not query.grouped:
            first = rows[0] if rows else [None] * len(names)
            return {name: float(value or 0.0) for name, value in zip(names, first, strict=True)}
        groups = len(query.group_columns)
        out: dict[str, dict[Any, float]] = {name: {} for name in names}
        for row in rows:
            key = row[0] if groups == 1 else tuple(row[:groups])
            for name, value in zip(names, row[groups:], strict=True):
                out[name][key] = float(value or 0.0)
        return declared_keys(query, untyped, dict(out))

    def aggregate_many(self, handle: SparkTable | DataFrame, queries: Sequence[Query]) -> list[Aggregates]:
        """The aggregates of ``queries`` (one :func:`dpwitness.engines.fuse_key`) from one Spark job."""
        rows = self.plan_many(handle, queries).collect()
        untyped = _table(handle).untyped
        groups = len(queries[0].group_columns)
        out: list[Aggregates] = []
        start = groups
        for query in queries:
            width = len(query.aggregates)
            picked = [[*row[:groups], *row[start : start + width]] for row in rows]
            out.append(self.read(query, picked, untyped=untyped))
            start += width
        return out

    def plan_many(self, handle: SparkTable | DataFrame, queries: Sequence[Query]) -> DataFrame:
        """One plan for ``queries`` that share a :func:`dpwitness.engines.fuse_key`: filter, drop rows
        with a null key, keep the declared keys, then one ``groupBy`` (or ``agg``) with every
        query's aggregates, each over the rows where its own column is present (not null, not NaN)."""
        from pyspark.sql import functions as F

        first = queries[0]
        groups = list(first.group_columns)
        table = _table(handle)
        schema = self.schema(table).columns
        read = list(dict.fromkeys(c for q in queries for c in q.columns_read))
        frame = table.frame.select(*(_col(c) for c in read)) if read else table.frame.select(F.lit(1).alias("__dpw_row"))
        frame = _filtered(frame, first, schema, read)
        kinds = {field.name: field.dataType.typeName() for field in frame.schema.fields}
        present = [_col(c).isNotNull() for c in groups] + [~F.isnan(_col(c)) for c in groups if kinds[c] in ("double", "float")]
        if present:
            frame = frame.filter(reduce(lambda a, b: a & b, present))
        if first.keys is not None:
            frame = frame.filter(_declared(frame, list(first.declared_columns), first.keys))
        aggregates: list[Column] = []
        for n, query in enumerate(queries):
            column, value, kept = query.column, None, None
            if column is not None:
                number = query.bounds is not None and schema[column] is ColumnKind.UNTYPED
                value = _as_number(column) if number else _col(column)
                kept = value.isNotNull()
                if number or kinds[column] in ("double", "float"):
                    kept = kept & ~F.isnan(value)
            aggregates.extend(_expressions(query, value=value, kept=kept, prefix=f"{n}:"))
        return frame.groupBy(*(_col(g) for g in groups)).agg(*aggregates) if groups else frame.agg(*aggregates)

    def plan(self, handle: SparkTable | DataFrame, query: Query, *, selection_key: SelectionKey) -> DataFrame:
        """The Spark plan: drop nulls, keep declared keys, bound contributions, clamp, aggregate."""
        frame = self.bounded(handle, query, selection_key=selection_key)
        groups = list(query.group_columns)
        if query.privacy_unit is not None and not groups and query.aggregates == (Aggregate.COUNT,):
            return frame  # already Σ_unit min(rows, k): see bounded()
        aggregates = _expressions(query)
        if query.bins is not None:  # a quantile: counts per (key, bin of the column)
            frame, groups = frame.withColumn(_BIN, _bin(query)), [*query.by, _BIN]
        return frame.groupBy(*(_col(g) for g in groups)).agg(*aggregates) if groups else frame.agg(*aggregates)

    def bounded(self, handle: SparkTable | DataFrame, query: Query, *, selection_key: SelectionKey) -> DataFrame:
        """Steps 0–4 of the contract: the rows the aggregates are computed over.

        For an ungrouped count under a privacy unit (the one case where *which* rows are kept
        cannot change the result) it returns instead the one-row frame Σ_unit min(rows, k),
        skipping the per-row sort.
        """
        from pyspark.sql import functions as F

        groups = list(query.group_columns)
        unit = query.privacy_unit
        used = list(dict.fromkeys(c for c in (query.column, *groups, unit) if c is not None))
        table = _table(handle)
        schema = self.schema(table).columns
        read = list(query.columns_read)
        frame = table.frame.select(*(_col(c) for c in read)) if read else table.frame.select(F.lit(1).alias("__dpw_row"))
        frame = _filtered(frame, query, schema, read)
        if query.bounds is not None and query.column is not None and schema[query.column] is ColumnKind.UNTYPED:
            frame = frame.withColumn(query.column, _as_number(query.column))  # the query says: numbers
        if used and len(used) < len(read):
            frame = frame.select(*(_col(c) for c in used))
        kinds = {field.name: field.dataType.typeName() for field in frame.schema.fields}
        present = [_col(c).isNotNull() for c in used] + [~F.isnan(_col(c)) for c in used if kinds[c] in ("double", "float")]
        if present:
            frame = frame.filter(reduce(lambda a, b: a & b, present))
        if query.keys is not None:
            frame = frame.filter(_declared(frame, list(query.declared_columns), query.keys))
        if unit is None:
            return frame
        bound = query.contribution
        if not groups and query.aggregates == (Aggregate.COUNT,):
            per_unit = frame.groupBy(_col(unit)).agg(F.count(F.lit(1)).alias("rows"))
            return per_unit.agg(F.sum(F.least(F.col("rows"), F.lit(bound.max_rows))).cast("double").alias(Aggregate.COUNT.value))
        return _bound(frame, query, unit, groups, used, selection_key)


def _from_polars(frame: Any) -> DataFrame:
    """A Spark frame whose schema comes from ``frame``'s dtypes, never from its values.

    Spark's inference reads the rows: it refuses an empty frame and turns a nullable integer
    into a double, so whether (and how) a table opens would depend on the data, e.g. an exact
    emptiness oracle before the spend. Each column is cast first to the Polars type whose Arrow
    form is exactly its Spark field's (a cast that cannot fail on any value), then sent as Arrow.
    """
    from pyspark.sql import types as T

    fields, casts = [], []
    for name, dtype in frame.schema.items():
        spark_type, target = _spark_type(name, dtype)
        fields.append(T.StructField(name, spark_type, True))
        if target != dtype:
            casts.append(frame[name].cast(target))
    table = (frame.with_columns(casts) if casts else frame).to_arrow()
    return local_session().createDataFrame(table, schema=T.StructType(fields))


def _spark_type(column: str, dtype: Any) -> tuple[Any, Any]:
    """The Spark type of a Polars dtype and the Polars dtype to cast to first (nested types too)."""
    import polars as pl
    from pyspark.sql import types as T

    simple = {
        pl.Int8: T.ByteType(), pl.Int16: T.ShortType(), pl.Int32: T.IntegerType(), pl.Int64: T.LongType(),
        pl.UInt8: T.ShortType(), pl.UInt16: T.IntegerType(), pl.UInt32: T.LongType(),
        pl.Float32: T.FloatType(), pl.Float64: T.DoubleType(), pl.Boolean: T.BooleanType(),
        pl.String: T.StringType(), pl.Binary: T.BinaryType(), pl.Date: T.DateType(), pl.Null: T.NullType(),
    }  # fmt: skip
    wider = {pl.UInt8: pl.Int16, pl.UInt16: pl.Int32, pl.UInt32: pl.Int64}  # Spark has no unsigned integers
    base = dtype.base_type()
    if base in simple:
        return simple[base], wider.get(base, dtype)
    if base in (pl.Categorical, pl.Enum):
        return T.StringType(), pl.String
    if base is pl.UInt64:
        return T.DecimalType(20, 0), pl.Decimal(20, 0)
    if base is pl.Decimal and (dtype.precision or 38) <= 38:
        return T.DecimalType(dtype.precision or 38, dtype.scale), dtype
    if base is pl.Datetime:  # Spark keeps microseconds; a time zone makes it an instant
        return (T.TimestampNTZType() if dtype.time_zone is None else T.TimestampType()), pl.Datetime("us", dtype.time_zone)
    if base is pl.Duration:
        return T.DayTimeIntervalType(), pl.Duration("us")
    if base in (pl.List, pl.Array):
        inner, target = _spark_type(column, dtype.inner)
        return T.ArrayType(inner, True), pl.List(target)
    if base is pl.Struct:
        parts = [(field.name, *_spark_type(column, field.dtype)) for field in dtype.fields]
        spark = T.StructType([T.StructField(name, kind, True) for name, kind, _ in parts])
        return spark, pl.Struct({name: target for name, _, target in parts})
    expected = "columns of types Spark holds (numbers, text, booleans, dates, times, lists, structs)"
    raise ParameterError("source", expected, f"{column}: {dtype}")


def _table(handle: SparkTable | DataFrame) -> SparkTable:
    return handle if isinstance(handle, SparkTable) else SparkTable(handle)


def keep_at_most(frame: DataFrame, per: list[str], limit: int, key: SelectionKey) -> DataFrame:
    """``frame`` with ≤ ``limit`` rows per value of the ``per`` columns: those with the smallest hash
    (keyed by ``key``) of their whole content and their occurrence among identical rows (so a row's rank never depends on a
    different row, unlike :func:`_bound`'s positions; a private join truncates per key with it)."""
    from pyspark.sql import Window
    from pyspark.sql import functions as F

    content = [_col(c) for c in frame.columns]
    occurrence = F.row_number().over(Window.partitionBy(*content).orderBy(F.lit(0)))  # identical rows are interchangeable
    frame = frame.withColumn(_ROW, occurrence)
    draw = _keyed([*content, F.col(_ROW)], key)
    chosen = Window.partitionBy(*(_col(c) for c in per)).orderBy(draw, *content, F.col(_ROW))
    return frame.withColumn(_SELECTED, F.row_number().over(chosen)).filter(F.col(_SELECTED) <= limit).drop(_SELECTED, _ROW)


def column(name: str) -> Column:
    """The column called exactly ``name`` (a dot or a space in a name is no path)."""
    return _col(name)


def _col(name: str) -> Column:
    """The column called exactly ``name`` (backticks quote it: a dot or space in a name is no path)."""
    from pyspark.sql import functions as F

    return F.col("`" + name.replace("`", "``") + "`")


def _as_number(column: str) -> Column:
    """Text read as a double under the cell grammar (:mod:`dpwitness.io.cells`); not a number → null."""
    return spark_number(_col(column))


def _declare(frame: DataFrame, column: str, kind: ColumnKind) -> Column:
    """A declared type, never strict (``try_cast``: a cell that does not fit becomes null, never an
    error): text is read and a typed value written as text under the cell grammar (:mod:`dpwitness.io.cells`)."""
    from pyspark.sql import types as T

    value = _col(column)
    dtype = frame.schema[column].dataType
    if kind is ColumnKind.STRING:
        return spark_text(value, dtype)
    if isinstance(dtype, T.StringType):
        readers = {ColumnKind.INTEGER: spark_integer, ColumnKind.FLOAT: spark_number, ColumnKind.BOOLEAN: spark_boolean}
        return readers[kind](value)
    return value.try_cast("boolean" if kind is ColumnKind.BOOLEAN else _SPARK_TYPES[kind])


def _filtered(frame: DataFrame, query: Query, kinds: Mapping[str, ColumnKind], read: list[str]) -> DataFrame:
    """``query.where``: the row-position window (over every row, in the declared order), then the values."""
    from pyspark.sql import Window
    from pyspark.sql import functions as F

    predicate = query.predicate
    if predicate is None:
        return frame
    if predicate.window is not None:
        low, high = predicate.window
        order = []
        for name in query.order_by:
            if kinds[name] is ColumnKind.UNTYPED:
                order.append(_as_number(name).asc_nulls_last())
            order.append(_col(name).asc_nulls_last())
        order.extend(_col(c).asc_nulls_last() for c in read if c not in query.order_by)
        frame = frame.withColumn(_ROW, F.row_number().over(Window.orderBy(*order)))
        keep = F.col(_ROW) >= F.lit(int(low))
        if high != float("inf"):
            keep = keep & (F.col(_ROW) <= F.lit(int(high)))
        frame = frame.filter(keep).drop(_ROW)
    if predicate.value_tree is not None:
        frame = frame.filter(to_spark(predicate, kinds))
    return frame


def _declared(frame: DataFrame, groups: list[str], keys: Sequence[Any]) -> Column:
    """Rows whose key is one of the declared keys.

    Each declared value is cast to its column's type first, as the Polars engine does (for a text
    column, written as the cell grammar writes it); a value that does not cast (``try_cast`` gives
    null) matches nothing.
    """
    from pyspark.sql import functions as F
    from pyspark.sql import types as T

    types = {field.name: field.dataType for field in frame.schema.fields}

    def literal(group: str, value: Any) -> Column:
        if isinstance(types[group], T.StringType):
            return F.lit(write(value)).cast("string")
        return F.lit(value).try_cast(types[group])

    if len(groups) == 1:
        return _col(groups[0]).isin([literal(groups[0], k) for k in keys])
    matches = [reduce(lambda a, b: a & b, [_col(g) == literal(g, v) for g, v in zip(groups, key, strict=True)]) for key in keys]
    return reduce(lambda a, b: a | b, matches)


def _keyed(parts: Sequence[Column], key: SelectionKey) -> Column:
    """A keyed pseudo-random 64-bit value of ``parts``: xxhash64 twice, the secret words mixed in."""
    from pyspark.sql import functions as F

    words = [F.lit(_signed(w)) for w in key]
    inner = F.xxhash64(words[0], *parts, words[1])
    return F.xxhash64(words[2], inner, words[3])


def _signed(word: int) -> int:
    """A 64-bit word as a Spark long (two's complement)."""
    word &= (1 << 64) - 1
    return word - (1 << 64) if word >= 1 << 63 else word


def _bound(frame: DataFrame, query: Query, unit: str, groups: list[str], used: list[str], key: SelectionKey) -> DataFrame:
    """≤ k random rows per unit, or ≤ g random keys per unit and ≤ k random rows per (unit, key)."""
    from pyspark.sql import Window
    from pyspark.sql import functions as F

    bound = query.contribution
    if groups and query.max_groups is not None:
        pair = _keyed([_col(unit), *(_col(g) for g in groups)], key)
        keys_of_unit = Window.partitionBy(_col(unit)).orderBy(pair, *(_col(g) for g in groups))
        frame = frame.withColumn(_SELECTED, F.dense_rank().over(keys_of_unit)).filter(F.col(_SELECTED) <= bound.max_groups)
        per, limit = [unit, *groups], bound.max_rows_per_group
    else:
        per, limit = [unit], bound.max_rows
    content = [c for c in used if c not in per]
    order = [_col(c) for c in content] or [F.lit(0)]
    position = F.row_number().over(Window.partitionBy(*(_col(c) for c in per)).orderBy(*order))
    frame = frame.withColumn(_SELECTED, position)
    draw = _keyed([*(_col(c) for c in per), F.col(_SELECTED)], key)
    chosen = Window.partitionBy(*(_col(c) for c in per)).orderBy(draw, F.col(_SELECTED))
    return frame.withColumn(_SELECTED, F.row_number().over(chosen)).filter(F.col(_SELECTED) <= limit).drop(_SELECTED)


def _bin(query: Query) -> Column:
    """The bin of clamp(column, L, U): min(⌊(v − L)·s⌋, B − 1), the same float64 operations as Polars."""
    from pyspark.sql import functions as F

    assert query.column is not None and query.bounds is not None and query.bins is not None
    low, high = query.bounds
    scale = bin_scale(query.bounds, query.bins)
    value = F.least(F.greatest(_col(query.column).cast("double"), F.lit(float(low))), F.lit(float(high)))
    return F.least(F.floor((value - F.lit(float(low))) * F.lit(scale)), F.lit(query.bins - 1)).cast("long")


def _expressions(query: Query, *, value: Column | None = None, kept: Column | None = None, prefix: str = "") -> list[Column]:
    """``query``'s aggregates (named ``prefix`` + the aggregate's name); ``value`` is its column
    as read (default: the column itself), ``kept`` the rows they are over (default: every row
    reaching them, as :meth:`SparkEngine.bounded` dropped the others)."""
    from pyspark.sql import functions as F

    clamped = F.lit(0.0)
    if query.bounds is not None and query.column is not None:
        low, high = query.bounds
        read = _col(query.column) if value is None else value
        clamped = F.least(F.greatest(read.cast("double"), F.lit(float(low))), F.lit(float(high)))
    if kept is not None:
        clamped = F.when(kept, clamped)  # null elsewhere: neither counted nor summed
    centred = clamped - F.lit(float(query.centre))
    build = {
        Aggregate.COUNT: F.count(F.lit(1) if kept is None else F.when(kept, F.lit(1))).cast("double"),
        Aggregate.SUM: F.sum(clamped),
        Aggregate.CENTRED_SUM: F.sum(centred),
        Aggregate.CENTRED_SQUARES: F.sum(centred * centred),
    }
    return [F.coalesce(build[a], F.lit(0.0)).alias(prefix + a.value) for a in query.aggregates]


ENGINE = SparkEngine()
