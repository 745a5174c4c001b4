"""The service configuration, read from TOML: tables, public column metadata, analysts, limits.

Everything in this file is public metadata chosen by the data owner (column types, bounds,
category lists, the neighbour relation) or a secret stored hashed (analyst tokens).
Nothing here is derived from the data: each table's columns are declared as a schema file
declares them (docs/schema.md) and become its :class:`~dpwitness.io.schema.Schema`; a column's
type comes from its ``type``, the table's ``schema`` file or a Parquet file's footer (metadata),
never from the values.
"""

from __future__ import annotations

import os
import tomllib
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from dpwitness.common.errors import ParameterError
from dpwitness.common.validation import check_count, check_positive_finite
from dpwitness.engines.polars import PolarsEngine
from dpwitness.io.schema import DECLARABLE, ColumnKind, Schema, schema_beside
from dpwitness.privacy.budget import Budget, check_total
from dpwitness.privacy.neighbours import Neighbours
from dpwitness.serve.auth import StoredToken, parse_token_hash


@dataclass(frozen=True)
class TableConfig:
    """A table the owner exposes: its file, its relation, and its declared :class:`Schema` — the
    exposed columns and the privacy unit, each with its kind, and the public clamping ``bounds``
    and ``categories`` (in the column's type: the only keys ever released for it). Built once,
    when the config is read (:func:`parse_table`), from the same fields as a schema file."""

    name: str
    path: Path
    schema: Schema
    neighbours: Neighbours = Neighbours.ADD_REMOVE
    max_contributions: int = 1
    description: str = ""
    #: A public (lookup) table: its values are public, so SQL may JOIN it with a private table
    #: (``public = true``; see docs/sql.md).
    lookup: bool = False
    #: Column → the owner's description of it (shown in the public schema).
    descriptions: Mapping[str, str] = field(default_factory=dict)
    #: A public bound on the table's rows (units with a privacy unit; at least its real number,
    #: checked when the table is loaded): needed to group by keys taken from the data, whose δ
    #: is at most 1/(10·max_rows) (docs/statistics.md).
    max_rows: int | None = None
    #: Columns whose keys come from the data (``keys_from_data = ["col", …]``; needs ``max_rows``):
    #: grouped by, a key is released only when its noisy count passes the threshold.
    keys_from_data: tuple[str, ...] = ()

    @property
    def columns(self) -> tuple[str, ...]:
        """The columns analysts may name: those with declared bounds or categories, and those whose
        keys come from the data."""
        schema = self.schema
        return tuple(c for c in schema.columns if c in schema.bounds or c in schema.categories or c in self.keys_from_data)

    @property
    def privacy_unit(self) -> str | None:
        return self.schema.privacy_unit

    def public(self) -> dict[str, Any]:
        """The public schema: names, kinds, declared bounds and categories, never values."""
        return {
            "name": self.name,
            "description": self.description,
            "neighbours": self.neighbours.value,
            "privacy_unit": self.privacy_unit,
            "max_contributions": self.max_contributions,
            **({} if self.max_rows is None else {"max_rows": self.max_rows}),  # a declared bound, never the count
            "public": self.lookup,
            "columns": [self._public_column(c) for c in self.columns],
        }

    def _public_column(self, name: str) -> dict[str, Any]:
        bounds, categories = self.schema.bounds.get(name), self.schema.categories.get(name)
        kinds = [k for k, given in (("numeric", bounds), ("categorical", categories)) if given is not None]
        if name in self.keys_from_data:
            kinds.append("keys from the data")
        return {
            "name": name,
            "kinds": kinds,
            "type": self.schema.columns[name].value,
            "bounds": None if bounds is None else list(bounds),
            "categories": None if categories is None else list(categories),
            "description": self.descriptions.get(name, ""),
        }


@dataclass(frozen=True)
class AnalystConfig:
    """An analyst: token, tables, limits and total budget, (``epsilon``, ``delta``) or ``rho``
    (with an optional ``delta`` for key selection); stored in the ledger when first seen."""

    name: str
    epsilon: float | None
    token: StoredToken
    tables: tuple[str, ...] | None = None  # None: every table
    rate_per_second: float | None = None  # None: the service's limit
    rate_burst: int | None = None
    delta: float = 0.0
    rho: float | None = None

    @property
    def total(self) -> Budget:
        return check_total(epsilon=self.epsilon, delta=self.delta, rho=self.rho)

    def may_read(self, table: str) -> bool:
        return self.tables is None or table in self.tables


@dataclass(frozen=True)
class Limits:
    """Per-request and per-analyst limits (all enforced before any spend)."""

    max_request_bytes: int = 8192
    rate_per_second: float = 20.0
    rate_burst: int = 40
    max_groups: int = 256
    max_by_columns: int = 2
    aggregate_cache: int = 1024  # exact aggregates remembered per (analyst, table); 0: none


