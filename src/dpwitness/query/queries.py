"""One description of a query: what to release, from which column, under which bounds, groups,
neighbour relation and privacy unit, and how its ε is split among its noisy parts.

A :class:`Query` is immutable and validated on construction. It yields

* :attr:`Query.parts`: the noisy parts to release, each with its exact L1 sensitivity Δ
  (derived in :mod:`dpwitness.privacy.neighbours` for the relation and the privacy unit) and its share
  of ε;
* :attr:`Query.aggregates`: the exact aggregates an engine must compute (see
  :mod:`dpwitness.engines` for the contract that every engine implements).

Nothing here reads data or draws noise: the session spends, the engine aggregates, and
:class:`dpwitness.Laplace` adds the noise, once.
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Iterator, Sequence
from dataclasses import dataclass, field
from enum import StrEnum
from typing import Any

from dpwitness.common.errors import ParameterError
from dpwitness.common.validation import check_count, check_positive_finite

# The schema (column kinds, declared bounds and categories) lives in dpwitness.io.schema; re-exported here.
from dpwitness.io.schema import DECLARABLE as DECLARABLE
from dpwitness.io.schema import ColumnKind as ColumnKind
from dpwitness.io.schema import Schema as Schema
from dpwitness.io.schema import parse_dtypes as parse_dtypes
from dpwitness.io.schema import value_fits as _fits
from dpwitness.mechanisms import joint_quantiles as joint
from dpwitness.mechanisms.quantiles import DEFAULT_BINS, MAX_CELLS, check_bins, check_quantiles
from dpwitness.privacy.neighbours import (
    ContributionBound,
    Neighbours,
    PrivateJoinBound,
    check_bounds,
    counted_range,
    effective_relation,
    unit_l2_sensitivity,
    unit_sensitivity,
)
from dpwitness.query.predicates import Predicate, parse

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
    QUANTILE = "quantile"


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


@dataclass(frozen=True)
class Part:
    """One noisy release inside a query: noise on ``aggregate`` with L1 ``sensitivity`` (Laplace)
    and L2 ``l2_sensitivity`` (Gaussian), both derived in :mod:`dpwitness.privacy.neighbours`.

    ``changed_coordinates`` is the most keys one privacy unit can move (1 for an ungrouped
    part): the grid sampler charges one rounding step per changed coordinate.
    """

    aggregate: Aggregate
    share: float
    sensitivity: float
    changed_coordinates: int
    l2_sensitivity: float = math.nan  # set by Query; NaN only for a Part built by hand


@dataclass(frozen=True, kw_only=True)
class Query:
    """An immutable, validated description of one private statistic.

    ``keys`` are the declared (public) group keys, or the histogram's categories; None means
    undeclared: the session then releases only groups whose noisy count passes a threshold
    that costs ``delta``. ``split`` gives each noisy part's share of ``epsilon`` (default:
    even); ``max_groups`` (grouped queries) bounds the groups a unit touches, with at most
    ``max_contributions`` rows in each; without it a unit keeps at most ``max_contributions``
    rows in all. ``where`` is a row filter (:mod:`dpwitness.query.predicates`); ``order_by`` the
    table's declared order, which ``row_number`` in ``where`` counts positions in.
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
    where: str | None = None
    order_by: tuple[str, ...] = ()
    #: A quantile's q values and its bins of [L, U] (:mod:`dpwitness.mechanisms.quantiles`); None otherwise.
    quantiles: tuple[float, ...] | None = None
    bins: int | None = None
    #: A quantile released by JointExp (:mod:`dpwitness.mechanisms.joint_quantiles`): every level in
    #: one exponential-mechanism draw over the exact bin counts, not from a noisy histogram.
    joint: bool = False
    #: True when the caller gave ``delta`` for this query (not a session's default): a Laplace
    #: release over declared keys then refuses it, since it spends no δ.
    explicit_delta: bool = field(default=False, repr=False, compare=False)
    #: The rows read are the private table joined with a public (lookup) table, where one key
    #: matches at most this many public rows (None: no join). See :attr:`contribution`.
    join_multiplicity: int | None = None
    #: True for a LEFT JOIN: every private row is kept (an unmatched one once, with null public
    #: columns), so one record is between 1 and M rows, never 0.
    join_keeps_rows: bool = False
    #: The rows read are two private tables joined on a key after truncation
    #: (:class:`~dpwitness.privacy.neighbours.PrivateJoinBound`); None: no private join. The units
    #: were bounded per side before the join, so ``privacy_unit`` is None here.
    private_join: PrivateJoinBound | None = None
    _predicate: Predicate | None = field(init=False, repr=False, compare=False)
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
        if statistic in (Statistic.SUM, Statistic.MEAN, Statistic.VARIANCE, Statistic.QUANTILE):
            pair = check_pair("bounds", self.bounds, f"two numbers (L, U) with finite L < U for {statistic.value}")
            object.__setattr__(self, "bounds", check_bounds(*pair))
        elif self.bounds is not None:
            shown = type(self.bounds).__name__ if isinstance(self.bounds, str | bytes) else self.bounds
            raise ParameterError("bounds", f"None for {statistic.value}", shown)
        if not isinstance(self.joint, bool):
            raise ParameterError("joint", "True or False", self.joint)
        if statistic is Statistic.QUANTILE:
            if self.joint:  # levels strictly increasing in (0, 1), checked as given (never sorted)
                object.__setattr__(self, "quantiles", _joint_levels(self.quantiles))
            object.__setattr__(self, "quantiles", check_quantiles(self.quantiles))
            default_bins = joint.DEFAULT_BINS if self.joint else DEFAULT_BINS
            object.__setattr__(self, "bins", check_bins(default_bins if self.bins is None else self.bins))
        elif self.joint:
            raise ParameterError("joint", f"False for {statistic.value} (joint releases a quantile's levels)", self.joint)
        elif self.quantiles is not None or self.bins is not None:
            parameter, value = ("q", self.quantiles) if self.quantiles is not None else ("bins", self.bins)
            raise ParameterError(parameter, f"None for {statistic.value} (only a quantile has q and bins)", value)
        by = _names("by", self.by)
        if statistic is Statistic.HISTOGRAM and by:
            raise ParameterError("by", "empty for a histogram (its column is the key)", self.by)
        if self.joint and by:
            raise ParameterError("by", "empty for joint quantiles (one column, ungrouped)", self.by)
        object.__setattr__(self, "by", by)
        if self.keys is not None:
            keys = check_keys(self.keys)
            declared = self.declared_columns
            if not declared:
                raise ParameterError("keys", "None for an ungrouped query", self.keys)
            if not keys or len(set(keys)) != len(keys):
                raise ParameterError("keys", "a non-empty sequence of distinct keys", self.keys)
            if len(declared) > 1 and not all(isinstance(k, tuple) and len(k) == len(declared) for k in keys):
                raise ParameterError("keys", f"tuples of {len(declared)} values (one per by column)", self.keys)
            object.__setattr__(self, "keys", keys)
        if statistic is Statistic.QUANTILE:
            if by and self.keys is None:
                raise ParameterError("keys", "declared keys for a grouped quantile (every key's bins are released)", None)
            if len(self.cells) > MAX_CELLS:
                raise ParameterError("bins", f"at most {MAX_CELLS} bins over all keys (keys × bins)", len(self.cells))
        if self.privacy_unit is not None and not (isinstance(self.privacy_unit, str) and self.privacy_unit):
            raise ParameterError("privacy_unit", "a column name or None", self.privacy_unit)
        check_count("max_contributions", self.max_contributions)
        if self.join_multiplicity is not None:
            check_count("join_multiplicity", self.join_multiplicity)
        if not isinstance(self.join_keeps_rows, bool) or (self.join_keeps_rows and self.join_multiplicity is None):
            expected = "True only with join_multiplicity (a LEFT JOIN), else False"
            raise ParameterError("join_keeps_rows", expected, self.join_keeps_rows)
        if self.private_join is not None:
            self._check_private_join(statistic, by)
        if self.privacy_unit is None and self.max_contributions != 1:
            raise ParameterError(
                "max_contributions", "1 unless privacy_unit names the column that identifies a person", self.max_contributions
            )
        if self.max_groups is not None:
            check_count("max_groups", self.max_groups)
            if self.privacy_unit is None:
                raise ParameterError("max_groups", "None unless privacy_unit is set", self.max_groups)
        if not (isinstance(self.delta, float | int) and 0 < self.delta < 1):
            raise ParameterError("delta", "a number strictly between 0 and 1", self.delta)
        object.__setattr__(self, "order_by", _names("order_by", self.order_by))
        predicate = None if self.where is None else parse(self.where)
        if predicate is not None and not predicate.record_wise:
            if not self.order_by:
                raise ParameterError("where", "row_number only on a table with a declared order (order_by=)", self.where)
            if self.privacy_unit is not None:
                # A unit may hold any number of rows before bounding: adding it shifts positions by that many.
                raise ParameterError(
                    "where", "no row_number with a privacy unit (a unit's rows shift positions unboundedly)", self.where
                )
        object.__setattr__(self, "_predicate", predicate)
        object.__setattr__(self, "_parts", self._derive_parts())

    def _check_private_join(self, statistic: Statistic, by: tuple[str, ...]) -> None:
        """A private join releases a count or a bounded sum, over declared keys when grouped, with a
        record-wise filter; its units were bounded per side before the join."""
        if not isinstance(self.private_join, PrivateJoinBound):
            raise ParameterError("join", "a dpwitness.privacy.neighbours.PrivateJoinBound or None", self.private_join)
        if statistic not in (Statistic.COUNT, Statistic.SUM):
            raise ParameterError("statistic", "count or sum over a private join", statistic.value)
        if by and self.keys is None:
            raise ParameterError("keys", "declared keys for a grouped query over a private join", None)
        if self.privacy_unit is not None or self.join_multiplicity is not None:
            raise ParameterError("join", "one join: the units are bounded per side before a private join", self.privacy_unit)
        if self.where is not None and not parse(self.where).record_wise:
            raise ParameterError("where", "no row_number over a private join (its rows have no declared order)", self.where)

    # --- what the query needs -------------------------------------------------------------
    @property
    def group_columns(self) -> tuple[str, ...]:
        """The key columns: ``by``, or the histogram's column."""
        if self.statistic is Statistic.HISTOGRAM:
            assert self.column is not None
            return (self.column,)
        if self.statistic is Statistic.QUANTILE:  # the last key is the column's bin (an engine computes it)
            assert self.column is not None
            return (*self.by, self.column)
        return self.by

    @property
    def declared_columns(self) -> tuple[str, ...]:
        """The columns whose values ``keys`` lists: ``group_columns``, but only ``by`` for a quantile."""
        return self.by if self.statistic is Statistic.QUANTILE else self.group_columns

    @property
    def cells(self) -> tuple[Key, ...]:
        """Every key a declared release has: ``keys``, or for a quantile each bin j (ungrouped)
        or each (key…, j) — the engine's key layout for these columns."""
        if self.statistic is not Statistic.QUANTILE:
            return self.keys or ()
        assert self.bins is not None
        if self.keys is None:
            return tuple(range(self.bins))
        prefixes = [k if isinstance(k, tuple) else (k,) for k in self.keys]
        return tuple((*prefix, j) for prefix in prefixes for j in range(self.bins))

    @property
    def grouped(self) -> bool:
        return bool(self.group_columns)

    @property
    def declared(self) -> bool:
        """True when the group keys are public (declared); False when they come from the data.
        A quantile's bins are always declared."""
        return self.keys is not None or self.statistic is Statistic.QUANTILE

    @property
    def centre(self) -> float:
        """c = (L + U)/2, the centre for ``centred_sum`` and ``centred_squares`` (0 without bounds)."""
        return 0.0 if self.bounds is None else (self.bounds[0] + self.bounds[1]) / 2

    @property
    def half_range(self) -> float:
        return 0.0 if self.bounds is None else (self.bounds[1] - self.bounds[0]) / 2

    @property
    def predicate(self) -> Predicate | None:
        """The parsed row filter, or None."""
        return self._predicate

    @property
    def filtered(self) -> str:
        """How the rows are filtered: ``"none"``, ``"value"`` (record-wise) or ``"position"`` (row_number)."""
        if self._predicate is None:
            return "none"
        return "value" if self._predicate.record_wise else "position"

    @property
    def always_counted(self) -> bool:
        """True when every record adds its term whatever its values: only ``count()`` with no
        column, privacy unit, filter or groups. Otherwise a record can move between counted and
        not counted (null or NaN, filtered out, a key outside the declared set, a null unit, a key
        that an inner-joined public table does not hold). A LEFT JOIN whose keys match at most one
        public row each keeps every record as exactly one row: it does not stop a record being
        always counted (Δ is the private table's)."""
        return (
            self.column is None
            and self.privacy_unit is None
            and self._predicate is None
            and not self.grouped
            and (self.join_multiplicity is None or (self.join_keeps_rows and self.join_multiplicity == 1))
            and self.private_join is None
        )

    @property
    def relation(self) -> Neighbours:
        """The relation the kept rows move under (:func:`dpwitness.privacy.neighbours.effective_relation`)."""
        if self.private_join is not None:  # joined rows leave *and* enter (PrivateJoinBound)
            return Neighbours.REPLACE_ONE
        return effective_relation(self.neighbours, positional=self.filtered == "position")

    @property
    def relation_text(self) -> str:
        """The neighbour relation a release states: the session's, over a unit's rows when they are
        bounded per unit (``privacy_unit``) or joined with another private table."""
        if self.private_join is None and self.privacy_unit is None:
            return self.neighbours.description
        rows = f"all rows of one {self.privacy_unit}" if self.private_join is None else "one unit's rows in both joined tables"
        if self.neighbours is Neighbours.ADD_REMOVE:
            return f"add/remove {rows} (n is private)"
        return f"replace {rows} (n is fixed and public)"

    @property
    def contribution(self) -> ContributionBound:
        """What one unit (one record without a privacy unit) contributes to the rows read.

        Joined with a public table whose keys match at most M rows each, one record becomes at
        most M rows, in at most M groups: without a privacy unit that is a unit of M rows (Δ × M;
        M = 1 for unique keys leaves Δ unchanged). With a privacy unit, bounding acts on the
        joined rows, so a unit still keeps at most ``max_contributions`` rows: Δ is unchanged.
        """
        if self.private_join is not None:
            # ≤ M joined rows leave and ≤ M enter (2M each for a replace-one neighbour): derived and
            # proved in PrivateJoinBound; with relation = replace-one, Δ = M × a row's replace-one move.
            return ContributionBound.of(self.private_join.changed_rows(self.neighbours))
        if self.join_multiplicity is not None and self.privacy_unit is None:
            return ContributionBound.of(self.join_multiplicity)
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
        if self.quantiles is not None:
            text += " at q = " + ", ".join(f"{q:g}" for q in self.quantiles) + (" (joint)" if self.joint else "")
        if self.by:
            text += " by " + ", ".join(self.by)
        if self.keys is not None:
            text += f" over {len(self.keys)} declared keys"
        if self.where is not None:
            text += f" where {self.where}"
        if self.privacy_unit is not None:
            text += f", ≤ {self.max_contributions} row(s) per {self.privacy_unit}"
            if self.max_groups is not None and self.grouped:
                text += f" in each of ≤ {self.max_groups} group(s)"
        if self.join_multiplicity is not None:
            how = "left-joined" if self.join_keeps_rows else "joined"
            text += f", {how} with a public table (≤ {self.join_multiplicity} row(s) per key)"
        if self.private_join is not None:
            text += f", {self.private_join.text}"
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
            "where": self.where,
            "order_by": list(self.order_by),
            "quantiles": None if self.quantiles is None else list(self.quantiles),
            "bins": self.bins,
            "join_multiplicity": self.join_multiplicity,
            "join_keeps_rows": self.join_keeps_rows,
            "private_join": None if self.private_join is None else self.private_join.text,
            "epsilon": self.epsilon,
            "parts": [
                {
                    "aggregate": p.aggregate.value,
                    "epsilon": self.epsilon_of(p),
                    "sensitivity": p.sensitivity,
                    "l2_sensitivity": p.l2_sensitivity,
                }
                for p in self._parts
            ],
        }

    # --- checks against the data's schema (public metadata only) ----------------------------
    def check_schema(self, schema: Schema) -> None:
        """Raise :class:`ParameterError` for a missing (or undeclared) column, an untyped (CSV text)
        column that a statistic or a filter's comparison with a number needs as numbers (types are
        declared, never guessed), a non-numeric column for a bounded statistic, keys or filter
        literals of the wrong type, and keys outside a column's declared categories. Uses the
        schema's public metadata only."""
        for parameter, name in self._columns_used():
            if name not in schema.columns:
                raise schema.missing_column(parameter, name)
        if self._predicate is not None:
            for name in self._predicate.columns:
                if name not in schema.columns:
                    raise schema.missing_column("where", name)
        window = self._predicate is not None and self._predicate.window is not None
        keyed = [*self.group_columns, *((self.privacy_unit,) if self.privacy_unit else ()), *self.order_by]
        for name in self.columns_read if window else keyed:
            kind = schema.columns[name]
            if not kind.keyable:
                role = "by" if name in self.group_columns else "privacy_unit" if name == self.privacy_unit else "order_by"
                raise ParameterError(
                    "where" if name not in keyed else role,
                    "a column every engine can key and order (integer, float, text or boolean); declare its type "
                    "(dtypes=) to read it as one",
                    f"{name!r} ({kind.value})",
                )
        if self.bounds is not None and self.column is not None:
            kind = schema.columns[self.column]
            if kind is ColumnKind.UNTYPED:  # types are declared, never guessed from the text
                raise schema.undeclared_number("column", self.column)
            if not kind.numeric:
                raise ParameterError("column", f"a numeric column for {self.statistic.value}", f"{self.column!r} ({kind.value})")
        if self._predicate is not None:
            for name in self._predicate.compared_with_numbers:
                if schema.columns.get(name) is ColumnKind.UNTYPED:
                    raise schema.undeclared_number("where", name)
        if self.keys is not None:
            for position, name in enumerate(self.declared_columns):
                kind = schema.columns[name]
                values = [k[position] if len(self.declared_columns) > 1 else k for k in self.keys]
                if not all(_fits(kind, v) for v in values) or (kind is ColumnKind.UNTYPED and len({type(v) for v in values}) > 1):
                    raise ParameterError("keys", f"values of {name!r}'s kind ({kind.value})", values)
                declared = schema.categories.get(name)
                outside = [v for v in values if declared is not None and v not in declared]
                if outside:
                    raise ParameterError("keys", f"values among the declared categories of {name!r} (the schema)", outside)
        if self._predicate is not None:
            self._predicate.check(schema.columns)

    def _columns_used(self) -> Iterable[tuple[str, str]]:
        if self.column is not None:
            yield "column", self.column
        for name in self.by:
            yield "by", name
        if self.privacy_unit is not None:
            yield "privacy_unit", self.privacy_unit
        for name in self.order_by:
            yield "order_by", name

    @property
    def columns_read(self) -> tuple[str, ...]:
        """Every table column the engine reads: the column, keys, unit, filter and order columns."""
        filtered = self._predicate.columns if self._predicate is not None else ()
        order = self.order_by if self.filtered == "position" else ()
        return tuple(dict.fromkeys(c for c in (self.column, *self.group_columns, self.privacy_unit, *filtered, *order) if c))

    # --- derivation -----------------------------------------------------------------------
    def _derive_parts(self) -> tuple[Part, ...]:
        aggregates = self._noisy_aggregates()
        shares = self._shares(len(aggregates))
        bound = self.contribution
        coordinates = 1
        if self.grouped:
            # A unit moves the keys it holds; replacing it also moves the ≤ g keys of its new rows.
            # A quantile's unit can put each of its rows in a different bin: max_rows cells.
            held = bound.max_rows if self.statistic is Statistic.QUANTILE else bound.max_groups
            moved = held * (2 if self.relation is Neighbours.REPLACE_ONE else 1)
            coordinates = moved if not self.declared else min(moved, len(self.cells))
        return tuple(
            Part(name, share, self._sensitivity(name, bound), coordinates, self._l2_sensitivity(name, bound))
            for name, share in zip(aggregates, shares, strict=True)
        )

    def _noisy_aggregates(self) -> tuple[Aggregate, ...]:
        s = self.statistic
        if s in (Statistic.COUNT, Statistic.HISTOGRAM, Statistic.QUANTILE):
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

    def term_range(self, aggregate: Aggregate) -> tuple[float, float]:
        """[a, b]: the range of one *counted* row's term in ``aggregate`` (before the ∪ {0} of
        :func:`dpwitness.privacy.neighbours.counted_range` for rows that may not be counted).

        A centred term is fl(v − c) with the float centre c the engines subtract, which is not
        the midpoint when L + U is not representable: its range is [fl(L − c), fl(U − c)]
        (rounding is monotone), not ±h. Equal to ±h whenever the midpoint is exact.
        """
        low, high = self.bounds or (0.0, 0.0)
        below, above = low - self.centre, high - self.centre
        return {
            Aggregate.COUNT: (1.0, 1.0),
            Aggregate.SUM: (low, high),
            Aggregate.CENTRED_SUM: (below, above),
            Aggregate.CENTRED_SQUARES: (0.0, max(below * below, above * above)),
        }[aggregate]

    def _sensitivity(self, aggregate: Aggregate, bound: ContributionBound) -> float:
        """Δ of one part, derived here and only here:

        the row's term ranges over [a, b] ∪ {0} unless every record is always counted
        (:attr:`always_counted`); rows move under :attr:`relation` (replace-one for a
        row-position filter); a unit moves ≤ ``bound.max_rows`` rows.
        """
        if self.joint:
            # JointExp's utility moves by ≤ Δ₁ per row (2 under replace-one, 2(1 − min gap) under
            # add/remove, however the row enters or leaves the counted bins); a unit moves ≤ k rows.
            assert self.quantiles is not None
            return bound.max_rows * joint.utility_sensitivity(self.quantiles, self.relation)
        low, high = counted_range(*self.term_range(aggregate), always_counted=self.always_counted)
        return unit_sensitivity(self.relation, low, high, bound, grouped=self.grouped)

    def _l2_sensitivity(self, aggregate: Aggregate, bound: ContributionBound) -> float:
        """L2 Δ of one part (:func:`dpwitness.privacy.neighbours.unit_l2_sensitivity`): the same term
        range, relation and unit as :meth:`_sensitivity`, over the keys a unit can fill (at most
        the declared cells)."""
        low, high = counted_range(*self.term_range(aggregate), always_counted=self.always_counted)
        if self.statistic is Statistic.QUANTILE:
            # The engines bound a quantile's rows per (key, raw value), not per bin: distinct
            # values share a bin, so all of a unit's ≤ max_rows rows may fall in one cell.
            bound = ContributionBound(bound.max_rows, bound.max_rows, bound.max_rows)
        cells = len(self.cells) if self.grouped and self.declared else None
        return unit_l2_sensitivity(self.relation, low, high, bound, grouped=self.grouped, cells=cells)


