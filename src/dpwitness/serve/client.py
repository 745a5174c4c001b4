"""A small Python client for ``dpwitness serve``.

>>> client = Client("http://127.0.0.1:8000", "alice-demo-token-CHANGE-ME")   # doctest: +SKIP
>>> client.mean("adult", "age", epsilon=0.1).value                           # doctest: +SKIP

>>> client.sql("SELECT sex, AVG(age) FROM adult GROUP BY sex", epsilon=0.2).rows   # doctest: +SKIP

Query methods return a :class:`dpwitness.Release` (``value``, ``interval``, ``epsilon``,
``sensitivity``…; grouped keys are tuples of the key columns' values, ``to_polars()`` gives
one row per key) and raise :class:`dpwitness.BudgetExceeded` when the budget would be
exceeded, :class:`ServiceError` for any other refusal. Every query method takes the
service's options where the statistic is asked: ``alpha``, ``mechanism``, ``delta``, and
``rho`` instead of ``epsilon`` on a ρ account. :meth:`Client.sql` sends one SQL statement to
``POST /v1/sql`` and returns a :class:`SqlAnswer` (or, with ``explain=True``, the plan).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

import httpx

from dpwitness.common.errors import BudgetExceeded, ParameterError
from dpwitness.common.validation import check_alpha, check_positive_finite
from dpwitness.mechanisms.quantiles import check_quantiles
from dpwitness.mechanisms.release import Release
from dpwitness.privacy.neighbours import check_bounds
from dpwitness.query.queries import check_pair
from dpwitness.query.resolve import check_per_side
from dpwitness.sql.answer import Cell

#: The longest statement ``POST /v1/sql`` takes (characters); the service's request model uses it too.
MAX_SQL = 4000


class ServiceError(RuntimeError):
    """The service refused a request; ``status`` is the HTTP status, the message its reason."""

    def __init__(self, status: int, message: str) -> None:
        super().__init__(f"{status}: {message}")
        self.status = status
        self.message = message


@dataclass(frozen=True)
class SqlAnswer:
    """The service's answer to a SQL statement, as :class:`dpwitness.sql.Answer` shows it: one row per
    group, a key column's value as it is and each released column as a :class:`dpwitness.sql.Cell`
    (value and interval at ``alpha``); ``releases`` the release set (per aggregate: ε, δ, each noisy
    part's Δ, the relation); ``raw`` the answer's JSON as the service sent it."""

    table_name: str
    columns: tuple[str, ...]
    rows: tuple[tuple[Any, ...], ...]
    releases: tuple[dict[str, Any], ...]
    epsilon: float
    delta: float
    alpha: float
    notes: tuple[str, ...] = ()
    raw: dict[str, Any] = field(default_factory=dict, repr=False)

    @classmethod
    def from_dict(cls, table: str, answer: dict[str, Any]) -> SqlAnswer:
        """The answer of ``POST /v1/sql`` (its ``answer`` object) for ``table``."""
        rows = tuple(tuple(_cell(c) for c in row) for row in answer.get("rows", []))
        return cls(
            table_name=table,
            columns=tuple(answer.get("columns", [])),
            rows=rows,
            releases=tuple(answer.get("releases", [])),
            epsilon=float(answer.get("epsilon", 0.0)),
            delta=float(answer.get("delta", 0.0)),
            alpha=float(answer.get("alpha", 0.05)),
            notes=tuple(answer.get("notes", [])),
            raw=answer,
        )

    @property
    def table(self) -> list[dict[str, Any]]:
        """The rows as dicts, column → key value or :class:`~dpwitness.sql.Cell`."""
        return [dict(zip(self.columns, row, strict=True)) for row in self.rows]


def _cell(value: Any) -> Any:
    """A released cell ({value, low, high}, ±∞ as "inf"/"-inf", NaN as null) as a Cell; a key as it is."""
    if isinstance(value, dict) and set(value) == {"value", "low", "high"}:
        return Cell(*(_number(value[k]) for k in ("value", "low", "high")))
    return value


def _number(value: Any) -> float:
    if value is None:
        return float("nan")
    return float(value)  # float("inf") and float("-inf") read the strict-JSON strings


class Client:
    """Talks to one service as one analyst (``token``).

    ``url`` is the service's address (``http://127.0.0.1:8000``); ``timeout`` (seconds) bounds each
    request. Every query names its ``table`` and, for :meth:`query` and :meth:`preview`, its
    ``statistic`` ("count", "sum", "mean", "variance", "histogram", "quantile", …); ``epsilon`` is
    its ε (or give ``rho`` for an analyst whose total is ρ); ``bounds`` = [L, U] overrides the
    column's declared clamping bounds; ``by`` names a declared categorical column to group by, or
    lists several (a string is one column, as for a session). Parameters are checked as a session
    checks them: a :class:`~dpwitness.common.errors.ParameterError` naming the parameter, nothing sent.
    :meth:`budget` returns at most ``limit`` of the most recent spends.
    """

    def __init__(self, url: str, token: str, *, timeout: float = 30.0) -> None:
        self.url = url.rstrip("/")
        self._http = httpx.Client(base_url=self.url, headers={"Authorization": f"Bearer {token}"}, timeout=timeout)
        #: The last query's full answer (request id, table, spent, remaining).
        self.last: dict[str, Any] = {}

    def close(self) -> None:
        self._http.close()

    def __enter__(self) -> Client:
        return self

    def __exit__(self, *_: object) -> None:
        self.close()

    # --- metadata and budget --------------------------------------------------------------
    def tables(self) -> list[dict[str, Any]]:
        """The tables this analyst may query, with their public schema."""
        tables: list[dict[str, Any]] = self._call("GET", "/v1/tables")["tables"]
        return tables

    def schema(self, table: str) -> dict[str, Any]:
        return self._call("GET", f"/v1/tables/{table}")

    def budget(self, *, limit: int = 100) -> dict[str, Any]:
        """Total, spent and remaining ε, and the most recent spends."""
        return self._call("GET", "/v1/budget", params={"limit": limit})

    # --- queries ----------------------------------------------------------------------------
    def query(self, table: str, statistic: str, *, epsilon: float | None = None, **options: Any) -> Release:
        """Run one query (``column``, ``bounds``, ``by``, ``where``, ``q``, ``bins``, ``alpha``,
        ``mechanism``, ``delta``, ``rho`` as options: see the service's ``POST /v1/query``); its release."""
        self.last = self._call("POST", "/v1/query", json=_body(table, statistic, epsilon, options))
        return Release.from_dict(self.last["release"])

    def preview(self, table: str, statistic: str, *, epsilon: float | None = None, **options: Any) -> dict[str, Any]:
        """The scale and interval the query would have; spends nothing."""
        preview: dict[str, Any] = self._call("POST", "/v1/preview", json=_body(table, statistic, epsilon, options))["preview"]
        return preview

    def count(
        self, table: str, *, epsilon: float | None = None, by: str | Sequence[str] | None = None, **options: Any
    ) -> Release:
        """Rows (per declared key with ``by``); ``options`` as for :meth:`query`."""
        return self.query(table, "count", epsilon=epsilon, by=by, **options)

    def sum(
        self,
        table: str,
        column: str,
        *,
        epsilon: float | None = None,
        bounds: Sequence[float] | None = None,
        by: str | Sequence[str] | None = None,
        **options: Any,
    ) -> Release:
        """Σ clamp(column, L, U) (default: the declared bounds); ``options`` as for :meth:`query`."""
        return self.query(table, "sum", epsilon=epsilon, column=column, bounds=bounds, by=by, **options)

    def mean(
        self,
        table: str,
        column: str,
        *,
        epsilon: float | None = None,
        bounds: Sequence[float] | None = None,
        by: str | Sequence[str] | None = None,
        **options: Any,
    ) -> Release:
        """The mean of clamp(column, L, U); ``options`` as for :meth:`query`."""
        return self.query(table, "mean", epsilon=epsilon, column=column, bounds=bounds, by=by, **options)

    def variance(
        self,
        table: str,
        column: str,
        *,
        epsilon: float | None = None,
        bounds: Sequence[float] | None = None,
        by: str | Sequence[str] | None = None,
        **options: Any,
    ) -> Release:
        """The variance of clamp(column, L, U) (per declared key with ``by``); ``options`` as for :meth:`query`."""
        return self.query(table, "variance", epsilon=epsilon, column=column, bounds=bounds, by=by, **options)

    def histogram(self, table: str, column: str, *, epsilon: float | None = None, **options: Any) -> Release:
        """Counts per declared category of ``column``; ``options`` as for :meth:`query`."""
        return self.query(table, "histogram", epsilon=epsilon, column=column, **options)

    def sql(
        self,
        statement: str,
        *,
        epsilon: float | None = None,
        alpha: float | None = None,
        explain: bool = False,
        max_rows_per_key: int | tuple[int, int] | None = None,
        max_rows_per_unit: int | tuple[int, int] | None = None,
    ) -> SqlAnswer | dict[str, Any]:
        """Answer one SQL ``SELECT`` (its table named in its FROM; see docs/sql.md) through ``POST /v1/sql``.

        :param statement: the statement, a non-empty text of at most :data:`MAX_SQL` characters.
        :param epsilon: the statement's total ε (finite, > 0), split evenly over its aggregates
            without an ``EPSILON(aggregate, ε)`` of their own; None when each has one, or for
            ``EXPLAIN`` with target errors (``WITHIN(aggregate, error)``: the plan solves ε).
        :param alpha: each interval misses with probability ``alpha`` (in (0, 1)); None: the service's.
        :param explain: True returns the plan (each query, Δ, ε, expected error) and spends nothing.
        :param max_rows_per_key: a JOIN of two private tables: rows kept per join-key value, k or
            (k_left, k_right), whole numbers ≥ 1 (required for one; see docs/sql.md).
        :param max_rows_per_unit: a JOIN of two private tables: rows kept per privacy unit, m or
            (m_left, m_right); None: each table's ``max_contributions``.
        :returns: a :class:`SqlAnswer`; with ``explain`` (or ``EXPLAIN SELECT …``) the plan as a dict.

        A bad parameter raises :class:`~dpwitness.common.errors.ParameterError` before anything is
        sent; a refused statement :class:`ServiceError` (422, naming the construct and its position),
        a statement over the budget :class:`~dpwitness.common.errors.BudgetExceeded`: neither spends.
        """
        if not isinstance(statement, str) or not statement.strip():
            shown = type(statement).__name__ if not isinstance(statement, str) else statement
            raise ParameterError("statement", "a SQL SELECT statement, e.g. 'SELECT COUNT(*) FROM t WHERE age < 20'", shown)
        if len(statement) > MAX_SQL:
            raise ParameterError("statement", f"at most {MAX_SQL} characters", f"{len(statement)} characters")
        if not isinstance(explain, bool):
            raise ParameterError("explain", "True or False", explain)
        body: dict[str, Any] = {"sql": statement, "explain": explain}
        if epsilon is not None:
            body["epsilon"] = check_positive_finite("epsilon", epsilon)
        if alpha is not None:
            body["alpha"] = check_alpha(alpha)
        for parameter, bound in (("max_rows_per_key", max_rows_per_key), ("max_rows_per_unit", max_rows_per_unit)):
            if bound is not None:
                body[parameter] = list(check_per_side(parameter, bound))
        self.last = self._call("POST", "/v1/sql", json=body)
        if "plan" in self.last:
            plan: dict[str, Any] = self.last["plan"]
            return plan
        return SqlAnswer.from_dict(str(self.last.get("table", "")), self.last["answer"])

    def _call(self, method: str, path: str, **kwargs: Any) -> dict[str, Any]:
        response = self._http.request(method, path, **kwargs)
        try:
            payload = response.json()
        except ValueError:
            payload = {"detail": response.text[:200]}
        if response.status_code == 402:
            raise BudgetExceeded(str(payload.get("detail")))
        if response.status_code >= 400:
            raise ServiceError(response.status_code, str(payload.get("detail")))
        result: dict[str, Any] = payload
        return result


def _body(table: str, statistic: str, epsilon: float | None, options: dict[str, Any]) -> dict[str, Any]:
    """The request's JSON body, its parameters checked as :class:`~dpwitness.session.Session`
    checks them (a :class:`~dpwitness.common.errors.ParameterError` naming the parameter, before
    anything is sent): ε or ρ finite and > 0, one of them; ``by`` a column name or a sequence
    of them (a string is one column, as for a session); ``bounds`` two numbers."""
    body: dict[str, Any] = {"table": table, "statistic": statistic}
    options = {key: value for key, value in options.items() if value is not None}
    rho = options.get("rho")
    if epsilon is not None and rho is not None:
        raise ParameterError("rho", "given alone: a statistic's budget is epsilon= or rho=, not both", rho)
    if epsilon is None and rho is None:
        raise ParameterError("epsilon", "the ε of this statistic (or rho= on an account whose total is ρ)", None)
    if epsilon is not None:
        body["epsilon"] = check_positive_finite("epsilon", epsilon)
    if rho is not None:
        options["rho"] = check_positive_finite("rho", rho)
    if "delta" in options:
        delta = options["delta"]
        if isinstance(delta, bool) or not isinstance(delta, float | int) or not 0 < delta < 1:
            raise ParameterError("delta", "a number strictly between 0 and 1", delta)
    if "alpha" in options:
        options["alpha"] = check_alpha(options["alpha"])
    if "bounds" in options:
        low, high = check_pair("bounds", options["bounds"], "two numbers [L, U] with finite L < U")
        options["bounds"] = list(check_bounds(low, high))
    if "by" in options:
        options["by"] = _columns(options["by"])
    if "q" in options:
        quantiles = check_quantiles(options["q"])
        options["q"] = quantiles[0] if isinstance(options["q"], int | float) else list(quantiles)
    for key, value in options.items():
        body[key] = list(value) if isinstance(value, tuple) else value
    return body


def _columns(by: Any) -> list[str]:
    """``by`` as the list of column names the service takes: a string is one column (as a session reads it)."""
    names = [by] if isinstance(by, str) else by
    if isinstance(names, bytes) or not isinstance(names, Sequence) or not names:
        raise ParameterError("by", "a column name or a non-empty sequence of distinct column names", type(by).__name__)
    if not all(isinstance(n, str) and n for n in names) or len(set(names)) != len(names):
        raise ParameterError("by", "a column name or a sequence of distinct column names", by)
    return list(names)
