"""The distributed engine: one Spark plan per query, for data that outgrows one machine.

Install with ``pip install 'dpwitness[spark]'`` (pyspark and a Java 17+ runtime). This module
is imported only when a session asks for ``engine="spark"`` (see :func:`dpwitness.engines.engine_for`).

It computes the exact aggregates of a :class:`~dpwitness.queries.Query`, following the
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
from collections.abc import Sequence
from functools import reduce
from pathlib import Path
from typing import TYPE_CHECKING, Any

from dpwitness.engines import SelectionKey
from dpwitness.errors import ParameterError
from dpwitness.queries import Aggregate, Aggregates, ColumnKind, Query, Schema

if TYPE_CHECKING:
    from pyspark.sql import Column, DataFrame, SparkSession

_CSV = {".csv", ".tsv", ".txt"}
_PARQUET = {".parquet", ".pq"}
_SELECTED = "__dpw_rank"


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


class SparkEngine:
    name = "spark"

    def open(self, source: Any) -> DataFrame:
        """A Spark DataFrame over ``source``: a Spark DataFrame, a CSV/Parquet path, or a pandas/Polars frame.

        A Parquet path only reads the file's footer; a CSV path is read with a header and
        Spark's type inference (one pass over the file).
        """
        from pyspark.sql import DataFrame

        if isinstance(source, DataFrame):
            return source
        if isinstance(source, str | os.PathLike):
            path = Path(source)
            if not path.exists():
                raise ParameterError("source", "an existing CSV or Parquet file (or a Parquet folder)", str(source))
            suffix = path.suffix.lower()
            spark = local_session()
            if path.is_dir() or suffix in _PARQUET:
                return spark.read.parquet(str(path))
            if suffix in _CSV:
                return (
                    spark.read.option("header", True)
                    .option("inferSchema", True)
                    .option("sep", "\t" if suffix == ".tsv" else ",")
                    .csv(str(path))
                )
            raise ParameterError("source", "a file ending in .csv, .tsv, .parquet or .pq, or a Parquet folder", str(source))
        module = type(source).__module__.split(".")[0]
        if module == "pandas" and type(source).__name__ == "DataFrame":
            return local_session().createDataFrame(source)
        if module == "polars" and type(source).__name__ in ("DataFrame", "LazyFrame"):
            frame = source.collect() if type(source).__name__ == "LazyFrame" else source
            return local_session().createDataFrame(frame.to_pandas())
        raise ParameterError("source", "a Spark DataFrame, a CSV/Parquet path or a pandas/Polars frame", type(source).__name__)

    def schema(self, handle: DataFrame) -> Schema:
        """Column kinds from Spark's schema, and whether there is a row (reads at most one)."""
        from pyspark.errors import PySparkException

        try:
            columns = {field.name: _kind(field.dataType) for field in handle.schema.fields}
            empty = handle.isEmpty()
        except PySparkException as error:
            raise ParameterError("source", "a readable table", f"{type(error).__name__}: {error}") from None
        return Schema(columns, empty)

    def aggregate(self, handle: DataFrame, query: Query, *, selection_key: SelectionKey) -> Aggregates:
        rows = self.plan(handle, query, selection_key=selection_key).collect()
        names = [a.value for a in query.aggregates]
        if not query.grouped:
            first = rows[0].asDict() if rows else {}
            return {name: float(first.get(name) or 0.0) for name in names}
        groups = len(query.group_columns)
        out: dict[str, dict[Any, float]] = {name: {} for name in names}
        for row in rows:
            key = row[0] if groups == 1 else tuple(row[:groups])
            for name, value in zip(names, row[groups:], strict=True):
                out[name][key] = float(value or 0.0)
        return dict(out)

    def plan(self, handle: DataFrame, query: Query, *, selection_key: SelectionKey) -> DataFrame:
        """The Spark plan: drop nulls, keep declared keys, bound contributions, clamp, aggregate."""
        frame = self.bounded(handle, query, selection_key=selection_key)
        groups = list(query.group_columns)
        if query.privacy_unit is not None and not groups and query.aggregates == (Aggregate.COUNT,):
            return frame  # already Σ_unit min(rows, k): see bounded()
        aggregates = _expressions(query)
        return frame.groupBy(*groups).agg(*aggregates) if groups else frame.agg(*aggregates)

    def bounded(self, handle: DataFrame, query: Query, *, selection_key: SelectionKey) -> DataFrame:
        """Steps 1–3 of the contract: the rows the aggregates are computed over.

        For an ungrouped count under a privacy unit (the one case where *which* rows are kept
        cannot change the result) it returns instead the one-row frame Σ_unit min(rows, k),
        skipping the per-row sort.
        """
        from pyspark.sql import functions as F

        groups = list(query.group_columns)
        unit = query.privacy_unit
        used = list(dict.fromkeys(c for c in (query.column, *groups, unit) if c is not None))
        frame = handle.select(*used) if used else handle.select(F.lit(1).alias("__dpw_row"))
        kinds = {field.name: field.dataType.typeName() for field in handle.schema.fields}
        present = [F.col(c).isNotNull() for c in used] + [~F.isnan(F.col(c)) for c in used if kinds[c] in ("double", "float")]
        if present:
            frame = frame.filter(reduce(lambda a, b: a & b, present))
        if query.keys is not None:
            frame = frame.filter(_declared(frame, groups, query.keys))
        if unit is None:
            return frame
        bound = query.contribution
        if not groups and query.aggregates == (Aggregate.COUNT,):
            per_unit = frame.groupBy(unit).agg(F.count(F.lit(1)).alias("rows"))
            return per_unit.agg(F.sum(F.least(F.col("rows"), F.lit(bound.max_rows))).cast("double").alias(Aggregate.COUNT.value))
        return _bound(frame, query, unit, groups, used, selection_key)


