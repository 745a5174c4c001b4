"""Tables held by the service: loaded once at start, restricted to the declared columns.

The service is a face like the others: a CSV is opened by the engine every face uses
(:meth:`dpwitness.engines.polars.PolarsEngine.open`: the one reader, one physical line, one
record; the declared types applied as the same non-strict casts, so a cell that does not fit
is null). The column types come **only from the config** — a column's declared ``kind`` if the
config gives one, else numeric (float) for a column with ``bounds`` and text for the others. No
type is ever inferred from the values, and start-up reads only the header before it loads:
whether the service starts, and every type and message it shows, depends on the config and the
header, never on a record. A Parquet file's types are its declared metadata (its footer); the
config is checked against them, no value is inspected.

Each table carries its :class:`~dpwitness.io.schema.Schema` (kinds, bounds, categories in the
column's type, privacy unit): the sessions that answer its queries take their defaults from it,
as every face's sessions do. A text column with declared categories is held as a Polars
``Enum`` of exactly those categories, so a value outside them is missing (dropped like a null,
never released as a key).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import polars as pl

from dpwitness.common.errors import ParameterError
from dpwitness.engines.polars import PolarsEngine
from dpwitness.io.schema import DECLARABLE, Schema, polars_kind
from dpwitness.serve.config import TableConfig


@dataclass(frozen=True)
class LoadedTable:
    config: TableConfig
    frame: pl.DataFrame
    schema: Schema  # declared: the columns' kinds, bounds, categories (in the column's type), privacy unit

    @property
    def name(self) -> str:
        return self.config.name

    @property
    def keys(self) -> dict[str, tuple[Any, ...]]:
        """Column → its declared categories, in the column's type."""
        return dict(self.schema.categories)


def load_table(config: TableConfig) -> LoadedTable:
    """Read the table into memory and check the declared columns against its types."""
    where = f"tables.{config.name}"
    path = config.path
    if not path.is_file():
        raise ParameterError(f"{where}.path", "an existing CSV or Parquet file", str(path))
    wanted = list(config.columns) + (
        [config.privacy_unit] if config.privacy_unit and config.privacy_unit not in config.columns else []
    )
    parquet = path.suffix.lower() in {".parquet", ".pq"}
    engine = PolarsEngine()
    opened = engine.open(path)  # reads the header (or the footer) only
    names = engine.schema(opened).columns
    missing = [c for c in wanted if c not in names]
    if missing:
        raise ParameterError(f"{where}.columns", f"columns of {path.name}", missing)
    if not parquet:
        opened = engine.open(opened, dtypes={name: _kind(config, name) for name in wanted})
    frame = opened.frame.select(wanted).collect()
    keys: dict[str, tuple[Any, ...]] = {}
    enums = []
    for column in config.columns.values():
        dtype = frame.schema[column.name]
        if column.numeric and not dtype.is_numeric():
            raise ParameterError(f"{where}.columns.{column.name}.bounds", "declared only on a numeric column", str(dtype))
        if column.categories is not None:
            keys[column.name] = tuple(_typed(c, dtype, f"{where}.columns.{column.name}.categories") for c in column.categories)
            if dtype == pl.String:
                # Values outside the declared categories become null (never released as keys).
                enums.append(pl.col(column.name).cast(pl.Enum(list(column.categories)), strict=False))
    kinds = {name: polars_kind(frame.schema[name]) for name in wanted}
    schema = Schema(
        {name: kind for name, kind in kinds.items() if kind in DECLARABLE},
        bounds={c.name: c.bounds for c in config.columns.values() if c.bounds is not None},
        categories=keys,
        privacy_unit=config.privacy_unit,
        declared=True,
    )
    return LoadedTable(config, frame.with_columns(enums).rechunk(), schema)


def _typed(category: str, dtype: pl.DataType, where: str) -> Any:
    try:
        if dtype.is_integer():
            return int(category)
        if dtype.is_float():
            return float(category)
    except ValueError:
        raise ParameterError(where, f"values of the column's type ({dtype})", category) from None
    if dtype == pl.Boolean:
        return category.lower() == "true"
    return category


def _kind(config: TableConfig, name: str) -> str:
    """A CSV column's type, from the config only: its declared ``kind`` (integer, float, string,
    boolean) if the config has one, else float for a column with ``bounds``, else string."""
    column = config.columns.get(name)
    declared = getattr(column, "kind", None)
    if declared is not None:
        return str(getattr(declared, "value", declared))
    return "float" if column is not None and column.numeric else "string"
