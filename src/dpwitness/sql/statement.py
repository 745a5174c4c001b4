"""The compiled statement: the queries to release (one :class:`Aggregate` each) and the
post-processing of their released values. Pure data: nothing read, nothing spent."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from dpwitness.engines.derived import CaseColumn
from dpwitness.engines.joins import PublicTable
from dpwitness.query.queries import Key, Query
from dpwitness.query.resolve import PrivateJoin, Request


@dataclass(frozen=True)
class Aggregate:
    """One aggregate call of the statement and the :class:`Query` that releases it.

    ``text`` is the call as SQL (e.g. ``AVG(CLAMP(age, 0, 100))``); ``kind`` one of count, sum,
    avg, variance, stddev, quantile; ``q`` the quantile's q (MEDIAN 0.5, MIN 0, MAX 1).
    ``reuses_keys``: the query's keys are those the first aggregate releases (undeclared keys).
    """

    text: str
    kind: str
    query: Query
    position: int
    index: int = 0  # the first call's place in the statement's compiled expressions ("agg", index)
    explicit_epsilon: bool = False
    reuses_keys: bool = False
    calls: tuple[int, ...] = ()  # every call this release answers (VAR and STDDEV; several quantiles)
    #: ``WITHIN(aggregate, error[, min_rows])``: (error, min_rows) and the request to plan (no ε);
    #: the ε of ``query`` is then a placeholder (EXPLAIN solves it: dpwitness.sql.targets).
    target: tuple[float, int | None] | None = None
    request: Request | None = None

    @property
    def statistic(self) -> str:
        return self.query.statistic.value


@dataclass(frozen=True)
class Statement:
    """A statement compiled against one table's public schema: the queries to release and the
    post-processing (outputs, HAVING, ORDER BY, LIMIT) of their released values. Pure: nothing
    read, nothing spent."""

    text: str
    table: str
    by: tuple[str, ...]
    keys: tuple[Key, ...] | None
    keys_from: str  # "none", "declared: WHERE … IN (…)", "released by the first aggregate (undeclared keys)"
    aggregates: tuple[Aggregate, ...]
    outputs: tuple[tuple[str, Any], ...]  # (name, compiled expression)
    having: Any
    order: tuple[tuple[Any, bool], ...]  # (expression, descending)
    limit: int | None
    offset: int
    epsilon: float
    epsilon_note: str
    explain: bool = False
    notes: tuple[str, ...] = ()
    #: The public table the private rows are joined with (None: no JOIN) and the private key column.
    join: PublicTable | None = None
    join_on: str | None = None
    #: The other private table joined with the session's (None: none), as each request carries it.
    private_join: PrivateJoin | None = None
    #: (kind, q) of each aggregate call, indexed as the compiled expressions' ("agg", index).
    calls: tuple[tuple[str, float | None], ...] = ()
    #: The columns GROUP BY CASE … derives from each row (added after the JOIN, if any).
    cases: tuple[CaseColumn, ...] = ()

    @property
    def queries(self) -> tuple[Query, ...]:
        return tuple(a.query for a in self.aggregates)

    @property
    def targets(self) -> bool:
        """True when the statement asks for target errors (``WITHIN(…)``): only EXPLAIN answers it."""
        return any(a.target is not None for a in self.aggregates)


# Compiled expressions over released values (post-processing): small tuples, evaluated per row.
#   ("agg", i)  ("key", j)  ("num", x)  ("text", s)  ("bool", b)
#   ("op", sym, a, b)  ("fn", NAME, a, …) (POWER, SQRT, …: dpwitness.sql.functions)
#   ("neg", a)  ("round", a, digits)  ("cmp", sym, a, b)  ("and"|"or", a, b)  ("not", a)


__all__ = ["Aggregate", "Statement"]
