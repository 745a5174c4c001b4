"""Tables held by the service: loaded once at start, restricted to the declared columns.

A categorical column's declared categories are converted to the column's own type here (so
that ``education_num`` can be both bounded and grouped on); a text column with declared
categories is held as a Polars ``Enum`` of exactly those categories, so a value outside them
is treated as missing (dropped like a null, never released as a key).  The config is checked
against the data's *types* only; no value is inspected or shown.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import polars as pl

from dpwitness.errors import ParameterError
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
    if path.suffix.lower() in {".parquet", ".pq"}:
        frame = pl.read_parquet(path)
    else:
        frame = pl.read_csv(path, infer_schema_length=10_000)
    wanted = list(config.columns) + (
        [config.privacy_unit] if config.privacy_unit and config.privacy_unit not in config.columns else []
    )
    missing = [c for c in wanted if c not in frame.columns]
    if missing:
        raise ParameterError(f"{where}.columns", f"columns of {path.name}", missing)
    frame = frame.select(wanted)
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
