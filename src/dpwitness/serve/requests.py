"""The query an analyst sends, as the one :class:`~dpwitness.query.resolve.Request`.

:class:`QueryRequest` checks types (it is also what the OpenAPI schema publishes);
:func:`compile_query` checks the table is one the analyst may read and builds the request.
Its meaning is checked after, on the resolved query: by the resolver every face uses
(:meth:`dpwitness.session.Session.resolve`) and by the service's
:class:`~dpwitness.serve.policy.Policy`, from declared metadata only, so every refusal is
data-independent, costs nothing, and its message holds only what the analyst sent or the
owner declared public.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field

from dpwitness.mechanisms.quantiles import MAX_BINS
from dpwitness.query.resolve import Request
from dpwitness.serve.config import AnalystConfig
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
    bins: int | None = Field(
        default=None, ge=2, le=MAX_BINS, description="quantile only: bins of [L, U] (default 64; 4096 with joint)"
    )
    joint: bool = Field(
        default=False,
        description="quantile only: release the levels q (strictly increasing in (0, 1)) in one JointExp draw, ε charged once",
    )
    where: str | None = Field(
        default=None,
        max_length=2000,
        description="a row filter over declared columns, e.g. \"age < 20 and sex == 'Female'\" (see docs/statistics.md)",
    )
    mechanism: Literal["laplace", "gaussian", "auto"] = Field(
        default="laplace",
        description="laplace (pure ε); gaussian ((ε, δ), L2 Δ; needs a δ or ρ budget): count, sum, histogram, "
        "mean over declared keys; auto: the one with the smaller error",
    )
    delta: float | None = Field(
        default=None, gt=0, lt=1, description="the δ of a Gaussian release (default 1e-6); refused for a Laplace release"
    )
    rho: float | None = Field(
        default=None,
        gt=0,
        description="instead of epsilon, on an analyst whose total is ρ: a Gaussian release at ρ-zCDP "
        "(count, sum, histogram, mean)",
    )


class QueryError(Exception):
    """A refused request: ``status`` and a message naming what was wrong (no data values)."""

    def __init__(self, status: int, message: str) -> None:
        super().__init__(message)
        self.status = status
        self.message = message


@dataclass(frozen=True)
class TableRequest:
    """A request the analyst may send: a table they may read, and the one
    :class:`~dpwitness.query.resolve.Request` every face builds. The table's session resolves it
    (``Session.resolve``: the declared schema's defaults, every data-free check), then the
    service's :class:`~dpwitness.serve.policy.Policy` checks the resolved query; its
    ``run_options`` say how it is released (a ``rho`` request is charged ρ)."""

    table: LoadedTable
    request: Request

    @property
    def shape(self) -> tuple[Any, ...]:
        """What makes two requests compute the same aggregates (the first of each shape runs alone)."""
        r = self.request
        return (self.table.name, r.statistic, r.column, r.bounds, r.by, r.epsilon, r.rho, r.quantiles, r.bins, r.joint, r.where)


def compile_query(request: QueryRequest, *, analyst: AnalystConfig, tables: dict[str, LoadedTable], alpha: float) -> TableRequest:
    """``request`` on a table the analyst may read, as the one :class:`Request`; raise
    :class:`QueryError` (404) otherwise. Every other check is the resolver's and the policy's."""
    table = tables.get(request.table)
    if table is None or not analyst.may_read(request.table):
        raise QueryError(404, f"no table named {request.table!r} is available to you (see GET /v1/tables)")
    if (request.epsilon is None) == (request.rho is None):
        raise QueryError(422, "give epsilon (the ε this query spends) or rho (on a ρ account), exactly one of them")
    return TableRequest(
        table,
        Request(
            request.statistic,
            request.column,
            epsilon=request.epsilon,
            rho=request.rho,
            bounds=None if request.bounds is None else (request.bounds[0], request.bounds[1]),
            by=None if request.by is None else tuple(request.by),
            delta=request.delta,
            quantiles=tuple(request.q) if isinstance(request.q, list) else request.q,
            bins=request.bins,
            joint=request.joint,
            where=request.where,
            mechanism=request.mechanism,
            alpha=alpha if request.alpha is None else request.alpha,
        ),
    )