def _joint_levels(value: Any) -> tuple[float, ...]:
    """JointExp's levels (:func:`dpwitness.mechanisms.joint_quantiles.check_levels`), named ``q`` as on every face."""
    levels = (value,) if isinstance(value, int | float) and not isinstance(value, bool) else value
    try:
        return joint.check_levels(levels)
    except ParameterError as error:
        raise ParameterError("q", error.expected + " for joint quantiles", value) from None


def _parse(kind: type[Statistic], parameter: str, value: Any) -> Statistic:
    try:
        return kind(value)
    except ValueError:
        raise ParameterError(parameter, f"one of {', '.join(s.value for s in kind)}", value) from None


def check_keys(keys: Any, parameter: str = "keys") -> tuple[Key, ...]:
    """``keys`` as a tuple of keys (a list key becomes a tuple), or ``ParameterError`` naming ``parameter``.

    A string is one key, never a sequence of keys (``keys="Ashby"`` would otherwise declare the
    keys A, s, h, b, y): it is refused, as is anything that is not a collection. The error gives
    the type, never the characters.
    """
    if isinstance(keys, str | bytes) or not isinstance(keys, Iterable):
        raise ParameterError(parameter, "a list or tuple of keys (a string is one key: put it in a list)", type(keys).__name__)
    return tuple(tuple(k) if isinstance(k, list) else k for k in keys)


