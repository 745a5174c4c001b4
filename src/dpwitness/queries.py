"""One description of a query: what to release, from which column, under which bounds, groups,
neighbour relation and privacy unit, and how its ε is split among its noisy parts.

A :class:`Query` is immutable and validated on construction. It yields

* :attr:`Query.parts`: the noisy parts to release, each with its exact L1 sensitivity Δ
  (derived in :mod:`dpwitness.neighbours` for the relation and the privacy unit) and its share
  of ε;
* :attr:`Query.aggregates`: the exact aggregates an engine must compute (see
  :mod:`dpwitness.engines` for the contract that every engine implements).

Nothing here reads data or draws noise: the session spends, the engine aggregates, and
:class:`dpwitness.Laplace` adds the noise, once.
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from enum import StrEnum
from typing import Any

import numpy as np

from dpwitness.errors import ParameterError, check_positive_finite
from dpwitness.neighbours import ContributionBound, Neighbours, check_bounds, unit_sensitivity

#: A group key: a scalar for one ``by`` column, a tuple for several.
Key = Any
#: What an engine returns: aggregate name → number (ungrouped) or {key: number} (grouped).
Aggregates = dict[str, float | dict[Key, float]]


class Statistic(StrEnum):
    COUNT = "count"
    SUM = "sum"
    MEAN = "mean"
    VARIANCE = "variance"
    HISTOGRAM = "histogram"


class Aggregate(StrEnum):
    """The exact aggregates an engine computes over the bounded, clamped rows.

    With v = clamp(column, L, U) and c = (L + U)/2 (:attr:`Query.centre`):
    ``count`` = number of rows, ``sum`` = Σ v, ``centred_sum`` = Σ (v − c),
    ``centred_squares`` = Σ (v − c)².  Centring halves the add/remove Δ of a mean's sum and
    keeps the second moment's float error small.
    """

    COUNT = "count"
    SUM = "sum"
    CENTRED_SUM = "centred_sum"
    CENTRED_SQUARES = "centred_squares"


class ColumnKind(StrEnum):
    INTEGER = "integer"
    FLOAT = "float"
    STRING = "string"
    BOOLEAN = "boolean"
    OTHER = "other"

    @property
    def numeric(self) -> bool:
        return self in (ColumnKind.INTEGER, ColumnKind.FLOAT)


@dataclass(frozen=True)
class Schema:
    """What an engine tells the session before any spend: column kinds and whether there is a row.

    Both are treated as public (see docs/statistics.md): nothing else is read before spending.
    """

    columns: Mapping[str, ColumnKind]
    empty: bool


@dataclass(frozen=True)
class Part:
    """One noisy release inside a query: Laplace on ``aggregate`` with L1 ``sensitivity``.

    ``changed_coordinates`` is the most keys one privacy unit can move (1 for an ungrouped
    part): the grid sampler charges one rounding step per changed coordinate.
    """

    aggregate: Aggregate
    share: float
    sensitivity: float
    changed_coordinates: int


@dataclass(frozen=True, kw_only=True)
class Query:
    """An immutable, validated description of one private statistic.

    ``keys`` are the declared (public) group keys, or the histogram's categories; None means
    undeclared: the session then releases only groups whose noisy count passes a threshold
    that costs ``delta``. ``split`` gives each noisy part's share of ``epsilon`` (default:
    even); ``max_groups`` (grouped queries) bounds the groups a unit touches, with at most
    ``max_contributions`` rows in each; without it a unit keeps at most ``max_contributions``
    rows in all.
    """

    statistic: Statistic
    epsilon: float
    column: str | None = None
    bounds: tuple[float, float] | None = None
    by: tuple[str, ...] = ()
    keys: tuple[Key, ...] | None = None
    neighbours: Neighbours = Neighbours.ADD_REMOVE
    privacy_unit: str | None = None
    max_contributions: int = 1
    max_groups: int | None = None
    split: tuple[float, ...] | None = None
    delta: float = 1e-6
    _parts: tuple[Part, ...] = field(init=False, repr=False, compare=False)

    def __post_init__(self) -> None:
        statistic = _parse(Statistic, "statistic", self.statistic)
        object.__setattr__(self, "statistic", statistic)
        object.__setattr__(self, "neighbours", Neighbours.parse(self.neighbours))
        object.__setattr__(self, "epsilon", check_positive_finite("epsilon", self.epsilon))
        needs_column = statistic is not Statistic.COUNT
        if needs_column and not (isinstance(self.column, str) and self.column):
            raise ParameterError("column", f"a column name for {statistic.value}", self.column)
        if self.column is not None and not (isinstance(self.column, str) and self.column):
            raise ParameterError("column", "a column name or None", self.column)
        if statistic in (Statistic.SUM, Statistic.MEAN, Statistic.VARIANCE):
            if self.bounds is None or isinstance(self.bounds, str) or len(self.bounds) != 2:
                raise ParameterError("bounds", f"(L, U) with finite L < U for {statistic.value}", self.bounds)
            object.__setattr__(self, "bounds", check_bounds(*self.bounds))
        elif self.bounds is not None:
            raise ParameterError("bounds", f"None for {statistic.value}", self.bounds)
        by = _names("by", self.by)
        if statistic is Statistic.HISTOGRAM and by:
            raise ParameterError("by", "empty for a histogram (its column is the key)", self.by)
        if statistic is Statistic.VARIANCE and by:
            raise ParameterError("by", "empty: grouped variance is not supported", self.by)
        object.__setattr__(self, "by", by)
        if self.keys is not None:
            if not self.group_columns:
                raise ParameterError("keys", "None for an ungrouped query", self.keys)
            keys = tuple(tuple(k) if isinstance(k, list) else k for k in self.keys)
            if not keys or len(set(keys)) != len(keys):
                raise ParameterError("keys", "a non-empty sequence of distinct keys", self.keys)
            if len(self.group_columns) > 1 and not all(isinstance(k, tuple) and len(k) == len(self.group_columns) for k in keys):
                raise ParameterError("keys", f"tuples of {len(self.group_columns)} values (one per by column)", self.keys)
            object.__setattr__(self, "keys", keys)
        if self.privacy_unit is not None and not (isinstance(self.privacy_unit, str) and self.privacy_unit):
            raise ParameterError("privacy_unit", "a column name or None", self.privacy_unit)
        _check_whole("max_contributions", self.max_contributions)
        if self.privacy_unit is None and self.max_contributions != 1:
            raise ParameterError(
                "max_contributions", "1 unless privacy_unit names the column that identifies a person", self.max_contributions
            )
        if self.max_groups is not None:
            _check_whole("max_groups", self.max_groups)
            if self.privacy_unit is None:
                raise ParameterError("max_groups", "None unless privacy_unit is set", self.max_groups)
        if not (isinstance(self.delta, float | int) and 0 < self.delta < 1):
            raise ParameterError("delta", "a number strictly between 0 and 1", self.delta)
        object.__setattr__(self, "_parts", self._derive_parts())

    # --- what the query needs -------------------------------------------------------------
    @property
    def group_columns(self) -> tuple[str, ...]:
        """The key columns: ``by``, or the histogram's column."""
        if self.statistic is Statistic.HISTOGRAM:
            assert self.column is not None
            return (self.column,)
        return self.by

    @property
    def grouped(self) -> bool:
        return bool(self.group_columns)

    @property
    def declared(self) -> bool:
        """True when the group keys are public (declared); False when they come from the data."""
        return self.keys is not None

    @property
    def centre(self) -> float:
        """c = (L + U)/2, the centre for ``centred_sum`` and ``centred_squares`` (0 without bounds)."""
        return 0.0 if self.bounds is None else (self.bounds[0] + self.bounds[1]) / 2

    @property
    def half_range(self) -> float:
        return 0.0 if self.bounds is None else (self.bounds[1] - self.bounds[0]) / 2

    @property
    def contribution(self) -> ContributionBound:
        return ContributionBound.of(
            self.max_contributions, self.max_groups if self.grouped else None, unit=self.privacy_unit is not None
        )

    @property
    def parts(self) -> tuple[Part, ...]:
        """The noisy parts, each with its share of ε and its exact Δ."""
        return self._parts

    @property
    def aggregates(self) -> tuple[Aggregate, ...]:
        """The exact aggregates the engine must return: ``count`` always, then one per noisy part."""
        return tuple(dict.fromkeys([Aggregate.COUNT, *(p.aggregate for p in self._parts)]))

    def epsilon_of(self, part: Part) -> float:
        return self.epsilon * part.share

    # --- description ----------------------------------------------------------------------
    @property
    def label(self) -> str:
        """A readable one-line description, e.g. ``mean(age) in [0, 100] by sex``."""
        inner = self.column or ""
        text = f"{self.statistic.value}({inner})"
        if self.bounds is not None:
            text += f" in [{self.bounds[0]:g}, {self.bounds[1]:g}]"
        if self.by:
            text += " by " + ", ".join(self.by)
        if self.keys is not None:
            text += f" over {len(self.keys)} declared keys"
        if self.privacy_unit is not None:
            text += f", ≤ {self.max_contributions} row(s) per {self.privacy_unit}"
            if self.max_groups is not None and self.grouped:
                text += f" in each of ≤ {self.max_groups} group(s)"
        return text

    def to_dict(self) -> dict[str, Any]:
        return {
            "statistic": self.statistic.value,
            "column": self.column,
            "bounds": list(self.bounds) if self.bounds else None,
            "by": list(self.by),
            "keys": None if self.keys is None else [list(k) if isinstance(k, tuple) else k for k in self.keys],
            "neighbours": self.neighbours.value,
            "privacy_unit": self.privacy_unit,
            "max_contributions": self.max_contributions,
            "max_groups": self.max_groups,
            "epsilon": self.epsilon,
            "parts": [
                {"aggregate": p.aggregate.value, "epsilon": self.epsilon_of(p), "sensitivity": p.sensitivity} for p in self._parts
            ],
        }

    # --- checks against the data's schema (public metadata only) ----------------------------
    def check_schema(self, schema: Schema) -> None:
        """Raise :class:`ParameterError` for a missing or non-numeric column or an empty table."""
        for parameter, name in self._columns_used():
            if name not in schema.columns:
                raise ParameterError(parameter, f"a column of the table ({', '.join(schema.columns)})", name)
        if self.statistic in (Statistic.SUM, Statistic.MEAN, Statistic.VARIANCE):
            assert self.column is not None
            kind = schema.columns[self.column]
            if not kind.numeric:
                raise ParameterError("column", f"a numeric column for {self.statistic.value}", f"{self.column!r} ({kind.value})")
        if self.keys is not None:
            for position, name in enumerate(self.group_columns):
                kind = schema.columns[name]
                values = [k[position] if len(self.group_columns) > 1 else k for k in self.keys]
                if not all(_fits(kind, v) for v in values):
                    raise ParameterError("keys", f"values of {name!r}'s kind ({kind.value})", values)
        if schema.empty:
            raise ParameterError("source", "a table with at least one row", "an empty table")

    def _columns_used(self) -> Iterable[tuple[str, str]]:
        if self.column is not None:
            yield "column", self.column
        for name in self.by:
            yield "by", name
        if self.privacy_unit is not None:
            yield "privacy_unit", self.privacy_unit

    # --- derivation -----------------------------------------------------------------------
    def _derive_parts(self) -> tuple[Part, ...]:
        aggregates = self._noisy_aggregates()
        shares = self._shares(len(aggregates))
        bound = self.contribution
        coordinates = 1
        if self.grouped:
            # A unit moves the keys it holds; replacing it also moves the ≤ g keys of its new rows.
            moved = bound.max_groups * (2 if self.neighbours is Neighbours.REPLACE_ONE else 1)
            coordinates = moved if self.keys is None else min(moved, len(self.keys))
        return tuple(
            Part(name, share, self._sensitivity(name, bound), coordinates) for name, share in zip(aggregates, shares, strict=True)
        )

    def _noisy_aggregates(self) -> tuple[Aggregate, ...]:
        s = self.statistic
        if s in (Statistic.COUNT, Statistic.HISTOGRAM):
            return (Aggregate.COUNT,)
        # Undeclared keys need a noisy count to pick the groups; put it first. A mean or variance
        # always has a noisy count: its n counts non-null values, which a neighbour can change
        # under either relation (replace-one may turn a null into a value).
        count = (Aggregate.COUNT,)
        if s is Statistic.SUM:
            return (*(count if self.grouped and not self.declared else ()), Aggregate.SUM)
        if s is Statistic.MEAN:
            return (*count, Aggregate.CENTRED_SUM)
        return (*count, Aggregate.CENTRED_SUM, Aggregate.CENTRED_SQUARES)

    def _shares(self, parts: int) -> tuple[float, ...]:
        if self.split is None:
            return (1.0 / parts,) * parts
        split = tuple(self.split)
        if len(split) != parts or not all(isinstance(x, float | int) and math.isfinite(x) and x > 0 for x in split):
            names = ", ".join(a.value for a in self._noisy_aggregates())
            raise ParameterError("split", f"{parts} positive share(s) of ε, one per noisy part ({names})", self.split)
        total = math.fsum(split)
        return tuple(x / total for x in split)

    def _sensitivity(self, aggregate: Aggregate, bound: ContributionBound) -> float:
        """Δ of one part: the per-row range of the aggregate's term, times the rows one unit keeps."""
        h = self.half_range
        # A row counts 1, or 0 once dropped (null column or unit): under replace-one a record can
        # change from null to a value, so only a count of all rows (no column, no unit) has t = 1.
        counted = (1.0, 1.0) if self.column is None and self.privacy_unit is None else (0.0, 1.0)
        low, high = {
            Aggregate.COUNT: counted,
            Aggregate.SUM: self.bounds or (0.0, 0.0),
            Aggregate.CENTRED_SUM: (-h, h),
            Aggregate.CENTRED_SQUARES: (0.0, h * h),
        }[aggregate]
        return unit_sensitivity(self.neighbours, low, high, bound, grouped=self.grouped)


