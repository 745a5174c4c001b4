"""The embedded default engine: one lazy Polars plan per query, collected with the streaming engine.

CSV and Parquet paths are scanned lazily (:func:`dpwitness.io.reader.scan_polars` /
``pl.scan_parquet``) and only the columns the query uses are read, so a Parquet file larger than
memory works. A CSV is read by the one reader of every face, one physical line per record
(:mod:`dpwitness.io.reader`). Polars and pandas frames are accepted too. See :mod:`dpwitness.engines` for the contract.

Column types come from declared metadata (a Parquet or frame schema, ``dtypes=``) or from the
query, never from the values: a CSV is scanned with every column as text (``untyped``), and a
bounded statistic or a comparison with a number reads it with a non-strict cast (text that does
not parse is null). Declared ``dtypes`` are non-strict casts too. Both follow the one cell grammar
(:mod:`dpwitness.io.cells`), which the Spark engine implements alike. So no cell can make a plan
fail after the spend, and no error can quote one.
"""

from __future__ import annotations

import functools
import os
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import polars as pl

from dpwitness.common.errors import ParameterError
from dpwitness.engines import CheckedShapes, SelectionKey, declared_keys, plan_shape
from dpwitness.io.cells import polars_number, polars_text, write
from dpwitness.io.reader import scan_polars
from dpwitness.io.schema import POLARS_READERS, POLARS_TYPES, polars_kind
from dpwitness.mechanisms.quantiles import bin_scale
from dpwitness.query.predicates import to_polars
from dpwitness.query.queries import Aggregate, Aggregates, ColumnKind, Query, Schema, parse_dtypes

_CSV = {".csv", ".tsv", ".txt"}
_PARQUET = {".parquet", ".pq"}
_U64 = pl.UInt64
_BIN = "__dpw_bin"
_ROW = "_dpw_row"
_POSITION = "_dpw_position"
_CONTENT = "_dpw_content"
_ROWS = "_dpw_rows"
#: Plan shapes that passed :meth:`PolarsEngine.check` (per table schema): checked once each.
_CHECKED = CheckedShapes()


@dataclass(frozen=True)
class PolarsTable:
    """A lazy frame and the columns nobody declared a type for (held as text)."""

    frame: pl.LazyFrame
    untyped: frozenset[str] = frozenset()
    #: The rows are in memory (a Polars or pandas DataFrame), not scanned from a file.
    in_memory: bool = False
    #: The table's :class:`Schema`, once :meth:`PolarsEngine.schema` has read it (metadata only).
    kinds: list[Schema] = field(default_factory=list, compare=False, repr=False)


