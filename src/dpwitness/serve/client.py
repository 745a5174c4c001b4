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

from dpwitness.errors import BudgetExceeded
from dpwitness.release import Release


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
    column's declared clamping bounds; ``by`` lists declared categorical columns to group by.
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

    def count(self, table: str, *, epsilon: float | None = None, by: Sequence[str] | None = None, **options: Any) -> Release:
        """Rows (per declared key with ``by``); ``options`` as for :meth:`query`."""
        return self.query(table, "count", epsilon=epsilon, by=by, **options)

    def sum(
        self,
        table: str,
        column: str,
        *,
        epsilon: float | None = None,
        bounds: Sequence[float] | None = None,
        by: Sequence[str] | None = None,
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
        by: Sequence[str] | None = None,
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
    body: dict[str, Any] = {"table": table, "statistic": statistic}
    if epsilon is not None:
        body["epsilon"] = epsilon
    for key, value in options.items():
        if value is not None:
            body[key] = list(value) if isinstance(value, tuple) else value
    return body
