"""The embedded default engine: one lazy Polars plan per query, collected with the streaming engine.

CSV and Parquet paths are scanned lazily (``pl.scan_csv`` / ``pl.scan_parquet``) and only the
columns the query uses are read, so a Parquet file larger than memory works. Polars and
pandas frames are accepted too. See :mod:`dpwitness.engines` for the contract.
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

import polars as pl

from dpwitness.engines import SelectionKey
from dpwitness.errors import ParameterError
from dpwitness.queries import Aggregate, Aggregates, ColumnKind, Query, Schema

_CSV = {".csv", ".tsv", ".txt"}
_PARQUET = {".parquet", ".pq"}
#: Rows Polars reads to guess CSV column types (part of the public schema, not of the data).
CSV_INFER_ROWS = 10_000
_U64 = pl.UInt64


class PolarsEngine:
    name = "polars"

    def open(self, source: Any) -> pl.LazyFrame:
        """A lazy frame over ``source``; a path is checked to exist but not read."""
        if isinstance(source, pl.LazyFrame):
            return source
        if isinstance(source, pl.DataFrame):
            return source.lazy()
        if isinstance(source, str | os.PathLike):
            path = Path(source)
            if not path.is_file():
                raise ParameterError("source", "an existing CSV or Parquet file", str(source))
            suffix = path.suffix.lower()
            if suffix in _PARQUET:
                return pl.scan_parquet(path)
            if suffix in _CSV:
                return pl.scan_csv(path, infer_schema_length=CSV_INFER_ROWS, separator="\t" if suffix == ".tsv" else ",")
            raise ParameterError("source", "a file ending in .csv, .tsv, .parquet or .pq", str(source))
        if type(source).__module__.split(".")[0] == "pandas" and type(source).__name__ == "DataFrame":
            return pl.from_pandas(source).lazy()
        raise ParameterError("source", "a CSV/Parquet path or a Polars/pandas DataFrame or LazyFrame", type(source).__name__)

    def schema(self, handle: pl.LazyFrame) -> Schema:
        try:
            schema = handle.collect_schema()
            empty = handle.head(1).collect().height == 0
        except (pl.exceptions.PolarsError, OSError) as error:
            raise ParameterError("source", "a readable table", f"{type(error).__name__}: {error}") from None
        return Schema({name: _kind(dtype) for name, dtype in schema.items()}, empty)

    def aggregate(self, handle: pl.LazyFrame, query: Query, *, selection_key: SelectionKey) -> Aggregates:
        frame = self.plan(handle, query, selection_key=selection_key)
        result = frame.collect(engine="streaming")
        names = [a.value for a in query.aggregates]
        if not query.grouped:
            return {name: float(value or 0.0) for name, value in zip(names, result.row(0), strict=True)}
        groups = len(query.group_columns)
        out: dict[str, dict[Any, float]] = {name: {} for name in names}
        for values in result.iter_rows():
            key = values[0] if groups == 1 else tuple(values[:groups])
            for name, value in zip(names, values[groups:], strict=True):
                out[name][key] = float(value or 0.0)
        return dict(out)

    def plan(self, handle: pl.LazyFrame, query: Query, *, selection_key: SelectionKey) -> pl.LazyFrame:
        """The lazy plan: drop nulls, keep declared keys, bound contributions, clamp, aggregate.

        Without a privacy unit or groups, nulls need no filter: ``count`` counts non-null values
        and the sums skip nulls, which is the same rule, one pass cheaper.
        """
        groups = list(query.group_columns)
        unit = query.privacy_unit
        used = list(dict.fromkeys([c for c in (query.column, *groups, unit) if c is not None]))
        schema = handle.collect_schema()
        frame = handle.select(used) if used else handle
        if groups or unit is not None:
            present = [pl.col(c).is_not_null() for c in used] + [pl.col(c).is_not_nan() for c in used if schema[c].is_float()]
            frame = frame.filter(pl.all_horizontal(present))
        if query.keys is not None:
            frame = _keep_keys(frame, groups, query.keys, schema)
        if unit is not None and not groups and query.aggregates == (Aggregate.COUNT,):
            # Which rows a unit keeps cannot change a count: Σ_units min(rows, k), no selection needed.
            per_unit = frame.group_by(unit).agg(pl.len().clip(upper_bound=query.contribution.max_rows).alias("count"))
            return per_unit.select(pl.col("count").sum())
        if unit is not None:
            frame = _bound(frame, query, unit, groups, selection_key)
        aggregates = _expressions(query, schema)
        return frame.group_by(groups).agg(aggregates) if groups else frame.select(aggregates)


def _kind(dtype: pl.DataType) -> ColumnKind:
    if dtype.is_integer():
        return ColumnKind.INTEGER
    if dtype.is_float():
        return ColumnKind.FLOAT
    if dtype == pl.Boolean:
        return ColumnKind.BOOLEAN
    if dtype in (pl.String, pl.Categorical) or isinstance(dtype, pl.Enum):
        return ColumnKind.STRING
    return ColumnKind.OTHER


def _keep_keys(frame: pl.LazyFrame, groups: list[str], keys: tuple[Any, ...], schema: pl.Schema) -> pl.LazyFrame:
    if len(groups) == 1:
        values = pl.Series(list(keys), strict=False).cast(schema[groups[0]], strict=False)
        return frame.filter(pl.col(groups[0]).is_in(values.implode()))
    declared = pl.DataFrame([list(k) for k in keys], schema=[(g, schema[g]) for g in groups], orient="row")
    return frame.join(declared.lazy(), on=groups, how="semi")


def _keyed_random(identity: pl.Expr, key: SelectionKey) -> pl.Expr:
    """A keyed 64-bit pseudo-random value: Polars' seeded hash, twice, with key words mixed in."""
    return identity.hash(seed=key[0]).xor(pl.lit(key[1], dtype=_U64)).hash(seed=key[2]).xor(pl.lit(key[3], dtype=_U64))