class PolarsEngine:
    """The Polars engine (this module's ``ENGINE``), under the contract of :mod:`dpwitness.engines`.

    ``handle`` is the table ``open`` returned (or a Polars LazyFrame), ``query`` a checked
    :class:`~dpwitness.query.queries.Query`, and ``selection_key`` the four 64-bit words that key
    contribution bounding's random choice of rows (the same words, the same rows kept).
    ``aggregate`` collects ``plan`` with Polars' streaming engine.
    """

    name = "polars"

    def open(
        self, source: Any, *, dtypes: Mapping[str, Any] | None = None, separator: str | None = None, encoding: str | None = None
    ) -> PolarsTable:
        """A lazy table over ``source``; a path is checked to exist and only a CSV's header is read.

        A CSV is read by :mod:`dpwitness.io.reader` (one physical line, one record; ``separator``
        declared, else a tab for ``.tsv`` and a comma otherwise; ``encoding`` declared, else UTF-8); its columns are text
        (``untyped``) unless ``dtypes`` declares them; ``dtypes`` (integer, float, string,
        boolean) is applied to any source as a non-strict cast.
        """
        declared = parse_dtypes(dtypes)
        untyped: frozenset[str] = frozenset()
        in_memory = isinstance(source, pl.DataFrame) or (isinstance(source, PolarsTable) and source.in_memory)
        if isinstance(source, PolarsTable):
            frame, untyped = source.frame, source.untyped
        elif isinstance(source, pl.LazyFrame):
            frame = source
        elif isinstance(source, pl.DataFrame):
            frame = source.lazy()
        elif isinstance(source, str | os.PathLike):
            path = Path(source)
            if not path.is_file():
                raise ParameterError("source", "an existing CSV or Parquet file", str(source))
            suffix = path.suffix.lower()
            if suffix in _PARQUET:
                frame = pl.scan_parquet(path)
            elif suffix in _CSV:
                frame = scan_polars(path, separator=separator, encoding=encoding)  # the one reader: reads the header only
                untyped = frozenset(frame.collect_schema().names())
            else:
                raise ParameterError("source", "a file ending in .csv, .tsv, .parquet or .pq", str(source))
        elif type(source).__module__.split(".")[0] == "pandas" and type(source).__name__ == "DataFrame":
            frame, in_memory = pl.from_pandas(source).lazy(), True
        else:
            raise ParameterError("source", "a CSV/Parquet path or a Polars/pandas DataFrame or LazyFrame", type(source).__name__)
        if declared:
            names = _names(frame)
            missing = [c for c in declared if c not in names]
            if missing:
                raise ParameterError("dtypes", f"columns of the table ({', '.join(names)})", missing)
            dtypes_of = frame.collect_schema()
            frame = frame.with_columns([_declare(c, k, dtypes_of[c]) for c, k in declared.items()])
            untyped = untyped - set(declared)
        return PolarsTable(frame, untyped, in_memory)

    def schema(self, handle: PolarsTable | pl.LazyFrame) -> Schema:
        """Column names and kinds from metadata (a CSV header, a Parquet footer): no row is read."""
        table = _table(handle)
        if table.kinds:
            return table.kinds[0]
        try:
            schema = table.frame.collect_schema()
        except (pl.exceptions.PolarsError, OSError) as error:
            raise ParameterError("source", "a readable table", type(error).__name__) from None
        kinds = Schema({name: ColumnKind.UNTYPED if name in table.untyped else polars_kind(t) for name, t in schema.items()})
        table.kinds.append(kinds)  # a table's schema never changes: read once
        return kinds

    def check(self, handle: PolarsTable | pl.LazyFrame, query: Query) -> None:
        """Run the whole plan on an empty table of the same schema (before the spend, reading nothing):
        a type error in the plan shows here, never after the spend."""
        table = _table(handle)
        try:
            schema = table.frame.collect_schema()
            shape = (tuple((name, repr(dtype)) for name, dtype in schema.items()), table.untyped, plan_shape(query))
            if shape in _CHECKED:  # the outcome depends on the schema and the query's shape only
                return
            empty = PolarsTable(pl.LazyFrame(schema=schema), table.untyped)
            self.plan(empty, query, selection_key=(0, 0, 0, 0)).collect()
        except pl.exceptions.PolarsError as error:
            raise ParameterError("query", "a query this table's column types support", type(error).__name__) from None
        _CHECKED.add(shape)

    def aggregate(self, handle: PolarsTable | pl.LazyFrame, query: Query, *, selection_key: SelectionKey) -> Aggregates:
        frame = self.plan(handle, query, selection_key=selection_key)
        result = frame.collect(engine=_engine_for(_table(handle), query))
        names = [a.value for a in query.aggregates]
        if not query.grouped:
            return {name: float(value or 0.0) for name, value in zip(names, result.row(0), strict=True)}
        groups = len(query.group_columns)
        out: dict[str, dict[Any, float]] = {name: {} for name in names}
        for values in result.iter_rows():
            key = values[0] if groups == 1 else tuple(values[:groups])
            for name, value in zip(names, values[groups:], strict=True):
                out[name][key] = float(value or 0.0)
        return declared_keys(query, _table(handle).untyped, dict(out))

    def aggregate_many(self, handle: PolarsTable | pl.LazyFrame, queries: Sequence[Query]) -> list[Aggregates]:
        """The aggregates of ``queries`` (one :func:`dpwitness.engines.fuse_key`) from one plan, one collect."""
        result = self.plan_many(handle, queries).collect(engine=_engine_for(_table(handle), queries[0]))
        untyped = _table(handle).untyped
        first = queries[0]
        if not first.grouped:
            row = result.row(0, named=True)
            return [{a.value: float(row[f"{n}:{a.value}"] or 0.0) for a in q.aggregates} for n, q in enumerate(queries)]
        groups = list(first.group_columns)
        keys = result.select(groups).rows() if len(groups) > 1 else result.get_column(groups[0]).to_list()
        out: list[Aggregates] = []
        for n, query in enumerate(queries):
            found: dict[str, Any] = {}
            for a in query.aggregates:
                values = result.get_column(f"{n}:{a.value}").to_list()
                found[a.value] = {k: float(v or 0.0) for k, v in zip(keys, values, strict=True)}
            out.append(declared_keys(query, untyped, found))
        return out

    def plan_many(self, handle: PolarsTable | pl.LazyFrame, queries: Sequence[Query]) -> pl.LazyFrame:
        """One plan for ``queries`` that share a :func:`dpwitness.engines.fuse_key`: read the columns
        of all, filter, drop rows with a null key, keep the declared keys, then one ``group_by``
        (or ``select``) with every query's aggregates, named ``"{position}:{aggregate}"``."""
        table = _table(handle)
        first = queries[0]
        groups = list(first.group_columns)
        kinds = self.schema(table).columns
        read = list(dict.fromkeys(c for q in queries for c in q.columns_read))
        frame = table.frame.select(read) if read else table.frame
        frame = _filtered(frame, first, kinds, read)
        schema = frame.collect_schema()
        floats = [c for c in groups if schema[c].is_float()]
        if groups and (floats or _null_key(first)):  # else the declared keys (never null) drop the null keys
            present = [pl.col(c).is_not_null() for c in groups] + [pl.col(c).is_not_nan() for c in floats]
            frame = frame.filter(pl.all_horizontal(present))
        if floats:  # ±0.0 are one key, as in plan()
            zero = [pl.when(pl.col(c) == 0).then(pl.lit(0.0, dtype=schema[c])).otherwise(pl.col(c)).alias(c) for c in floats]
            frame = frame.with_columns(zero)
        if first.keys is not None:
            frame = _keep_keys(frame, list(first.declared_columns), first.keys, schema)
        aggregates = []
        for n, query in enumerate(queries):
            number = query.bounds is not None and query.column is not None and kinds[query.column] is ColumnKind.UNTYPED
            aggregates.extend(_expressions(query, schema, number=number, prefix=f"{n}:"))
        return frame.group_by(groups).agg(aggregates) if groups else frame.select(aggregates)

    def plan(self, handle: PolarsTable | pl.LazyFrame, query: Query, *, selection_key: SelectionKey) -> pl.LazyFrame:
        """The lazy plan: read, filter, drop nulls, keep declared keys, bound contributions, clamp, aggregate.

        Without a privacy unit or groups, nulls need no filter: ``count`` counts non-null values
        and the sums skip nulls, which is the same rule, one pass cheaper.
        """
        table = _table(handle)
        groups = list(query.group_columns)
        unit = query.privacy_unit
        used = list(dict.fromkeys([c for c in (query.column, *groups, unit) if c is not None]))
        kinds = self.schema(table).columns
        frame = table.frame
        read = list(query.columns_read)
        if read:
            frame = frame.select(read)
        frame = _filtered(frame, query, kinds, read)
        if query.bounds is not None and query.column is not None and kinds[query.column] is ColumnKind.UNTYPED:
            frame = frame.with_columns(_as_number(query.column))  # the query says: numbers
        if used and len(used) < len(read):
            frame = frame.select(used)
        schema = frame.collect_schema()
        if groups or unit is not None:
            present = [pl.col(c).is_not_null() for c in used] + [pl.col(c).is_not_nan() for c in used if schema[c].is_float()]
            frame = frame.filter(pl.all_horizontal(present))
        floats = [c for c in groups if schema[c].is_float()]
        if floats:  # ±0.0 are one key, shown with the sign of the first row met: make it +0.0, as Spark does
            zero = [pl.when(pl.col(c) == 0).then(pl.lit(0.0, dtype=schema[c])).otherwise(pl.col(c)).alias(c) for c in floats]
            frame = frame.with_columns(zero)
        if query.keys is not None:
            frame = _keep_keys(frame, list(query.declared_columns), query.keys, schema)
        if unit is not None and not groups and query.aggregates == (Aggregate.COUNT,):
            # Which rows a unit keeps cannot change a count: Σ_units min(rows, k), no selection needed.
            per_unit = frame.group_by(unit).agg(pl.len().clip(upper_bound=query.contribution.max_rows).alias("count"))
            return per_unit.select(pl.col("count").sum())
        if unit is not None:
            frame = _bound(frame, query, unit, groups, selection_key)
        aggregates = _expressions(query, schema)
        if query.bins is not None:  # a quantile: counts per (key, bin of the column)
            frame, groups = frame.with_columns(_bin(query).alias(_BIN)), [*query.by, _BIN]
        return frame.group_by(groups).agg(aggregates) if groups else frame.select(aggregates)