@dataclass(frozen=True)
class ServiceConfig:
    tables: dict[str, TableConfig]
    analysts: dict[str, AnalystConfig]
    ledger: Path
    limits: Limits = field(default_factory=Limits)
    alpha: float = 0.05


def load_config(path: str | Path) -> ServiceConfig:
    """Read and validate a service TOML file; relative paths are taken from the file's folder
    (falling back to the working directory for data files)."""
    source = Path(path)
    try:
        raw = tomllib.loads(source.read_text(encoding="utf-8"))
    except FileNotFoundError:
        raise ParameterError("config", "an existing TOML file", str(source)) from None
    except (OSError, UnicodeDecodeError) as error:  # a folder, no permission, not UTF-8 text
        raise ParameterError("config", "a readable UTF-8 TOML file", f"{source} ({type(error).__name__})") from None
    except tomllib.TOMLDecodeError as error:
        raise ParameterError("config", "valid TOML", f"{source}: {error}") from None
    return parse_config(raw, base=source.resolve().parent)


def parse_config(raw: dict[str, Any], *, base: Path) -> ServiceConfig:
    service = _table(raw.get("service", {}), "service")
    bodies = {name: _table(body, f"tables.{name}") for name, body in _table(raw.get("tables"), "tables").items()}
    absent = {name for name, body in bodies.items() if _optional(name, body) and not _path(name, body, base).is_file()}
    tables = {name: parse_table(name, body, base=base) for name, body in bodies.items() if name not in absent}
    if not tables:
        raise ParameterError("tables", "at least one [tables.NAME] section", raw.get("tables"))
    analysts = {
        name: _analyst(name, _without(_table(body, f"analysts.{name}"), absent), tables)
        for name, body in _table(raw.get("analysts"), "analysts").items()
    }
    if not analysts:
        raise ParameterError("analysts", "at least one [analysts.NAME] section", raw.get("analysts"))
    limits = Limits(
        max_request_bytes=_whole(service, "max_request_bytes", Limits.max_request_bytes),
        rate_per_second=check_positive_finite("service.rate_per_second", service.get("rate_per_second", Limits.rate_per_second)),
        rate_burst=_whole(service, "rate_burst", Limits.rate_burst),
        max_groups=_whole(service, "max_groups", Limits.max_groups),
        max_by_columns=_whole(service, "max_by_columns", Limits.max_by_columns),
        aggregate_cache=_whole(service, "aggregate_cache", Limits.aggregate_cache, minimum=0),
    )
    alpha = service.get("alpha", 0.05)
    if not isinstance(alpha, float) or not 0 < alpha < 1:
        raise ParameterError("service.alpha", "a number strictly between 0 and 1", alpha)
    ledger = Path(str(service.get("ledger", "dpwitness-serve.db")))
    return ServiceConfig(tables, analysts, ledger if ledger.is_absolute() else base / ledger, limits, alpha)