def _bound(frame: pl.LazyFrame, query: Query, unit: str, groups: list[str], key: SelectionKey) -> pl.LazyFrame:
    """Keep a uniformly random ≤ k rows per unit (or ≤ g keys per unit and ≤ k rows per (unit, key)).

    Rows are ranked within their unit by a keyed hash of their position: with a secret key
    these behave as independent uniform values, so each unit keeps a uniformly random subset
    whatever the other units are (the bounded table moves by one unit's ≤ k rows, as Δ assumes).
    """
    bound = query.contribution
    if groups and query.max_groups is not None:
        # One row per (unit, key), ranked "ordinal": exactly ≤ g keys per unit even if two hashes tie.
        pairs = frame.select([unit, *groups]).unique()
        order = _keyed_random(pl.struct([unit, *groups]), key).rank("ordinal").over(unit)
        frame = frame.join(pairs.filter(order <= bound.max_groups), on=[unit, *groups], how="semi", nulls_equal=True)
        per, limit = [unit, *groups], bound.max_rows_per_group
    else:
        per, limit = [unit], bound.max_rows
    row = _keyed_random(pl.int_range(pl.len(), dtype=_U64), key)
    return frame.with_columns(row.alias("_dpw_random")).filter(pl.col("_dpw_random").rank("ordinal").over(per) <= limit)


def _expressions(query: Query, schema: pl.Schema) -> list[pl.Expr]:
    value = pl.lit(None, dtype=pl.Float64)
    if query.column is not None:
        value = pl.col(query.column)
        if schema[query.column].is_float():
            value = value.fill_nan(None)
    counted = value.count() if query.column is not None else pl.len()
    if query.bounds is not None:
        value = value.cast(pl.Float64).clip(*query.bounds)
    centred = value - query.centre
    build = {
        Aggregate.COUNT: counted,  # an integer, made a float by ``aggregate`` (a cast here would defeat Polars' fast row count)
        Aggregate.SUM: value.sum(),
        Aggregate.CENTRED_SUM: centred.sum(),
        Aggregate.CENTRED_SQUARES: (centred * centred).sum(),
    }
    return [build[a].alias(a.value) for a in query.aggregates]


ENGINE = PolarsEngine()