def _kind(dtype: Any) -> ColumnKind:
    from pyspark.sql import types as T

    if isinstance(dtype, T.ByteType | T.ShortType | T.IntegerType | T.LongType):
        return ColumnKind.INTEGER
    if isinstance(dtype, T.FloatType | T.DoubleType | T.DecimalType):
        return ColumnKind.FLOAT
    if isinstance(dtype, T.BooleanType):
        return ColumnKind.BOOLEAN
    if isinstance(dtype, T.StringType | T.VarcharType | T.CharType):
        return ColumnKind.STRING
    return ColumnKind.OTHER


def _declared(frame: DataFrame, groups: list[str], keys: Sequence[Any]) -> Column:
    """Rows whose key is one of the declared keys.

    Each declared value is cast to its column's type first, as the Polars engine does; a value
    that does not cast (``try_cast`` gives null) matches nothing.
    """
    from pyspark.sql import functions as F

    types = {field.name: field.dataType for field in frame.schema.fields}

    def literal(group: str, value: Any) -> Column:
        return F.lit(value).try_cast(types[group])

    if len(groups) == 1:
        return F.col(groups[0]).isin([literal(groups[0], k) for k in keys])
    matches = [
        reduce(lambda a, b: a & b, [F.col(g) == literal(g, v) for g, v in zip(groups, key, strict=True)]) for key in keys
    ]
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
        pair = _keyed([F.col(unit), *(F.col(g) for g in groups)], key)
        keys_of_unit = Window.partitionBy(unit).orderBy(pair, *groups)
        frame = frame.withColumn(_SELECTED, F.dense_rank().over(keys_of_unit)).filter(F.col(_SELECTED) <= bound.max_groups)
        per, limit = [unit, *groups], bound.max_rows_per_group
    else:
        per, limit = [unit], bound.max_rows
    content = [c for c in used if c not in per]
    position = F.row_number().over(Window.partitionBy(*per).orderBy(*content)) if content else F.row_number().over(
        Window.partitionBy(*per).orderBy(F.lit(0))
    )
    frame = frame.withColumn(_SELECTED, position)
    draw = _keyed([*(F.col(c) for c in per), F.col(_SELECTED)], key)
    chosen = Window.partitionBy(*per).orderBy(draw, F.col(_SELECTED))
    return frame.withColumn(_SELECTED, F.row_number().over(chosen)).filter(F.col(_SELECTED) <= limit).drop(_SELECTED)


def _expressions(query: Query) -> list[Column]:
    from pyspark.sql import functions as F

    value = F.lit(0.0)
    if query.bounds is not None and query.column is not None:
        low, high = query.bounds
        value = F.least(F.greatest(F.col(query.column).cast("double"), F.lit(float(low))), F.lit(float(high)))
    centred = value - F.lit(float(query.centre))
    build = {
        Aggregate.COUNT: F.count(F.lit(1)).cast("double"),
        Aggregate.SUM: F.sum(value),
        Aggregate.CENTRED_SUM: F.sum(centred),
        Aggregate.CENTRED_SQUARES: F.sum(centred * centred),
    }
    return [F.coalesce(build[a], F.lit(0.0)).alias(a.value) for a in query.aggregates]


ENGINE = SparkEngine()
