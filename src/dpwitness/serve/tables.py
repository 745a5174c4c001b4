"""Tables held by the service: loaded once at start, restricted to the declared columns.

A CSV is read by the one reader of every face (:mod:`dpwitness.reader`: one physical line, one
record), every column as text; the column types then come **only from the config** — a column's
declared ``kind`` if the config gives one, else numeric (float64) for a column with ``bounds``
and text for the others — applied as non-strict casts (a cell that does not fit is null). No
type is ever inferred from the values, and start-up reads only the header before it loads:
whether the service starts, and every type and message it shows, depends on the config and the
header, never on a record.

A categorical column's declared categories are converted to the column's declared type here
(so that ``education_num`` can be both bounded and grouped on); a text column with declared
categories is held as a Polars ``Enum`` of exactly those categories, so a value outside them
is treated as missing (dropped like a null, never released as a key). A Parquet file's types
are its declared metadata (its footer); the config is checked against them, no value is inspected.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import polars as pl

from dpwitness.cells import polars_boolean, polars_integer, polars_number
from dpwitness.errors import ParameterError
from dpwitness.reader import scan_polars
from dpwitness.serve.config import TableConfig


@dataclass(frozen=True)
class LoadedTable:
    config: TableConfig
    frame: pl.DataFrame
    keys: dict[str, tuple[Any, ...]]  # column → declared categories in the column's type

    @property
    def name(self) -> str:
        return self.config.name


def load_table(config: TableConfig) -> LoadedTable:
    """Read the table into memory and check the declared columns against its types."""
    where = f"tables.{config.name}"
    path = config.path
    if not path.is_file():
        raise ParameterError(f"{where}.path", "an existing CSV or Parquet file", str(path))
    wanted = list(config.columns) + (
        [config.privacy_unit] if config.privacy_unit and config.privacy_unit not in config.columns else []
    )
    if path.suffix.lower() in {".parquet", ".pq"}:
        lazy = pl.scan_parquet(path)
    else:
        lazy = scan_polars(path)  # reads the header now; every column text
    names = lazy.collect_schema().names()
    missing = [c for c in wanted if c not in names]
    if missing:
        raise ParameterError(f"{where}.columns", f"columns of {path.name}", missing)
    lazy = lazy.select(wanted)
    if path.suffix.lower() not in {".parquet", ".pq"}:
        lazy = lazy.with_columns([_declared(name, _kind(config, name)) for name in wanted])
    frame = lazy.collect()
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
    return LoadedTable(config, frame.with_columns(enums).rechunk(), keys)


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


def _declared(name: str, kind: str) -> pl.Expr:
    """A text column cast to its declared type, non-strictly (a cell that does not fit is null)."""
    text = pl.col(name)
    readers = {"boolean": polars_boolean, "integer": polars_integer, "float": polars_number}  # the cell grammar
    return (readers[kind](text) if kind in readers else text).alias(name)
