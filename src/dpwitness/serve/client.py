"""A small Python client for ``dpwitness serve``.

>>> client = Client("http://127.0.0.1:8000", "alice-demo-token-CHANGE-ME")   # doctest: +SKIP
>>> client.mean("adult", "age", epsilon=0.1).value                           # doctest: +SKIP

Query methods return a :class:`dpwitness.Release` (``value``, ``interval``, ``epsilon``,
``sensitivity``…; grouped keys are tuples of the key columns' values, ``to_polars()`` gives
one row per key) and raise :class:`dpwitness.BudgetExceeded` when the budget would be
exceeded, :class:`ServiceError` for any other refusal. Every query method takes the
service's options where the statistic is asked: ``alpha``, ``mechanism``, ``delta``, and
``rho`` instead of ``epsilon`` on a ρ account.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import httpx

from dpwitness.common.errors import BudgetExceeded, ParameterError
from dpwitness.common.validation import check_alpha, check_positive_finite
from dpwitness.mechanisms.quantiles import check_quantiles
from dpwitness.mechanisms.release import Release
from dpwitness.privacy.neighbours import check_bounds
from dpwitness.query.queries import check_pair


class ServiceError(RuntimeError):
    """The service refused a request; ``status`` is the HTTP status, the message its reason."""

    def __init__(self, status: int, message: str) -> None:
        super().__init__(f"{status}: {message}")
        self.status = status
        self.message = message


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
        self, table: str, column: str, *, epsilon: float | None = None, bounds: Sequence[float] | None = None, **options: Any
    ) -> Release:
        """The variance of clamp(column, L, U); ``options`` as for :meth:`query`."""
        return self.query(table, "variance", epsilon=epsilon, column=column, bounds=bounds, **options)

    def histogram(self, table: str, column: str, *, epsilon: float | None = None, **options: Any) -> Release:
        """Counts per declared category of ``column``; ``options`` as for :meth:`query`."""
        return self.query(table, "histogram", epsilon=epsilon, column=column, **options)

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