def check_pair(parameter: str, value: Any, expected: str) -> tuple[Any, Any]:
    """``value`` as a pair (L, U), unchecked otherwise, or ``ParameterError(parameter, expected, …)``.

    A string is refused by its type (its characters are never a pair, nor echoed).
    """
    if value is None or isinstance(value, str | bytes) or not isinstance(value, Iterable):
        raise ParameterError(parameter, expected, None if value is None else type(value).__name__)
    pair = tuple(value)
    if len(pair) != 2:
        raise ParameterError(parameter, expected, f"{len(pair)} values")
    return pair[0], pair[1]


def _names(parameter: str, value: str | Sequence[str] | None) -> tuple[str, ...]:
    if value is None:
        return ()
    names = (value,) if isinstance(value, str) else tuple(value)
    if not all(isinstance(n, str) and n for n in names) or len(set(names)) != len(names):
        raise ParameterError(parameter, "a column name or a sequence of distinct column names", value)
    return names


# --- every derivation, for the sensitivity search ----------------------------------------------

#: Example options per statistic for :func:`derivation_cases` (a new statistic adds its line).
#: Columns: ``x`` the value (nullable float), ``g`` the key, ``pid`` the unit, ``o`` the order.
CASE_OPTIONS: dict[str, dict[str, Any]] = {
    "count": {},
    "sum": {"column": "x", "bounds": (2.0, 5.0)},
    "mean": {"column": "x", "bounds": (2.0, 5.0)},
    "variance": {"column": "x", "bounds": (2.0, 5.0)},
    "histogram": {"column": "g", "keys": ("a", "b")},
}
#: Filters of each kind: none, record-wise (value), and a row-position window.
CASE_FILTERS: dict[str, str | None] = {"none": None, "value": "x > 3 or g == 'a'", "position": "row_number <= 3"}


