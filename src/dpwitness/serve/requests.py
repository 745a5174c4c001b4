"""The query an analyst sends, and its compilation against the table's public schema.

:class:`QueryRequest` checks types (it is also what the OpenAPI schema publishes);
:func:`compile_query` checks meaning against the *declared* metadata only (column names,
bounds, categories, limits) and never looks at the data, so every refusal here is
data-independent, costs nothing, and its message holds only what the analyst sent or the
owner declared public.
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field

from dpwitness.common.errors import ParameterError
from dpwitness.mechanisms.quantiles import MAX_BINS, check_quantiles
from dpwitness.privacy.neighbours import check_bounds
from dpwitness.query.predicates import parse
from dpwitness.query.resolve import Request
from dpwitness.serve.config import AnalystConfig, Limits
from dpwitness.serve.tables import LoadedTable

Statistic = Literal["count", "sum", "mean", "variance", "histogram", "quantile"]


class QueryRequest(BaseModel):
    """One DP statistic over one table, paid for with ``epsilon`` from the analyst's budget."""

    model_config = ConfigDict(
        extra="forbid",
        strict=True,
        json_schema_extra={
            "examples": [
                {"table": "adult", "statistic": "count", "epsilon": 0.1},
                {"table": "adult", "statistic": "mean", "column": "age", "epsilon": 0.1},
                {"table": "adult", "statistic": "sum", "column": "age", "bounds": [17, 80], "by": ["sex"], "epsilon": 0.2},
                {"table": "adult", "statistic": "histogram", "column": "education", "epsilon": 0.1},
            ]
        },
    )

    table: str = Field(min_length=1, max_length=200, description="a table listed by GET /v1/tables")
    statistic: Statistic = Field(description="count, sum, mean, variance or histogram")
    epsilon: float | None = Field(
        default=None, gt=0, description="the ε this query spends (finite, > 0); or give rho on a ρ account"
    )
    column: str | None = Field(
        default=None, max_length=200, description="the column (sum, mean, variance, histogram; optional for count)"
    )
    bounds: list[float] | None = Field(
        default=None, min_length=2, max_length=2, description="clamping bounds [L, U]; default: the bounds the owner declared"
    )
    by: list[str] | None = Field(default=None, max_length=8, description="categorical columns to group by (declared keys only)")
    alpha: float | None = Field(default=None, gt=0, lt=1, description="the reported interval holds with probability 1 − alpha")
    q: float | list[float] | None = Field(
        default=None, description="quantile only: q in [0, 1], or a list of them released from one histogram (0.5: the median)"
    )
    bins: int | None = Field(default=None, ge=2, le=MAX_BINS, description="quantile only: bins of [L, U] (default 64)")
    where: str | None = Field(
        default=None,
        max_length=2000,
        description="a row filter over declared columns, e.g. \"age < 20 and sex == 'Female'\" (see docs/statistics.md)",
    )
    mechanism: Literal["laplace", "gaussian", "auto"] = Field(
        default="laplace",
        description="laplace (pure ε); gaussian ((ε, δ), L2 Δ; needs a δ or ρ budget): count, sum, histogram; "
        "auto: the one with the smaller error",
    )
    delta: float | None = Field(
        default=None, gt=0, lt=1, description="the δ of a Gaussian release (default 1e-6); refused for a Laplace release"
    )
    rho: float | None = Field(
        default=None,
        gt=0,
        description="instead of epsilon, on an analyst whose total is ρ: a Gaussian release at ρ-zCDP (count, sum, histogram)",
    )


class QueryError(Exception):
    """A refused request: ``status`` and a message naming what was wrong (no data values)."""

    def __init__(self, status: int, message: str) -> None:
        super().__init__(message)
        self.status = status
        self.message = message


@dataclass(frozen=True)
class CompiledQuery:
    """A request checked against the public schema and this service's limits (its policy), ready
    for :meth:`dpwitness.session.Session.resolve`, whose declared schema (the table's) supplies the
    keys of ``by`` and the default bounds."""

    table: LoadedTable
    statistic: str
    epsilon: float
    column: str | None
    bounds: tuple[float, float] | None
    by: tuple[str, ...]
    alpha: float
    where: str | None = None
    quantiles: tuple[float, ...] | None = None
    bins: int | None = None
    mechanism: str = "laplace"
    delta: float | None = None
    rho: float | None = None

    @property
    def request(self) -> Request:
        """The request as every face states it (:class:`~dpwitness.query.resolve.Request`), for
        ``Session.resolve``; its ``run_options`` say how it is released (a ``rho`` request is
        charged ρ, its ε only sizes the query)."""
        return Request(
            self.statistic,
            self.column,
            epsilon=self.epsilon if self.rho is None else None,
            rho=self.rho,
            bounds=self.bounds,
            by=self.by,
            delta=self.delta,
            quantiles=self.quantiles,
            bins=self.bins,
            where=self.where,
            mechanism=self.mechanism,
            alpha=self.alpha,
        )


