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
from dpwitness.privacy.neighbours import Neighbours
from dpwitness.query.planning import DEFAULT_DELTA
from dpwitness.query.queries import Key, Query, check_keys

#: The statistics that clamp to bounds (a declared schema's bounds are their default).
BOUNDED_STATISTICS = frozenset({"sum", "mean", "variance", "quantile"})


@dataclass(frozen=True)
class Request:
    """What a face asks for, as given: one statistic and how it is released.

    ``epsilon`` (or ``rho`` on an account whose total is ρ) is the statistic's budget;
    ``bounds`` None and ``by`` (or a histogram's column) without ``keys`` take the declared
    schema's bounds and categories; ``delta`` None takes the context's default. ``mechanism``,
    ``max_rows`` and ``alpha`` say how the resolved query is released (:meth:`run_options`).
    ``joint`` (a quantile only) releases every level in one JointExp draw.
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
        order_by=tuple(order_by),
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


__all__ = ["BOUNDED_STATISTICS", "Request", "check_max_rows", "check_rho_option", "resolve", "statistic_epsilon"]