def parse_table(name: str, body: Mapping[str, Any], *, base: Path) -> TableConfig:
    """One ``[tables.NAME]`` section (parsed TOML; relative paths from ``base``) → its config.

    The table's columns are read as a schema file's ``[columns.NAME]`` entries (``type``,
    ``bounds``, ``categories``, ``description``): those of its ``schema`` file (without the key,
    the data file's ``STEM.schema.toml`` beside it, if any) that declare bounds or categories,
    refined key by key by its own ``[tables.NAME.columns]``; its ``encoding`` (the table's own
    ``encoding`` key wins), read by the one reader as on every face. A column
    without a ``type`` takes a Parquet file's declared type (its footer: metadata, no value),
    else (a CSV) float when it has bounds and string otherwise. The :class:`Schema` is then
    built once, with the schema file's checks and messages (named ``tables.NAME.…``).
    """
    where = f"tables.{name}"
    path = _path(name, body, base)
    beside = schema_beside(path) if "schema" not in body else None  # FILE.schema.toml beside the data, as in Session
    declared = _schema(name, body.get("schema", None if beside is None else str(beside)), base)
    entries: dict[str, dict[str, Any]] = {}
    if declared is not None:  # the columns a schema exposes: those with declared bounds or categories
        for column in (c for c in declared.columns if c in declared.bounds or c in declared.categories):
            entries[column] = _entry(declared, column)
    max_rows, from_data = _keys_from_data(name, body)
    for column in from_data:  # grouped by with keys from the data: a column of its own, typed as declared
        entries.setdefault(column, _entry(declared, column))
    for column, spec in _table(body.get("columns"), f"{where}.columns").items():  # a table's own keys win
        if declared is not None and column not in declared.columns:
            listed = ", ".join(declared.columns)
            raise ParameterError(f"{where}.columns.{column}", f"a column declared in {where}.schema ({listed})", column)
        entry = {**entries.get(column, _entry(declared, column)), **_table(spec, f"{where}.columns.{column}")}
        if "bounds" not in entry and "categories" not in entry and column not in from_data:
            expected = f"bounds = [L, U] and/or categories = [...] (or the column in {where}.keys_from_data)"
            raise ParameterError(f"{where}.columns.{column}", expected, spec)
        entries[column] = entry
    if not entries:
        expected = "at least one declared column (or a schema with bounds or categories)"
        raise ParameterError(f"{where}.columns", expected, None)
    unit = body.get("privacy_unit", None if declared is None else declared.privacy_unit)
    if unit is not None and not (isinstance(unit, str) and unit):
        raise ParameterError(f"{where}.privacy_unit", "a column name", unit)
    if unit is not None and unit not in entries:
        entries[unit] = _entry(declared, unit)
    untyped = [c for c, entry in entries.items() if "type" not in entry]
    file_kinds = _file_kinds(name, path) if untyped and path.suffix.lower() in PARQUET_SUFFIXES else {}
    for column in untyped:
        entries[column]["type"] = _kind(f"{where}.columns.{column}", entries[column], file_kinds.get(column))
    encoding = body.get("encoding", None if declared is None else declared.encoding)
    schema = Schema.from_mapping({"columns": entries, "privacy_unit": unit, "encoding": encoding}, prefix=where)
    return TableConfig(
        name=name,
        path=path,
        schema=schema,
        neighbours=Neighbours.parse(body.get("neighbours", "add-remove")),
        max_contributions=_whole(body, "max_contributions", 1),
        description=str(body.get("description", "")),
        lookup=_flag(name, body.get("public", False)),
        descriptions={c: str(entry.get("description", "")) for c, entry in entries.items()},
        max_rows=max_rows,
        keys_from_data=from_data,
    )


def _keys_from_data(table: str, body: Mapping[str, Any]) -> tuple[int | None, tuple[str, ...]]:
    """A table's ``max_rows`` (a whole number ≥ 1, or absent) and ``keys_from_data`` (column names;
    only with ``max_rows``, which sizes their selection's δ)."""
    where = f"tables.{table}"
    max_rows = None if body.get("max_rows") is None else check_count(f"{where}.max_rows", body["max_rows"])
    columns = body.get("keys_from_data", [])
    if not (isinstance(columns, list) and all(isinstance(c, str) and c for c in columns)):
        raise ParameterError(f"{where}.keys_from_data", "a list of column names", columns)
    if columns and max_rows is None:
        expected = f"a {where}.max_rows (a public bound on the table's rows) beside it"
        raise ParameterError(f"{where}.keys_from_data", expected, columns)
    return max_rows, tuple(dict.fromkeys(columns))


#: The file suffixes read as Parquet (the others as CSV).
PARQUET_SUFFIXES = frozenset({".parquet", ".pq"})


def _path(name: str, body: Mapping[str, Any], base: Path) -> Path:
    """The table's file: ``path_env``'s variable when set, else ``path``; a relative path is taken
    from the config's folder, or from the working directory when it exists there only."""
    if "path" not in body:
        raise ParameterError(f"tables.{name}.path", "the path of a CSV or Parquet file", None)
    variable = body.get("path_env")
    if variable is not None and not (isinstance(variable, str) and variable):
        raise ParameterError(f"tables.{name}.path_env", "the name of an environment variable holding the path", variable)
    path = Path(os.environ[variable] if variable and os.environ.get(variable) else str(body["path"]))
    if not path.is_absolute():
        path = base / path if (base / path).exists() or not path.exists() else path.resolve()
    return path


def _entry(schema: Schema | None, column: str) -> dict[str, Any]:
    """``column``'s entry in a schema file's form (type, bounds, categories), from ``schema``; {} without one."""
    if schema is None or column not in schema.columns:
        return {}
    entry: dict[str, Any] = {"type": schema.columns[column].value}
    if column in schema.bounds:
        entry["bounds"] = list(schema.bounds[column])
    if column in schema.categories:
        entry["categories"] = list(schema.categories[column])
    return entry


def _file_kinds(table: str, path: Path) -> dict[str, ColumnKind]:
    """A Parquet file's column kinds, from its footer (metadata: no value is read)."""
    engine = PolarsEngine()
    if not path.is_file():
        raise ParameterError(f"tables.{table}.path", "an existing CSV or Parquet file", str(path))
    try:
        return dict(engine.schema(engine.open(path)).columns)
    except ParameterError as error:
        raise ParameterError(f"tables.{table}.path", error.expected, str(path)) from None


