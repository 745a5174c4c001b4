"""One door: every face (Python, CLI flags, SQL, the service) hands one :class:`Request` to
:func:`resolve`, which fills the defaults from the declared schema and runs every check that
needs no data, and returns the one :class:`~dpwitness.query.queries.Query` (its Δ derived in
:mod:`dpwitness.query.queries`).

Resolving reads no row and spends nothing; a bad request is a one-line
:class:`~dpwitness.common.errors.ParameterError` naming the parameter. What needs the table's
metadata or the account (the plan, the engine's check, the budget) is the session's
(:class:`dpwitness.session.Session`), after this.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from dpwitness.common.errors import ParameterError
from dpwitness.common.validation import check_count, check_positive_finite
from dpwitness.io.schema import Schema
from dpwitness.mechanisms.quantiles import check_quantiles
from dpwitness.privacy.budget import Budget
from dpwitness.privacy.neighbours import Neighbours, PrivateJoinBound
from dpwitness.query.planning import DEFAULT_DELTA
from dpwitness.query.queries import Key, Query, check_keys

#: The statistics that clamp to bounds (a declared schema's bounds are their default).
BOUNDED_STATISTICS = frozenset({"sum", "mean", "variance", "quantile"})


@dataclass(frozen=True)
class PrivateJoin:
    """A join of the session's private table (left) with another private ``table`` (right) that
    holds the same privacy-unit column: an inner equi-join ``left.on[0] = right.on[1]``.

    Before the join each side keeps ≤ ``max_rows_per_unit`` = (m_l, m_r) rows per unit (None: the
    session's ``max_contributions`` for both), then ≤ ``max_rows_per_key`` = (k_l, k_r) rows per
    key value, rows picked by a keyed hash of their content (the per-unit bounding's choice): one
    unit then moves ≤ m_l·k_r + m_r·k_l joined rows each way
    (:class:`~dpwitness.privacy.neighbours.PrivateJoinBound`, where it is proved). The joined
    rows hold the left's columns and the right's, a right column whose name the left has as
    ``"<name>.<column>"``; the right's key and unit columns are dropped (equal to the left's key;
    the unit is bounded already). ``table``: a Polars frame or a CSV/Parquet path, opened by the
    session's engine; ``dtypes`` its declared column types (as ``Session(dtypes=…)``).
    """

    table: Any
    on: str | tuple[str, str]
    max_rows_per_key: int | tuple[int, int] | None = None
    max_rows_per_unit: int | tuple[int, int] | None = None
    name: str = "right"
    dtypes: Any = None

    def bound(self, max_contributions: int) -> PrivateJoinBound:
        """The contribution bounds, checked (one-line errors naming ``on``, ``max_rows_per_key``…);
        ``max_contributions`` (the session's) is m on each side when ``max_rows_per_unit`` is None."""
        left, right = self.columns
        if self.max_rows_per_key is None:
            raise ParameterError("max_rows_per_key", "max rows per key for each side of a private join (k or (k_l, k_r))", None)
        k_l, k_r = check_per_side("max_rows_per_key", self.max_rows_per_key)
        per_unit = max_contributions if self.max_rows_per_unit is None else self.max_rows_per_unit
        m_l, m_r = check_per_side("max_rows_per_unit", per_unit)
        return PrivateJoinBound(k_l, k_r, m_l, m_r, on=(left, right))

    @property
    def columns(self) -> tuple[str, str]:
        """(left key, right key): ``on`` as given, one name for both or a pair."""
        on = (self.on, self.on) if isinstance(self.on, str) else self.on
        if not (isinstance(on, tuple) and len(on) == 2 and all(isinstance(c, str) and c for c in on)):
            raise ParameterError("on", "a key column's name, or (left column, right column)", type(self.on).__name__)
        if not (isinstance(self.name, str) and self.name):
            raise ParameterError("name", "the joined table's name (a non-empty text)", type(self.name).__name__)
        return on[0], on[1]


def check_per_side(parameter: str, value: Any) -> tuple[int, int]:
    """A private join's bound for each side: k for both, or (left, right) (a tuple or list);
    whole numbers ≥ 1, else ``ParameterError(parameter, …)``.

    :param parameter: the name the error gives (``max_rows_per_key`` or ``max_rows_per_unit``).
    :param value: the bound as given.
    """
    pair = (value, value) if not isinstance(value, tuple | list) else tuple(value)
    if len(pair) != 2:
        raise ParameterError(parameter, "a whole number ≥ 1 or (left, right)", type(value).__name__)
    return check_count(parameter, pair[0]), check_count(parameter, pair[1])


@dataclass(frozen=True)
class Request:
    """What a face asks for, as given: one statistic and how it is released.

    ``epsilon`` (or ``rho`` on an account whose total is ρ) is the statistic's budget;
    ``bounds`` None and ``by`` (or a histogram's column) without ``keys`` take the declared
    schema's bounds and categories; ``delta`` None takes the context's default. ``mechanism``,
    ``max_rows`` and ``alpha`` say how the resolved query is released (:meth:`run_options`).
    ``joint`` (a quantile only) releases every level in one JointExp draw. ``join`` (a
    :class:`PrivateJoin`): the statistic is over the session's table joined with another private one.
    Nothing is validated here: :func:`resolve` checks every field, naming it.
    """

    statistic: str
    column: str | None = None
    epsilon: float | None = None
    rho: float | None = None
    bounds: tuple[float, float] | None = None
    by: str | Sequence[str] | None = None
    keys: Sequence[Key] | None = None
    split: Sequence[float] | None = None
    delta: float | None = None
    quantiles: float | Sequence[float] | None = None
    bins: int | None = None
    joint: bool = False
    where: str | None = None
    mechanism: str | None = None
    max_rows: int | None = None
    alpha: float = 0.05
    join: PrivateJoin | None = None

    def run_options(self) -> dict[str, Any]:
        """Keyword arguments for ``Session.run``/``Session.preview``: how the statistic is released."""
        return {"alpha": self.alpha, "mechanism": self.mechanism, "rho": self.rho, "max_rows": self.max_rows}


def resolve(
    request: Request,
    *,
    schema: Schema | None,
    neighbours: Neighbours,
    privacy_unit: str | None,
    max_contributions: int = 1,
    max_groups: int | None = None,
    delta: float = DEFAULT_DELTA,
    order_by: Sequence[str] = (),
    total: Budget | None = None,
) -> Query:
    """``request`` as the validated :class:`Query` under a relation and privacy unit.

    :param schema: the data owner's declared schema (None: none): a bounded statistic without
        ``bounds`` takes the column's declared bounds, ``by`` (or a histogram's column) without
        ``keys`` the declared categories (their product for several columns).
    :param neighbours: the relation every Δ is derived for.
    :param privacy_unit: the privacy-unit column (None: one row is one person), with
        ``max_contributions`` (k) and ``max_groups`` (g) bounding what a unit contributes.
    :param delta: the default δ of a release over undeclared keys or of a Gaussian release.
    :param order_by: the declared row order that ``row_number`` in ``where`` counts in.
    :param total: the account's total, which a ``rho`` request needs (a ρ total only).
    """
    epsilon = statistic_epsilon(request.epsilon, request.rho, total)
    statistic, column, bounds = request.statistic, request.column, request.bounds
    grouping = (request.by,) if isinstance(request.by, str) else tuple(request.by or ())  # a by string is one column
    keys = None if request.keys is None else check_keys(request.keys)  # a keys string is refused, never split
    join = None
    if request.join is not None:
        if not isinstance(request.join, PrivateJoin):
            raise ParameterError("join", "a dpwitness.query.resolve.PrivateJoin or None", type(request.join).__name__)
        if privacy_unit is None:
            raise ParameterError("privacy_unit", "the column that identifies a unit in both tables of a private join", None)
        join = request.join.bound(max_contributions)
        # the units are bounded per side before the join; the left's declared schema does not describe the joined rows
        privacy_unit, max_contributions, max_groups, schema = None, 1, None, None
    if schema is not None:
        if bounds is None and isinstance(statistic, str) and statistic in BOUNDED_STATISTICS:
            bounds = schema.bounds_for(column)
        if keys is None:
            if grouping:
                keys = schema.keys_for(grouping)
            elif statistic == "histogram" and column is not None:
                keys = schema.keys_for((column,))
    return Query(
        statistic=statistic,  # type: ignore[arg-type]
        epsilon=epsilon,
        column=column,
        bounds=bounds,
        by=grouping,
        keys=keys,
        neighbours=neighbours,
        privacy_unit=privacy_unit,
        max_contributions=max_contributions,
        max_groups=max_groups,
        split=None if request.split is None else tuple(request.split),
        delta=delta if request.delta is None else request.delta,
        explicit_delta=request.delta is not None,
        quantiles=check_quantiles(request.quantiles) if request.quantiles is not None else None,
        bins=request.bins,
        joint=request.joint,
        where=request.where,
        order_by=() if join is not None else tuple(order_by),
        private_join=join,
    )


def statistic_epsilon(epsilon: float | None, rho: float | None, total: Budget | None) -> float:
    """The query's ε: the ``epsilon`` given, or for ``rho`` alone the ε of a pure release with that ρ
    (√(2ρ): it only sizes the query; a ρ release is charged its ρ), which the account's ``total``
    must allow (a ρ total)."""
    if epsilon is not None and rho is not None:
        raise ParameterError("rho", "given alone: a statistic's budget is epsilon= or rho=, not both", rho)
    if rho is not None:
        return math.sqrt(2 * check_rho_option(rho, total))
    if epsilon is None:
        raise ParameterError("epsilon", "the ε of this statistic (or rho= on an account whose total is ρ)", None)
    return epsilon


def check_max_rows(max_rows: Any) -> int:
    """A declared bound on rows (privacy units with ``privacy_unit``): a whole number ≥ 1.

    :param max_rows: the value given as ``max_rows=``; a bool, a non-integer or a number < 1
        raises :class:`~dpwitness.common.errors.ParameterError` naming ``max_rows``.
    """
    return check_count("max_rows", max_rows, expected="a whole number ≥ 1 (a declared bound on rows or units, not a count)")


def check_rho_option(rho: Any, total: Budget | None) -> float:
    """A statistic's ``rho=``: a number > 0, only on an account whose total is ρ."""
    value = check_positive_finite("rho", rho)
    if total is None or not total.is_zcdp:
        raise ParameterError(
            "rho",
            f"only on an account whose total is ρ (Session(rho=…)); this account's total is {total}: "
            "give epsilon= (with delta= and mechanism='gaussian' for a Gaussian release)",
            rho,
        )
    return value


__all__ = ["BOUNDED_STATISTICS", "PrivateJoin", "Request", "check_max_rows", "check_rho_option", "resolve", "statistic_epsilon"]