def _engine_for(table: PolarsTable, query: Query) -> Any:
    """Polars' streaming engine (a file larger than memory; a ``group_by``), or its in-memory one
    for an ungrouped ``select`` over rows already in memory (the same sums, without the streaming
    engine's start-up: ≈ 60 µs of CPU a collect). Chosen from the source and the query's shape only."""
    predicate = query.predicate
    window = predicate is not None and predicate.window is not None
    plain = not query.grouped and query.privacy_unit is None and not window
    return _in_memory_engine() if table.in_memory and plain else "streaming"


@functools.cache
def _in_memory_engine() -> str:
    """The in-memory engine's name: "in-memory" (Polars ≥ 1.2x and 2.x), "cpu" on the oldest 1.x."""
    try:
        pl.LazyFrame({"x": [0]}).select(pl.len()).collect(engine="in-memory")
    except (ValueError, TypeError, pl.exceptions.PolarsError):
        return "cpu"
    return "in-memory"


def _null_key(query: Query) -> bool:
    """Whether a declared key of ``query`` has a null part (None), which a null cell would match in a join."""
    keys = query.keys or ()
    return any(k is None or (isinstance(k, tuple) and None in k) for k in keys)


def _table(handle: PolarsTable | pl.LazyFrame) -> PolarsTable:
    return handle if isinstance(handle, PolarsTable) else PolarsTable(handle)