def _kind(where: str, entry: Mapping[str, Any], from_file: ColumnKind | None) -> str:
    """The type of a column the config gives none: the file's declared one (a Parquet footer), else
    (a CSV, whose cells are text) float for a column with bounds and string otherwise."""
    if from_file is None:
        return ColumnKind.FLOAT.value if "bounds" in entry else ColumnKind.STRING.value
    if from_file not in DECLARABLE:
        expected = "one of integer, float, string, boolean (the file's type is none of them)"
        raise ParameterError(f"{where}.type", expected, from_file.value)
    if "bounds" in entry and not from_file.numeric:
        expected = f"declared only on a numeric column (the file's type is {from_file.value})"
        raise ParameterError(f"{where}.bounds", expected, entry["bounds"])
    return from_file.value


def _optional(table: str, body: Mapping[str, Any]) -> bool:
    """``optional = true``: a table whose file is absent is left out (and out of analysts' lists)."""
    value = body.get("optional", False)
    if not isinstance(value, bool):
        raise ParameterError(f"tables.{table}.optional", "true or false (leave the table out when its file is absent)", value)
    return value


def _without(body: dict[str, Any], absent: set[str]) -> dict[str, Any]:
    """An analyst's entry with the absent optional tables taken out of its ``tables`` list."""
    allowed = body.get("tables")
    if not absent or not isinstance(allowed, list):
        return body
    return {**body, "tables": [t for t in allowed if t not in absent]}


def _flag(table: str, value: Any) -> bool:
    if not isinstance(value, bool):
        raise ParameterError(f"tables.{table}.public", "true or false (a public lookup table that SQL may JOIN)", value)
    return value


def _schema(table: str, value: Any, base: Path) -> Schema | None:
    """A table's ``schema = "FILE.schema.toml"`` (relative to the config's folder; without the key,
    the data file's ``STEM.schema.toml`` beside it, when there is one), or None."""
    if value is None:
        return None
    if not (isinstance(value, str) and value):
        raise ParameterError(f"tables.{table}.schema", "the path of a schema TOML file (dpwitness schema FILE)", value)
    path = Path(value) if Path(value).is_absolute() else base / value
    try:
        return Schema.load(path)
    except ParameterError as error:
        raise ParameterError(f"tables.{table}.schema", error.expected, f"{path}: {error}") from None


def _analyst(name: str, body: dict[str, Any], tables: dict[str, TableConfig]) -> AnalystConfig:
    where = f"analysts.{name}"
    epsilon, delta, rho = body.get("epsilon"), body.get("delta", 0.0), body.get("rho")
    if epsilon is not None and rho is not None:
        raise ParameterError(f"{where}.rho", "not given together with epsilon (a budget is (ε, δ) or ρ)", rho)
    if epsilon is None and rho is None:
        raise ParameterError(f"{where}.epsilon", "the analyst's total ε > 0 (or rho = ρ > 0 for a zCDP budget)", None)
    epsilon = None if epsilon is None else check_positive_finite(f"{where}.epsilon", epsilon)
    rho = None if rho is None else check_positive_finite(f"{where}.rho", rho)
    if isinstance(delta, bool) or not isinstance(delta, int | float) or not 0 <= delta < 1:
        raise ParameterError(f"{where}.delta", "the analyst's total δ, a number in [0, 1)", delta)
    try:
        salt, digest = parse_token_hash(str(body.get("token_hash", "")))
    except ValueError as error:
        raise ParameterError(f"{where}.token_hash", str(error), "<hidden>") from None
    allowed = body.get("tables")
    if allowed is not None:
        if not isinstance(allowed, list) or not all(isinstance(t, str) and t in tables for t in allowed):
            raise ParameterError(f"{where}.tables", f"a list of configured tables ({', '.join(tables)})", allowed)
        allowed = tuple(allowed)
    rate = body.get("rate_per_second")
    burst = body.get("rate_burst")
    return AnalystConfig(
        name,
        epsilon,
        StoredToken(name, salt, digest),
        allowed,
        None if rate is None else check_positive_finite(f"{where}.rate_per_second", rate),
        None if burst is None else _whole(body, "rate_burst", 1),
        float(delta),
        rho,
    )


def _table(value: Any, where: str) -> dict[str, Any]:
    if value is None:
        return {}
    if not isinstance(value, dict):
        raise ParameterError(where, "a TOML table", value)
    return value


def _whole(body: Mapping[str, Any], key: str, default: int, *, minimum: int = 1) -> int:
    value = body.get(key, default)
    return check_count(key, value, minimum=minimum)