def derivation_cases(*, epsilon: float = 1.0) -> Iterator[Query]:
    """One query per statistic × relation × privacy unit × grouping × filter that Δ distinguishes.

    Grouping is none, declared keys (``g`` in a, b) or undeclared keys; the privacy unit is
    none or ``pid`` with 2 rows per unit; filters are :data:`CASE_FILTERS` (row-position
    filters need a declared order, ``o``, and no unit). The bounds (2, 5) exclude 0, so a
    derivation that forgot "not counted" would show. Combinations a query refuses (a grouped
    histogram) are skipped. The sensitivity search runs each through both
    engines' exact aggregates against ``[p.sensitivity for p in q.parts]`` (L1) and
    ``[p.l2_sensitivity for p in q.parts]`` (L2).

    :param epsilon: the ε every case query carries (default 1.0); Δ does not depend on it.
    """
    for statistic, options in CASE_OPTIONS.items():
        for relation in Neighbours:
            for unit in (None, "pid"):
                for grouping in ("none", "declared", "undeclared"):
                    for kind, where in CASE_FILTERS.items():
                        if kind == "position" and unit is not None:
                            continue
                        extra: dict[str, Any] = dict(options)
                        if grouping != "none":
                            if statistic == "histogram":
                                continue
                            extra.update(by=("g",), keys=("a", "b") if grouping == "declared" else None)
                        yield Query(
                            statistic=statistic,  # type: ignore[arg-type]
                            epsilon=epsilon,
                            neighbours=relation,
                            privacy_unit=unit,
                            max_contributions=2 if unit else 1,
                            where=where,
                            order_by=("o",) if kind == "position" else (),
                            **extra,
                        )