def compile_query(
    request: QueryRequest, *, analyst: AnalystConfig, tables: dict[str, LoadedTable], limits: Limits, alpha: float
) -> CompiledQuery:
    """Check ``request`` against what is declared public; raise :class:`QueryError` otherwise."""
    table = tables.get(request.table)
    if table is None or not analyst.may_read(request.table):
        raise QueryError(404, f"no table named {request.table!r} is available to you (see GET /v1/tables)")
    columns = table.config.columns
    if (request.epsilon is None) == (request.rho is None):
        raise QueryError(422, "give epsilon (the ε this query spends) or rho (on a ρ account), exactly one of them")
    rho = None if request.rho is None else _finite_positive("rho", request.rho)
    epsilon = math.sqrt(2 * rho) if rho is not None else _finite_positive("epsilon", request.epsilon)
    chosen_alpha = alpha if request.alpha is None else request.alpha
    if not (math.isfinite(chosen_alpha) and 0 < chosen_alpha < 1):
        raise QueryError(422, "alpha must be a number strictly between 0 and 1")
    statistic = request.statistic
    column = request.column
    if column is not None and column not in columns:
        raise QueryError(422, f"column must be one of the declared columns ({', '.join(columns)}); got {column!r}")
    bounds: tuple[float, float] | None = None
    by: tuple[str, ...] = ()
    if statistic in ("sum", "mean", "variance", "quantile"):
        if column is None or not columns[column].numeric:
            numeric = ", ".join(c for c, spec in columns.items() if spec.numeric) or "none"
            raise QueryError(422, f"{statistic} needs a numeric column with declared bounds (numeric columns: {numeric})")
        bounds = _bounds(request.bounds, columns[column].bounds)
    elif request.bounds is not None:
        raise QueryError(422, f"bounds are only for sum, mean, variance and quantile, not {statistic}")
    quantiles = _quantiles(statistic, request.q, request.bins)
    if statistic == "histogram":
        if column is None or table.keys.get(column) is None:
            categorical = ", ".join(table.keys) or "none"
            raise QueryError(
                422, f"histogram needs a categorical column with declared categories (categorical columns: {categorical})"
            )
        categories = len(table.keys[column])
        if categories > limits.max_groups:
            raise QueryError(422, f"this histogram has {categories} categories; the limit is {limits.max_groups}")
    if request.by:
        if statistic in ("histogram", "variance"):
            raise QueryError(422, f"by is not supported for {statistic}")
        by = tuple(request.by)
        if len(set(by)) != len(by) or len(by) > limits.max_by_columns:
            raise QueryError(422, f"by must list at most {limits.max_by_columns} distinct columns")
        for name in by:
            if name not in table.keys:
                categorical = ", ".join(table.keys) or "none"
                raise QueryError(422, f"by must name categorical columns with declared categories ({categorical}); got {name!r}")
            if name == column:
                raise QueryError(422, "by must not repeat the queried column")
        groups = math.prod(len(table.keys[name]) for name in by)
        if groups > limits.max_groups:
            raise QueryError(422, f"grouping by {', '.join(by)} gives {groups} groups; the limit is {limits.max_groups}")
    where = _where(request.where, columns)
    delta = None if request.delta is None else _finite_positive("delta", request.delta)
    return CompiledQuery(
        table,
        statistic,
        epsilon,
        column,
        bounds,
        by,
        chosen_alpha,
        where,
        quantiles,
        request.bins,
        mechanism=request.mechanism,
        delta=delta,
        rho=rho,
    )


def _quantiles(statistic: str, q: float | list[float] | None, bins: int | None) -> tuple[float, ...] | None:
    if statistic != "quantile":
        if q is not None or bins is not None:
            raise QueryError(422, f"q and bins are only for quantile, not {statistic}")
        return None
    if q is None:
        raise QueryError(422, "quantile needs q: a number in [0, 1] or a list of them")
    try:
        return check_quantiles(q)
    except ParameterError as error:
        raise QueryError(422, str(error)) from None


def _where(text: str | None, columns: Mapping[str, Any]) -> str | None:
    """Parse the row filter and check that it reads declared columns only (no row_number: the
    service declares no order). Types are checked by the session against the table's schema."""
    if text is None:
        return None
    try:
        predicate = parse(text)
    except ParameterError as error:
        raise QueryError(422, str(error)) from None
    if not predicate.record_wise:
        raise QueryError(422, "where: row_number needs a declared order, which this service's tables do not have")
    undeclared = [c for c in predicate.columns if c not in columns]
    if undeclared:
        raise QueryError(422, f"where must use declared columns only ({', '.join(columns)}); got {undeclared[0]!r}")
    return text


def _finite_positive(name: str, value: float | None) -> float:
    if isinstance(value, bool) or not isinstance(value, int | float) or not math.isfinite(value) or value <= 0:
        raise QueryError(422, f"{name} must be a finite number > 0")
    return float(value)


def _bounds(requested: list[float] | None, declared: tuple[float, float] | None) -> tuple[float, float]:
    if requested is None:
        assert declared is not None
        return declared
    if len(requested) != 2 or not all(
        isinstance(v, int | float) and not isinstance(v, bool) and math.isfinite(v) for v in requested
    ):
        raise QueryError(422, "bounds must be [L, U] with finite numbers (no NaN or infinity)")
    try:
        return check_bounds(requested[0], requested[1])  # the core's rule, on every face
    except ParameterError as error:
        raise QueryError(422, str(error)) from None
