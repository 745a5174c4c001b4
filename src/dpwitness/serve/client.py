"""A small Python client for ``dpwitness serve``.

>>> client = Client("http://127.0.0.1:8000", "alice-demo-token-CHANGE-ME")   # doctest: +SKIP
>>> client.mean("adult", "age", epsilon=0.1)["value"]                        # doctest: +SKIP

Query methods return the release as a dict (``value``, ``epsilon``, ``sensitivity``,
``scale``, ``interval``, ...) and raise :class:`dpwitness.BudgetExceeded` when the budget
would be exceeded, :class:`ServiceError` for any other refusal.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import httpx

from dpwitness.errors import BudgetExceeded


class ServiceError(RuntimeError):
    """The service refused a request; ``status`` is the HTTP status, the message its reason."""

    def __init__(self, status: int, message: str) -> None:
        super().__init__(f"{status}: {message}")
        self.status = status
        self.message = message


class Client:
    """Talks to one service as one analyst (``token``)."""

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
    def query(self, table: str, statistic: str, *, epsilon: float, **options: Any) -> dict[str, Any]:
        """Run one query (``column``, ``bounds``, ``by``, ``alpha`` as options); return its release."""
        self.last = self._call("POST", "/v1/query", json=_body(table, statistic, epsilon, options))
        release: dict[str, Any] = self.last["release"]
        return release

    def preview(self, table: str, statistic: str, *, epsilon: float, **options: Any) -> dict[str, Any]:
        """The scale and interval the query would have; spends nothing."""
        preview: dict[str, Any] = self._call("POST", "/v1/preview", json=_body(table, statistic, epsilon, options))["preview"]
        return preview

    def count(self, table: str, *, epsilon: float, by: Sequence[str] | None = None) -> dict[str, Any]:
        return self.query(table, "count", epsilon=epsilon, by=by)

    def sum(
        self, table: str, column: str, *, epsilon: float, bounds: Sequence[float] | None = None, by: Sequence[str] | None = None
    ) -> dict[str, Any]:
        return self.query(table, "sum", epsilon=epsilon, column=column, bounds=bounds, by=by)

    def mean(
        self, table: str, column: str, *, epsilon: float, bounds: Sequence[float] | None = None, by: Sequence[str] | None = None
    ) -> dict[str, Any]:
        return self.query(table, "mean", epsilon=epsilon, column=column, bounds=bounds, by=by)

    def variance(self, table: str, column: str, *, epsilon: float, bounds: Sequence[float] | None = None) -> dict[str, Any]:
        return self.query(table, "variance", epsilon=epsilon, column=column, bounds=bounds)

    def histogram(self, table: str, column: str, *, epsilon: float) -> dict[str, Any]:
        return self.query(table, "histogram", epsilon=epsilon, column=column)

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


def _body(table: str, statistic: str, epsilon: float, options: dict[str, Any]) -> dict[str, Any]:
    body: dict[str, Any] = {"table": table, "statistic": statistic, "epsilon": epsilon}
    for key, value in options.items():
        if value is not None:
            body[key] = list(value) if isinstance(value, tuple) else value
    return body