def _names(frame: pl.LazyFrame) -> list[str]:
    try:
        return frame.collect_schema().names()
    except (pl.exceptions.PolarsError, OSError) as error:
        raise ParameterError("source", "a readable table", type(error).__name__) from None


def _as_number(column: str) -> pl.Expr:
    """Text read as a float64 number under the cell grammar (:mod:`dpwitness.io.cells`); not a number → null."""
    return polars_number(pl.col(column)).alias(column)


def _declare(column: str, kind: ColumnKind, dtype: pl.DataType) -> pl.Expr:
    """A declared type, never strict (a cell that does not fit becomes null, never an error): text is
    read and a typed value written as text under the cell grammar (:mod:`dpwitness.io.cells`)."""
    expr = pl.col(column)
    if kind is ColumnKind.STRING:
        return polars_text(expr, dtype).alias(column)
    if dtype == pl.String:
        return POLARS_READERS[kind](expr).alias(column)
    return expr.cast(getattr(pl, POLARS_TYPES[kind]), strict=False).alias(column)


def _filtered(frame: pl.LazyFrame, query: Query, kinds: Mapping[str, ColumnKind], read: list[str]) -> pl.LazyFrame:
    """Apply ``query.where``: the row-position window first (over every row, in the declared
    order), then the value conditions. Rows where the predicate is not *true* are dropped."""
    predicate = query.predicate
    if predicate is None:
        return frame
    if predicate.window is not None:
        low, high = predicate.window
        frame = frame.sort(_order(query, kinds, read), nulls_last=True).with_row_index(_ROW, offset=1)
        keep = pl.col(_ROW) >= low
        if high != float("inf"):
            keep = keep & (pl.col(_ROW) <= high)
        frame = frame.filter(keep).drop(_ROW)
    if predicate.value_tree is not None:
        frame = frame.filter(to_polars(predicate, kinds, frame.collect_schema()))
    return frame


def _order(query: Query, kinds: Mapping[str, ColumnKind], read: list[str]) -> list[pl.Expr]:
    """The declared order, then every other column read (rows equal in all of them are interchangeable).

    An untyped order column is ordered as numbers (then as text, for what does not parse).
    """
    keys: list[pl.Expr] = []
    for name in query.order_by:
        if kinds[name] is ColumnKind.UNTYPED:
            keys.append(polars_number(pl.col(name)))
        keys.append(pl.col(name))
    keys.extend(pl.col(c) for c in read if c not in query.order_by)
    return keys


def _key_values(name: str, values: list[Any], dtype: pl.DataType) -> pl.Series:
    """Declared key values in a column's type: for a text column each is written as the cell grammar
    writes it (``True`` is ``true``, ``1e20`` is ``1e+20``, as on Spark), else a non-strict cast."""
    if dtype == pl.String:
        return pl.Series(name, [write(v) for v in values], dtype=pl.String)
    return pl.Series(name, values, strict=False).cast(dtype, strict=False)


