"""The service configuration, read from TOML: tables, public column metadata, analysts, limits.

Everything in this file is public metadata chosen by the data owner (column types, bounds,
category lists, the neighbour relation) or a secret stored hashed (analyst tokens).
Nothing here is derived from the data: the service takes every column's type from here (a
column's ``type``, or the table's ``schema`` file, see docs/schema.md), never from the values.
"""

from __future__ import annotations

import os
import tomllib
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from dpwitness.common.errors import ParameterError
from dpwitness.common.validation import check_count, check_positive_finite
from dpwitness.io.schema import DECLARABLE, ColumnKind, Schema, schema_beside
from dpwitness.privacy.budget import Budget, check_total
from dpwitness.privacy.neighbours import Neighbours, check_bounds
from dpwitness.serve.auth import StoredToken, parse_token_hash


@dataclass(frozen=True)
class ColumnConfig:
    """A column the owner exposes: numeric with public clamping ``bounds``, categorical with
    public ``categories`` (the only keys ever released for it), or both. ``kind`` is its declared
    type (integer, float, string, boolean), or None: then a CSV column with bounds is read as
    numbers and one without as text (:mod:`dpwitness.serve.tables`)."""

    name: str
    bounds: tuple[float, float] | None = None
    categories: tuple[str, ...] | None = None
    description: str = ""
    kind: ColumnKind | None = None

    @property
    def numeric(self) -> bool:
        return self.bounds is not None

    @property
    def categorical(self) -> bool:
        return self.categories is not None

    def public(self) -> dict[str, Any]:
        kinds = [k for k, flag in (("numeric", self.numeric), ("categorical", self.categorical)) if flag]
        return {
            "name": self.name,
            "kinds": kinds,
            "type": None if self.kind is None else self.kind.value,
            "bounds": list(self.bounds) if self.bounds else None,
            "categories": list(self.categories) if self.categories else None,
            "description": self.description,
        }


@dataclass(frozen=True)
class TableConfig:
    name: str
    path: Path
    columns: dict[str, ColumnConfig]
    neighbours: Neighbours = Neighbours.ADD_REMOVE
    privacy_unit: str | None = None
    max_contributions: int = 1
    description: str = ""
    #: A public (lookup) table: its values are public, so SQL may JOIN it with a private table
    #: (``public = true``; see docs/sql.md).
    lookup: bool = False

    def public(self) -> dict[str, Any]:
        """The public schema: names, kinds, declared bounds and categories, never values."""
        return {
            "name": self.name,
            "description": self.description,
            "neighbours": self.neighbours.value,
            "privacy_unit": self.privacy_unit,
            "max_contributions": self.max_contributions,
            "public": self.lookup,
            "columns": [c.public() for c in self.columns.values()],
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
    tables = {
        name: _table_config(name, _table(body, f"tables.{name}"), base)
        for name, body in _table(raw.get("tables"), "tables").items()
    }
    absent = {name for name, body in _table(raw.get("tables"), "tables").items() if _optional(name, body)}
    absent = {name for name in absent if not tables[name].path.is_file()}
    tables = {name: table for name, table in tables.items() if name not in absent}
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


def _table_config(name: str, body: dict[str, Any], base: Path) -> TableConfig:
    if "path" not in body:
        raise ParameterError(f"tables.{name}.path", "the path of a CSV or Parquet file", None)
    variable = body.get("path_env")
    if variable is not None and not (isinstance(variable, str) and variable):
        raise ParameterError(f"tables.{name}.path_env", "the name of an environment variable holding the path", variable)
    path = Path(os.environ[variable] if variable and os.environ.get(variable) else str(body["path"]))
    if not path.is_absolute():
        path = base / path if (base / path).exists() or not path.exists() else path.resolve()
    beside = schema_beside(path) if "schema" not in body else None  # FILE.schema.toml beside the data, as in Session
    declared = _schema(name, body.get("schema", None if beside is None else str(beside)), base)
    columns = _schema_columns(declared) if declared is not None else {}
    for c, spec in _table(body.get("columns"), f"tables.{name}.columns").items():  # a table's own entries win
        columns[c] = _column(name, c, _table(spec, f"tables.{name}.columns.{c}"), declared, columns.get(c))
    if not columns:
        expected = "at least one declared column (or a schema with bounds or categories)"
        raise ParameterError(f"tables.{name}.columns", expected, None)
    unit = body.get("privacy_unit", None if declared is None else declared.privacy_unit)
    if unit is not None and not (isinstance(unit, str) and unit):
        raise ParameterError(f"tables.{name}.privacy_unit", "a column name", unit)
    return TableConfig(
        name=name,
        path=path,
        columns=columns,
        neighbours=Neighbours.parse(body.get("neighbours", "add-remove")),
        privacy_unit=unit,
        max_contributions=_whole(body, "max_contributions", 1),
        description=str(body.get("description", "")),
        lookup=_flag(name, body.get("public", False)),
    )


def _optional(table: str, body: dict[str, Any]) -> bool:
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


def _schema_columns(schema: Schema) -> dict[str, ColumnConfig]:
    """The columns a schema exposes: those with declared bounds or categories, with their types."""
    return {
        name: ColumnConfig(
            name,
            schema.bounds.get(name),
            None if name not in schema.categories else tuple(str(v) for v in schema.categories[name]),
            kind=kind,
        )
        for name, kind in schema.columns.items()
        if name in schema.bounds or name in schema.categories
    }


def _column(
    table: str, name: str, spec: dict[str, Any], schema: Schema | None = None, from_schema: ColumnConfig | None = None
) -> ColumnConfig:
    """A ``[tables.T.columns.NAME]`` entry; what it leaves out comes from the table's schema."""
    where = f"tables.{table}.columns.{name}"
    if schema is not None and name not in schema.columns:
        raise ParameterError(where, f"a column declared in tables.{table}.schema ({', '.join(schema.columns)})", name)
    kind = None if schema is None else schema.columns.get(name)
    if "type" in spec:
        if str(spec["type"]) not in {k.value for k in DECLARABLE}:
            raise ParameterError(f"{where}.type", "one of integer, float, string, boolean", spec["type"])
        kind = ColumnKind(str(spec["type"]))
    bounds = None if from_schema is None else from_schema.bounds
    if "bounds" in spec:
        value = spec["bounds"]
        if not isinstance(value, list) or len(value) != 2:
            raise ParameterError(f"{where}.bounds", "[L, U] with finite L < U", value)
        bounds = check_bounds(value[0], value[1], f"{where}.bounds")
    categories = None if from_schema is None else from_schema.categories
    if "categories" in spec:
        value = spec["categories"]
        if not isinstance(value, list) or not value or len(set(map(str, value))) != len(value):
            raise ParameterError(f"{where}.categories", "a non-empty list of distinct values", value)
        categories = tuple(str(v) for v in value)
    if bounds is None and categories is None:
        raise ParameterError(where, "bounds = [L, U] and/or categories = [...]", spec)
    if bounds is not None and kind is not None and not kind.numeric:
        raise ParameterError(f"{where}.bounds", f"declared only on an integer or float column (declared {kind.value})", bounds)
    return ColumnConfig(name, bounds, categories, str(spec.get("description", "")), kind)


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


def _whole(body: dict[str, Any], key: str, default: int, *, minimum: int = 1) -> int:
    value = body.get(key, default)
    return check_count(key, value, minimum=minimum)