def _parse(kind: type[Statistic], parameter: str, value: Any) -> Statistic:
    try:
        return kind(value)
    except ValueError:
        raise ParameterError(parameter, f"one of {', '.join(s.value for s in kind)}", value) from None


def _names(parameter: str, value: str | Sequence[str] | None) -> tuple[str, ...]:
    if value is None:
        return ()
    names = (value,) if isinstance(value, str) else tuple(value)
    if not all(isinstance(n, str) and n for n in names) or len(set(names)) != len(names):
        raise ParameterError(parameter, "a column name or a sequence of distinct column names", value)
    return names


def _fits(kind: ColumnKind, value: Any) -> bool:
    """Whether a declared key can equal a value of a column of this kind."""
    if kind is ColumnKind.STRING:
        return isinstance(value, str)
    if kind is ColumnKind.BOOLEAN:
        return isinstance(value, bool)
    if kind is ColumnKind.INTEGER:
        return isinstance(value, int | np.integer) and not isinstance(value, bool)
    if kind is ColumnKind.FLOAT:
        return isinstance(value, int | float | np.number) and not isinstance(value, bool)
    return True


def _check_whole(parameter: str, value: Any) -> None:
    if isinstance(value, bool) or not isinstance(value, int) or value < 1:
        raise ParameterError(parameter, "a whole number ≥ 1", value)