def _keep_keys(frame: pl.LazyFrame, groups: list[str], keys: tuple[Any, ...], schema: pl.Schema) -> pl.LazyFrame:
    if len(groups) == 1:
        values = _key_values("", list(keys), schema[groups[0]])
        return frame.filter(pl.col(groups[0]).is_in(values.implode()))
    columns = [_key_values(g, [k[i] for k in keys], schema[g]) for i, g in enumerate(groups)]
    declared = pl.DataFrame(columns)
    return frame.join(declared.lazy(), on=groups, how="semi")


def _keyed_random(identity: pl.Expr, key: SelectionKey) -> pl.Expr:
    """A keyed 64-bit pseudo-random value: Polars' seeded hash, twice, with key words mixed in."""
    return identity.hash(seed=key[0]).xor(pl.lit(key[1], dtype=_U64)).hash(seed=key[2]).xor(pl.lit(key[3], dtype=_U64))


def _bound(frame: pl.LazyFrame, query: Query, unit: str, groups: list[str], key: SelectionKey) -> pl.LazyFrame:
    """Keep a uniformly random ≤ k rows per unit (or ≤ g keys per unit and ≤ k rows per (unit, key)).

    A unit with ≤ k rows keeps them all. The rows of units with more get a keyed hash of their
    values (unit[, key] included); sorted by it, identical rows are adjacent, and a row's
    occurrence among its identical rows is its distance to the start of their run. A second
    keyed hash of (content, occurrence) draws each row's place; sorted by the draw, a unit keeps
    its first k rows (``group_by(unit).head(k)``: Polars keeps the order of rows within a group).
    One window count, two sorts, elementwise runs and one grouped head: linear in the rows on
    Polars 1.x and 2.x alike (a ``rank().over(unit)`` per unit, an earlier plan, grew
    superlinearly on Polars 1.36; the head costs less CPU than ``int_range(len).over(unit)``).

    Which rows a unit keeps depends only on the selection key and that unit's own rows, never on
    other units or on the file order (identical rows are interchangeable: which copy is first in
    a run does not change what is kept), so for *every* key the bounded table moves by one unit's
    ≤ k rows, as Δ assumes; with a secret key the kept subset is uniformly random (2^-64 hash
    collisions aside).
    """
    bound = query.contribution
    if groups and query.max_groups is not None:
        # One row per (unit, key): distinct, so the first g in keyed-hash order are a uniform pick of ≤ g keys.
        pair_hash = _keyed_random(pl.struct([unit, *groups]), key).alias(_CONTENT)
        pairs = frame.select([unit, *groups]).unique().with_columns(pair_hash)
        chosen = pairs.sort(_CONTENT).group_by(unit).head(bound.max_groups).drop(_CONTENT)
        frame = frame.join(chosen, on=[unit, *groups], how="semi", nulls_equal=True)
        per, limit = [unit, *groups], bound.max_rows_per_group
    else:
        per, limit = [unit], bound.max_rows
    return keep_at_most(frame, per, limit, key)


def keep_at_most(frame: pl.LazyFrame, per: list[str], limit: int, key: SelectionKey) -> pl.LazyFrame:
    """``frame`` with ≤ ``limit`` rows per value of the ``per`` columns, picked by hashes keyed by
    ``key`` of each row's content (and its occurrence among identical rows), never by file order: a row's rank depends only on its
    own content and the rows identical to it (:func:`_bound`; the private join's truncation too)."""
    schema = frame.collect_schema()
    # A Categorical's physical codes depend on which strings the whole table held first: hash it as text.
    values = [pl.col(c).cast(pl.String) if schema[c] == pl.Categorical else pl.col(c) for c in schema.names()]
    counted = frame.with_columns(pl.len().over(per).alias(_ROWS)).cache()  # one window for both branches
    light = counted.filter(pl.col(_ROWS) <= limit).drop(_ROWS)
    content = _keyed_random(pl.struct(values), key).alias(_CONTENT)  # equal for identical rows only (2^-64 aside)
    heavy = counted.filter(pl.col(_ROWS) > limit).drop(_ROWS).with_columns(content).sort(_CONTENT)
    row = pl.int_range(pl.len(), dtype=pl.Int64)
    new_run = (row == 0) | pl.col(_CONTENT).ne_missing(pl.col(_CONTENT).shift(1))
    run_start = pl.when(new_run).then(row).otherwise(None).forward_fill()
    occurrence = (row - run_start).cast(_U64).alias(_POSITION)
    draw = _keyed_random(pl.struct([pl.col(_CONTENT), pl.col(_POSITION)]), key).alias(_CONTENT)
    drawn = heavy.with_columns(occurrence).with_columns(draw).drop(_POSITION).sort(_CONTENT)
    # Polars keeps the order of rows within a group, so a group's head is its first rows by the draw. The
    # draw stays until after the head: of a frame holding only its keys, ``head`` keeps one row per group.
    kept = drawn.group_by(per).head(limit).select(schema.names())
    return pl.concat([light, kept], how="vertical")


