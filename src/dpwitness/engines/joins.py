"""A private table joined with a public (lookup) table, as each engine reads it.

The public table's values are public (the data owner or the analyst declared it so): it is read
whole, in Polars, to prepare it (:func:`prepare_public`: the join key cast to the private key's
type, null keys dropped, the largest number of rows one key matches, M), then handed to the
engine through its own ``open`` and joined lazily (:func:`join_public`, an inner or a left join
on one equality). Nothing of the private table is read here. Δ of a query over the joined rows
is derived in :mod:`dpwitness.query.queries` (``join_multiplicity`` = M, ``join_keeps_rows`` for a
left join).

Two private tables are joined by :func:`join_private` (truncated per unit, then per key, then an
inner join), whose Δ is :class:`dpwitness.privacy.neighbours.PrivateJoinBound`'s.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from dpwitness.common.errors import ParameterError, require
from dpwitness.engines import SelectionKey
from dpwitness.io.schema import POLARS_READERS, POLARS_TYPES
from dpwitness.privacy.neighbours import PrivateJoinBound
from dpwitness.query.queries import ColumnKind

#: The join key's column in a prepared public table (dropped after the join).
JOIN_KEY = "__dpw_join_key"


@dataclass(frozen=True)
class PublicTable:
    """A public table ready to join: ``frame`` (a Polars DataFrame with :data:`JOIN_KEY` and the
    payload columns, renamed as ``columns`` says: public name → name in the joined rows) and ``M``.

    ``left``: a LEFT JOIN, which keeps every private row (an unmatched one once, its public
    columns null); else an inner join, which drops the rows whose key matches nothing."""

    frame: Any
    columns: Mapping[str, str]
    multiplicity: int
    left: bool = False


def read_public(source: Any, name: str) -> Any:
    """A public table as a Polars DataFrame: a frame, or a CSV/Parquet path (its values are public, so
    its types may be read from them)."""
    pl = require("polars", "polars", "public tables")
    if isinstance(source, pl.DataFrame):
        return source
    if isinstance(source, pl.LazyFrame):
        return source.collect()
    if isinstance(source, str) or hasattr(source, "__fspath__"):
        path = str(source)
        if path.lower().endswith((".parquet", ".pq")):
            return pl.read_parquet(path)
        if path.lower().endswith((".csv", ".tsv")):
            return pl.read_csv(path, separator="\t" if path.lower().endswith(".tsv") else ",", infer_schema_length=None)
    raise ParameterError(
        "public", f"a Polars DataFrame or a CSV/Parquet path for the public table {name!r}", type(source).__name__
    )


def prepare_public(frame: Any, *, key: str, private_kind: ColumnKind, columns: Mapping[str, str]) -> PublicTable:
    """The public table keyed for the join: its ``key`` cast to the private key's type (text for an
    untyped CSV column, compared as text as a filter does), rows with a null key dropped, only the
    payload ``columns`` kept (renamed), and M = the most rows one key matches (1 if none).

    The cast follows the cell grammar (:mod:`dpwitness.io.cells`): a typed key (a date, a timestamp,
    a float…) is written as text as every engine writes it, and a text key is read as a number or
    a boolean as every engine reads a cell; what is not valid is null (dropped), never an error."""
    pl = require("polars", "polars", "public tables")
    from dpwitness.io.cells import polars_text

    target = getattr(pl, POLARS_TYPES.get(private_kind, "String"))
    source = frame.schema[key]
    value = pl.col(key)
    if target == pl.String:
        value = polars_text(value, source)
    elif source == pl.String:
        value = POLARS_READERS[private_kind](value)
    else:
        value = value.cast(target, strict=False)
    keyed = frame.select(value.alias(JOIN_KEY), *(pl.col(c).alias(n) for c, n in columns.items())).filter(
        pl.col(JOIN_KEY).is_not_null()
    )
    counts = keyed.group_by(JOIN_KEY).len()
    multiplicity = int(counts["len"].max() or 1) if counts.height else 1
    return PublicTable(keyed, dict(columns), multiplicity)


def join_public(engine: Any, handle: Any, public: PublicTable, *, left: str) -> Any:
    """``handle`` (an engine's opened private table) joined with ``public`` on ``left`` = its key
    (inner, or left when ``public.left``), lazily, through the engine's own ``open`` of the public
    frame: a handle of the same engine. A private key that cannot be cast to the public key's type
    is null and matches nothing (a left join keeps its row), never an error."""
    how = "left" if public.left else "inner"
    opened = engine.open(public.frame)
    if engine.name == "polars":
        import polars as pl

        from dpwitness.engines.polars import PolarsTable

        # the private key read as the prepared key's type (an Enum of categories joins as its text);
        # non-strict, so no private value can make the join fail after the spend
        key_type = opened.frame.collect_schema()[JOIN_KEY]
        private_key = pl.col(left).cast(key_type, strict=False)
        joined = handle.frame.join(opened.frame, left_on=private_key, right_on=JOIN_KEY, how=how)
        return PolarsTable(joined.drop(JOIN_KEY, strict=False), handle.untyped)
    if engine.name == "spark":
        from dpwitness.engines.spark import SparkTable

        right = opened.frame
        key_type = right.schema[JOIN_KEY].dataType
        joined = handle.frame.join(right, handle.frame[f"`{left}`"].try_cast(key_type) == right[JOIN_KEY], how).drop(JOIN_KEY)
        return SparkTable(joined, handle.untyped)
    raise ParameterError("engine", "polars or spark for a join with a public table", engine.name)


#: The private join's key, normalised alike on each side (dropped after the join).
PRIVATE_KEY = "__dpw_private_key"
_NUMBERS = {ColumnKind.INTEGER, ColumnKind.FLOAT}


def join_private(
    engine: Any,
    left: Any,
    right: Any,
    bound: PrivateJoinBound,
    *,
    unit: str,
    name: str,
    key: SelectionKey,
) -> Any:
    """Two private tables (``left``, ``right``: handles of ``engine``, both with the ``unit`` column)
    joined on ``bound.on`` after truncation, lazily (:class:`PrivateJoinBound` states and proves Δ):

    1. on each side, rows with a null unit or a null key are dropped (they match nothing);
    2. each side keeps ≤ m rows per unit, then ≤ k rows per key value, each picked by keyed hashes
       of the row's content (``keep_at_most``, the per-unit bounding's own choice; ``key`` is the
       secret selection key), so a row's rank never depends on another row;
    3. an inner join on the keys, compared by one rule whatever their types (never failing):
       keys of one kind as they are; an integer and a float key both as float64 (NaN matches
       nothing, -0.0 is 0.0); any other mix as *text* under the cell grammar
       (:mod:`dpwitness.io.cells`), so an integer 1 matches a text "1" but a float 1.0 matches "1.0".

    The joined rows hold the left's columns and the right's, a right column whose name the left
    has renamed ``"<name>.<column>"``; the right's key and unit columns are dropped, and so are the
    columns no engine can key (lists, maps, dates…: declare their types to keep them). Refused
    (before any spend) when a key or the unit is missing from a side or cannot be keyed.
    """
    left_key, right_key = bound.on
    if engine.name not in ("polars", "spark"):
        raise ParameterError("engine", "polars or spark for a join of two private tables", engine.name)
    schemas = (engine.schema(left).columns, engine.schema(right).columns)
    for columns, column, label in ((schemas[0], left_key, "left"), (schemas[1], right_key, "right")):
        for needed, role in ((column, "on"), (unit, "privacy_unit")):
            if needed not in columns:
                raise ParameterError(role, f"a column of the {label} table of the private join", needed)
            if not columns[needed].keyable:
                expected = f"a {label} column every engine can key (integer, float, text or boolean): declare its type"
                raise ParameterError(role, expected, f"{needed!r} ({columns[needed].value})")
    kinds = {schemas[0][left_key], schemas[1][right_key]}
    common = next(iter(kinds)) if len(kinds) == 1 else ColumnKind.FLOAT if kinds == _NUMBERS else ColumnKind.STRING
    # what no engine can key (lists, maps, dates…) is left out, so that every row can be hashed and ordered
    kept = [[c for c, k in columns.items() if k.keyable] for columns in schemas]
    limits = ((bound.max_rows_left, bound.max_rows_per_key_left), (bound.max_rows_right, bound.max_rows_per_key_right))
    renamed = {c: (f"{name}.{c}" if c in kept[0] else c) for c in kept[1] if c not in (right_key, unit)}
    untyped = frozenset(c for c in kept[0] if c in left.untyped) | frozenset(n for c, n in renamed.items() if c in right.untyped)
    if engine.name == "polars":
        return _polars_private(left, right, (left_key, right_key), kept, limits, renamed, common, unit, key, untyped)
    return _spark_private(left, right, (left_key, right_key), kept, limits, renamed, common, unit, key, untyped)


def _polars_private(
    left: Any,
    right: Any,
    on: tuple[str, str],
    kept: list[list[str]],
    limits: tuple[tuple[int, int], ...],
    renamed: dict[str, str],
    common: ColumnKind,
    unit: str,
    key: SelectionKey,
    untyped: frozenset[str],
) -> Any:
    """:func:`join_private` on Polars."""
    import polars as pl

    from dpwitness.engines.polars import PolarsTable, keep_at_most
    from dpwitness.io.cells import polars_text

    def side(table: Any, column: str, columns: list[str], per_unit: int, per_key: int) -> Any:
        frame = table.frame.select(columns)
        schema = frame.collect_schema()
        dtype, value = schema[column], pl.col(column)
        if common is ColumnKind.FLOAT:  # NaN matches nothing; -0.0 is 0.0
            value = value.cast(pl.Float64)
            value = pl.when(value.is_nan()).then(None).when(value == 0).then(pl.lit(0.0)).otherwise(value)
        elif common is ColumnKind.INTEGER:  # Int8…Int64 alike
            value = value.cast(pl.Int64)
        elif common in (ColumnKind.STRING, ColumnKind.UNTYPED):
            value = value.cast(pl.String) if isinstance(dtype, pl.Categorical | pl.Enum) else polars_text(value, dtype)
        present = pl.col(unit).is_not_null() & pl.col(PRIVATE_KEY).is_not_null()
        if schema[unit].is_float():
            present = present & pl.col(unit).is_not_nan()
        keyed = frame.with_columns(value.alias(PRIVATE_KEY)).filter(present)
        return keep_at_most(keep_at_most(keyed, [unit], per_unit, key), [PRIVATE_KEY], per_key, key)

    lf = side(left, on[0], kept[0], *limits[0])
    rf = side(right, on[1], kept[1], *limits[1])
    rf = rf.select(pl.col(PRIVATE_KEY), *(pl.col(c).alias(n) for c, n in renamed.items()))
    return PolarsTable(lf.join(rf, on=PRIVATE_KEY, how="inner").drop(PRIVATE_KEY), untyped)


def _spark_private(
    left: Any,
    right: Any,
    on: tuple[str, str],
    kept: list[list[str]],
    limits: tuple[tuple[int, int], ...],
    renamed: dict[str, str],
    common: ColumnKind,
    unit: str,
    key: SelectionKey,
    untyped: frozenset[str],
) -> Any:
    """:func:`join_private` on Spark: the same rule, Spark's hash (so the kept rows may differ from Polars'
    where truncation drops rows; the aggregates agree wherever it cannot matter)."""
    from pyspark.sql import functions as F

    from dpwitness.engines.spark import SparkTable, column, keep_at_most
    from dpwitness.io.cells import spark_text

    def side(table: Any, name: str, columns: list[str], per_unit: int, per_key: int) -> Any:
        frame = table.frame.select(*(column(c) for c in columns))
        types = {f.name: f.dataType for f in frame.schema.fields}
        value = column(name)
        if common is ColumnKind.FLOAT:
            value = value.cast("double")
            value = F.when(F.isnan(value), F.lit(None)).when(value == 0, F.lit(0.0)).otherwise(value)
        elif common is ColumnKind.INTEGER:
            value = value.cast("long")
        elif common in (ColumnKind.STRING, ColumnKind.UNTYPED):
            value = spark_text(value, types[name])
        present = column(unit).isNotNull() & F.col(PRIVATE_KEY).isNotNull()
        if type(types[unit]).__name__ in ("DoubleType", "FloatType"):
            present = present & ~F.isnan(column(unit))
        keyed = frame.withColumn(PRIVATE_KEY, value).filter(present)
        return keep_at_most(keep_at_most(keyed, [unit], per_unit, key), [PRIVATE_KEY], per_key, key)

    lf = side(left, on[0], kept[0], *limits[0])
    rf = side(right, on[1], kept[1], *limits[1])
    rf = rf.select(F.col(PRIVATE_KEY), *(column(c).alias(n) for c, n in renamed.items()))
    return SparkTable(lf.join(rf, on=PRIVATE_KEY, how="inner").drop(PRIVATE_KEY), untyped)
