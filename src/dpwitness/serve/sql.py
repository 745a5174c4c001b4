"""The service's SQL request: ``POST /v1/sql`` with ``{"sql": "SELECT …", "epsilon": …}``.

The statement is compiled by :mod:`dpwitness.sql` against the named table's *declared* metadata
(its config's bounds and categories; the analyst's session carries the relation and privacy unit;
tables with ``public = true`` are the lookup tables a statement may JOIN; another private table
of the config may be JOINed when both declare the same privacy unit and relation, with the
request's ``max_rows_per_key`` (and ``max_rows_per_unit``, default each table's
``max_contributions``) as the truncation of :class:`~dpwitness.query.resolve.PrivateJoin`; its ε
is spent once from the analyst's one account, as every release is),
so every refusal is data-independent and costs nothing. ``GROUP BY`` takes keys from the
config's categories, from ``WHERE col IN (…)``, or, on a column the table lists in
``keys_from_data`` (with its ``max_rows``), from the data above a threshold; other undeclared
group keys are refused here. The answer has one row per group and each aggregate's interval; the
release set states ε, δ, Δ and the relation per aggregate.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING, Any

from pydantic import BaseModel, ConfigDict, Field

from dpwitness.common.encoding import json_value
from dpwitness.common.errors import BudgetExceeded, MissingPart, ParameterError
from dpwitness.serve.client import MAX_SQL
from dpwitness.serve.requests import QueryError
from dpwitness.session.sql import compile_for, execute, explain_statement, refuse_targets, target
from dpwitness.sql import Answer, SqlError, joined_tables, table_of

if TYPE_CHECKING:
    from dpwitness.serve.config import AnalystConfig, Limits
    from dpwitness.serve.tables import LoadedTable
    from dpwitness.session import Session


class SqlRequest(BaseModel):
    """One SQL SELECT over one table (named in its FROM), paid for with ``epsilon``."""

    model_config = ConfigDict(
        extra="forbid",
        strict=True,
        json_schema_extra={"examples": [{"sql": "SELECT COUNT(*) FROM adult WHERE age < 20", "epsilon": 0.1}]},
    )

    sql: str = Field(min_length=1, max_length=MAX_SQL, description="one SELECT statement (see docs/sql.md)")
    epsilon: float | None = Field(
        default=None,
        gt=0,
        description="the statement's ε, split evenly over aggregates without EPSILON(…, ε); "
        "none for EXPLAIN with target errors (WITHIN(aggregate, error): the plan solves ε)",
    )
    alpha: float | None = Field(default=None, gt=0, lt=1, description="intervals hold with probability 1 − alpha")
    explain: bool = Field(default=False, description="the plan only (queries, Δ, ε, expected error); spends nothing")
    max_rows_per_key: int | list[int] | None = Field(
        default=None,
        description="a JOIN of two private tables: rows kept per join-key value, k or [k_left, k_right] (required for one)",
    )
    max_rows_per_unit: int | list[int] | None = Field(
        default=None,
        description="a JOIN of two private tables: rows kept per privacy unit, m or [m_left, m_right] "
        "(default: each table's max_contributions)",
    )


#: Parameters whose messages quote only what the analyst sent.
_SHOWN = {
    *("statement", "epsilon", "alpha", "bounds", "keys", "where", "delta_budget", "max_rows"),
    *("max_rows_per_key", "max_rows_per_unit"),
}


def answer_sql(
    body: SqlRequest,
    *,
    analyst: AnalystConfig,
    tables: dict[str, LoadedTable],
    limits: Limits,
    alpha: float,
    session_for: Callable[[LoadedTable], Session],
) -> dict[str, Any]:
    """Compile, check (statement, limits, budget for all its queries), then spend and answer."""
    try:
        name = table_of(body.sql)
    except ParameterError as error:
        raise QueryError(422, str(error)) from None
    except MissingPart as error:  # the service runs without the sql extra
        raise QueryError(501, str(error)) from None
    table = tables.get(name or "")
    if name is None or table is None or not analyst.may_read(name):
        raise QueryError(404, f"no table named {name!r} is available to you (see GET /v1/tables)")
    private = {n.lower(): n for n, t in tables.items() if not t.config.lookup and n != table.name and analyst.may_read(n)}
    others = [tables[private[n.lower()]] for n in joined_tables(body.sql) if n.lower() in private]
    joins = _private_joins(table, others, body)
    session = session_for(table)
    lookups = {n: t.frame for n, t in tables.items() if t.config.lookup and n != table.name and analyst.may_read(n)}
    chosen = body.alpha if body.alpha is not None else alpha
    try:
        compiled = compile_for(session, body.sql, epsilon=body.epsilon, name=table.name, public=lookups, **joins)
        if len(compiled.by) > limits.max_by_columns:
            raise QueryError(422, f"GROUP BY takes at most {limits.max_by_columns} columns")
        if compiled.by and compiled.keys is None and not set(compiled.by) <= set(table.config.keys_from_data):
            raise QueryError(
                422,
                "GROUP BY needs declared keys here: group by columns with declared categories or keys from the data "
                "(the table's keys_from_data), or use WHERE col IN (…)",
            )
        if compiled.keys is not None and len(compiled.keys) > limits.max_groups:
            raise QueryError(422, f"this statement has {len(compiled.keys)} groups; the limit is {limits.max_groups}")
        over = target(session, compiled)
        if compiled.join is not None or compiled.cases or compiled.private_join is not None:
            # the cache keys a shape by the query, not by the table it is joined with, the CASE that
            # computes a key column (two CASEs can share an alias) or a private join's truncation
            # (a fresh key per statement): read the derived table afresh
            over.engine = getattr(over.engine, "engine", over.engine)
        if body.explain or compiled.explain:
            return {"table": table.name, "plan": json_value(explain_statement(over, compiled, alpha=chosen).to_dict())}
        refuse_targets(compiled)
        over.check_budget(list(compiled.queries))
        answer: Answer = execute(over, compiled, alpha=chosen)
        session.releases.clear()  # the service keeps no releases in memory
    except SqlError as error:
        raise QueryError(422, str(error)) from None
    except BudgetExceeded as error:
        raise QueryError(402, str(error)) from None
    except ParameterError as error:
        shown = str(error) if error.parameter in _SHOWN else f"the statement could not be answered ({error.parameter})"
        raise QueryError(422, shown) from None
    data = answer.to_dict()
    data["rows"] = [[_key(cell) for cell in row] for row in data["rows"]]
    return {"table": table.name, "answer": json_value(data)}


def _private_joins(table: LoadedTable, others: list[LoadedTable], body: SqlRequest) -> dict[str, Any]:
    """The private-join arguments of :func:`~dpwitness.session.sql.compile_for` for a statement
    over ``table`` that names ``others`` (other private tables the analyst may read): refused, 422
    before any spend, unless both declare one privacy unit and one relation (a neighbour then adds
    or removes one unit's rows in both)."""
    if not others:
        return {}
    other = others[0]
    unit, relation = table.config.privacy_unit, table.config.neighbours
    if unit is None or other.config.privacy_unit != unit:
        units = f"{table.name}: {unit or 'none'}, {other.name}: {other.config.privacy_unit or 'none'}"
        raise QueryError(422, f"a JOIN of two private tables needs both to declare the same privacy_unit ({units})")
    if other.config.neighbours is not relation:
        raise QueryError(422, f"a JOIN of two private tables needs both to declare the same neighbours ({relation.value})")
    per_unit = body.max_rows_per_unit
    if per_unit is None:
        per_unit = [table.config.max_contributions, other.config.max_contributions]
    return {"private": {other.name: other.frame}, "max_rows_per_key": body.max_rows_per_key, "max_rows_per_unit": per_unit}


def _key(cell: Any) -> Any:
    return " & ".join(map(str, cell)) if isinstance(cell, list) else cell
