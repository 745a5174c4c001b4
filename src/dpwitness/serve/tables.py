"""Tables held by the service: loaded once at start, restricted to the declared columns.

The service is a face like the others: each table's :class:`~dpwitness.io.schema.Schema` is
built once from its config (:func:`dpwitness.serve.config.parse_table`: kinds, bounds,
categories in the column's type, privacy unit), and the file is opened by the engine every face
uses (:meth:`dpwitness.engines.polars.PolarsEngine.open`: the one reader, one physical line, one
record) with that schema's types, applied as the same non-strict casts (a cell that does not
fit is null). No type is ever inferred from the values, and start-up reads only the header (or
a Parquet footer) before it loads: whether the service starts, and every type and message it
shows, depends on the config and the header, never on a record. The sessions that answer a
table's queries take their defaults from its schema, as every face's sessions do.

A text column with declared categories is held as a Polars ``Enum`` of exactly those
categories, so a value outside them is missing (dropped like a null, never released as a key).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import polars as pl

from dpwitness.common.errors import ParameterError
from dpwitness.engines.polars import PolarsEngine
from dpwitness.io.schema import Schema
from dpwitness.serve.config import TableConfig


@dataclass(frozen=True)
class LoadedTable:
    config: TableConfig
    frame: pl.DataFrame

    @property
    def name(self) -> str:
        return self.config.name

    @property
    def schema(self) -> Schema:
        """The config's declared schema: the columns' kinds, bounds, categories (in the column's type), privacy unit."""
        return self.config.schema

    @property
    def keys(self) -> dict[str, tuple[Any, ...]]:
        """Column → its declared categories, in the column's type."""
        return dict(self.schema.categories)


def load_table(config: TableConfig) -> LoadedTable:
    """Read the table into memory with its declared schema's types (its header checked first)."""
    where = f"tables.{config.name}"
    path, schema = config.path, config.schema
    if not path.is_file():
        raise ParameterError(f"{where}.path", "an existing CSV or Parquet file", str(path))
    engine = PolarsEngine()
    opened = engine.open(path, encoding=config.schema.encoding)  # reads the header (or the footer) only
    names = engine.schema(opened).columns
    missing = [c for c in schema.columns if c not in names]
    if missing:
        raise ParameterError(f"{where}.columns", f"columns of {path.name}", missing)
    frame = engine.open(opened, dtypes=schema.dtypes).frame.select(list(schema.columns)).collect()
    rows = frame.height if schema.privacy_unit is None else frame[schema.privacy_unit].n_unique()
    if config.max_rows is not None and rows > config.max_rows:  # the owner's bound, checked before any analyst asks
        raise ParameterError(f"{where}.max_rows", "a public bound at least the table's number of rows (units)", config.max_rows)
    # Values outside a text column's declared categories become null (never released as keys).
    enums = [
        pl.col(name).cast(pl.Enum(list(values)), strict=False)
        for name, values in schema.categories.items()
        if frame.schema[name] == pl.String
    ]
    return LoadedTable(config, frame.with_columns(enums).rechunk())