def _bin(query: Query) -> pl.Expr:
    """The bin of clamp(column, L, U): min(⌊(v − L)·s⌋, B − 1), s from :func:`dpwitness.mechanisms.quantiles.bin_scale`."""
    assert query.column is not None and query.bounds is not None and query.bins is not None
    low, high = query.bounds
    scale = bin_scale(query.bounds, query.bins)
    value = _clamped(pl.col(query.column), pl.Float64, (low, high))
    return ((value - low) * scale).floor().clip(0, query.bins - 1).cast(pl.Int64)


def _expressions(query: Query, schema: pl.Schema, *, number: bool = False, prefix: str = "") -> list[pl.Expr]:
    """``query``'s aggregates (named ``prefix`` + the aggregate's name) over the rows reaching them.

    A null (or NaN) value counts for nothing, so these are the query's aggregates whether or
    not its null rows were dropped before. ``number``: read the (untyped) column as numbers first.
    """
    value = pl.lit(None, dtype=pl.Float64)
    if query.column is not None:
        value = _as_number(query.column) if number else pl.col(query.column)
        if number or schema[query.column].is_float():
            value = value.fill_nan(None)
    if query.aggregates == (Aggregate.COUNT,):  # the commonest release: build nothing else
        return [(value.count() if query.column is not None else pl.len()).alias(prefix + Aggregate.COUNT.value)]
    counted = value.count() if query.column is not None else pl.len()
    if query.bounds is not None:
        value = _clamped(value, pl.Float64 if number or query.column is None else schema[query.column], query.bounds)
    centred = value - query.centre
    build = {
        Aggregate.COUNT: counted,  # an integer, made a float by ``aggregate`` (a cast here would defeat Polars' fast row count)
        Aggregate.SUM: value.sum(),
        Aggregate.CENTRED_SUM: centred.sum(),
        Aggregate.CENTRED_SQUARES: (centred * centred).sum(),
    }
    return [build[a].alias(prefix + a.value) for a in query.aggregates]


def _clamped(value: pl.Expr, dtype: Any, bounds: tuple[float, float]) -> pl.Expr:
    """clamp(value, L, U) as float64 (null stays null). An integer column whose type holds both bounds,
    both integers, is clamped in its own type, then cast: one float64 pass less, the same numbers
    (rounding to float64 is monotone and the bounds are float64 values); other columns are cast first.

    Written as ``when``/``then`` rather than Polars' ``clip``: in Polars' streaming engine ``clip``
    cost about twice the CPU and 30–50 MB more at 100M rows (docs/benchmarks.md, issue 31 item 5).
    NaN, which Polars' comparisons order above every number, becomes U (``clip`` keeps it): the
    aggregates fill NaN with null first, and a quantile's count skips it either way.
    """
    low, high = bounds
    held = next((r for t, r in _INTEGER_RANGES if dtype == t), None)
    if held is not None and all(float(b).is_integer() and held[0] <= b <= held[1] for b in bounds):
        floor, ceiling = pl.lit(int(low), dtype=dtype), pl.lit(int(high), dtype=dtype)
    else:
        value = value.cast(pl.Float64)
        floor, ceiling = pl.lit(float(low), dtype=pl.Float64), pl.lit(float(high), dtype=pl.Float64)
    # the cast is a no-op (removed by Polars' optimizer) when the value was cast first
    return pl.when(value < floor).then(floor).when(value > ceiling).then(ceiling).otherwise(value).cast(pl.Float64)


_INTEGER_RANGES = [
    (t, (-(2 ** (b - 1)), 2 ** (b - 1) - 1)) for t, b in ((pl.Int8, 8), (pl.Int16, 16), (pl.Int32, 32), (pl.Int64, 64))
] + [(t, (0, 2**b - 1)) for t, b in ((pl.UInt8, 8), (pl.UInt16, 16), (pl.UInt32, 32), (pl.UInt64, 64))]


ENGINE = PolarsEngine()
