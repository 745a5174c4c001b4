"""The HTTP API (FastAPI): list tables, query, preview, own budget.

Guarantees, given the configuration's declared bounds and relation:

* every number derived from the data leaves through :class:`dpwitness.session.Session`, i.e.
  with Laplace noise calibrated to the query's Δ, after its ε was committed to the ledger;
* the ledger (:class:`GroupCommitLedger`) records a spend durably *before* its answer is sent,
  and checks the analyst's total inside the same SQLite write transaction, so concurrent
  requests never overspend and a crash loses no record of an answer that was sent;
* an analyst sees only the tables listed for them and only their own budget and history;
* refusals (401, 402, 404, 413, 422, 429) are decided from the request and public metadata
  only and their messages contain no data values; nothing is spent for them.

Not covered: timing side channels of the aggregation itself, and the server operator.
(No ``from __future__ import annotations`` here: FastAPI reads the local ``Annotated`` aliases.)
"""

import logging
import math
import os
import threading
import uuid
from collections.abc import AsyncIterator, Iterator
from contextlib import asynccontextmanager, contextmanager
from dataclasses import dataclass, replace
from typing import Annotated, Any

from fastapi import Depends, FastAPI, Header, Query, Request
from fastapi.exceptions import RequestValidationError
from fastapi.responses import JSONResponse
from pydantic import BaseModel, Field

from dpwitness import __version__
from dpwitness.budget import Ledger
from dpwitness.errors import BudgetExceeded, ParameterError
from dpwitness.release import Release
from dpwitness.serve.auth import TokenStore
from dpwitness.serve.cache import CachedAggregates
from dpwitness.serve.config import AnalystConfig, ServiceConfig
from dpwitness.serve.ledger import LABEL_PREFIX, GroupCommitLedger
from dpwitness.serve.limits import BodySizeLimit, RateLimiter
from dpwitness.serve.requests import CompiledQuery, QueryError, QueryRequest, compile_query
from dpwitness.serve.tables import LoadedTable, load_table
from dpwitness.session import Session

log = logging.getLogger("dpwitness.serve")

#: ParameterError parameters that come from the request itself (safe to echo).
_REQUEST_PARAMETERS = {"epsilon", "bounds", "column", "by", "keys", "alpha", "statistic", "categories", "split", "delta"}


class TableList(BaseModel):
    tables: list[dict[str, Any]]


class BudgetEntry(BaseModel):
    label: str
    epsilon: float


class Budget(BaseModel):
    analyst: str
    total: float
    spent: float
    remaining: float
    records: int
    history: list[BudgetEntry] = Field(description="the most recent spends, oldest first")


class QueryAnswer(BaseModel):
    request_id: str = Field(description="also at the start of this spend's ledger label")
    table: str
    release: dict[str, Any] = Field(description="the noisy value, its ε, Δ, Laplace scale and interval")
    spent: float
    remaining: float


class PreviewAnswer(BaseModel):
    table: str
    preview: dict[str, Any]


@dataclass
class Service:
    """Everything a request needs: config, tables, tokens, ledger, limits."""

    config: ServiceConfig
    tables: dict[str, LoadedTable]
    tokens: TokenStore
    ledger: Ledger
    rate: RateLimiter

    @classmethod
    def start(cls, config: ServiceConfig, ledger: Ledger | None = None) -> "Service":
        tables = {name: load_table(table) for name, table in config.tables.items()}
        tokens = TokenStore([a.token for a in config.analysts.values()])
        config.ledger.parent.mkdir(parents=True, exist_ok=True)
        store = ledger if ledger is not None else GroupCommitLedger(config.ledger)
        rate = RateLimiter(rate=config.limits.rate_per_second, burst=config.limits.rate_burst)
        return cls(config, tables, tokens, store, rate)

    def __post_init__(self) -> None:
        self._sessions: dict[tuple[str, str], Session] = {}
        self._sessions_lock = threading.Lock()
        self._seen: set[tuple[Any, ...]] = set()
        self._first_lock = threading.Lock()

    @contextmanager
    def first_of_its_kind(self, compiled: CompiledQuery) -> Iterator[None]:
        """Run the first query of each shape (statistic, column, bounds, groups, ε) alone.

        Its first run builds the sampler's tables (≈ 0.1-0.4 s of CPU, cached afterwards);
        without this, N simultaneous first requests would each build the same tables.
        """
        shape = (compiled.table.name, compiled.statistic, compiled.column, compiled.bounds, compiled.by, compiled.epsilon)
        if shape in self._seen:
            yield
            return
        with self._first_lock:
            try:
                yield
            finally:
                if len(self._seen) > 100_000:  # shapes are cheap to relearn; memory is not free
                    self._seen.clear()
                self._seen.add(shape)

    def session(self, analyst: AnalystConfig, table: LoadedTable) -> Session:
        """The analyst's session on ``table`` (one per pair; its budget lives in the ledger).

        Sessions are shared by the analyst's concurrent requests: a query only reads the
        session's cached schema and calls the ledger, which serialises spends itself.
        """
        key = (analyst.name, table.name)
        with self._sessions_lock:
            session = self._sessions.get(key)
            if session is None:
                session = self._sessions[key] = self._new_session(analyst, table)
        return session

    def _new_session(self, analyst: AnalystConfig, table: LoadedTable) -> Session:
        spec = table.config
        session = Session(
            table.frame,
            epsilon=analyst.epsilon,
            neighbours=spec.neighbours.value,
            privacy_unit=spec.privacy_unit,
            max_contributions=spec.max_contributions,
            ledger=self.ledger,
            account=analyst.name,
        )
        # The table never changes while the service runs: remember exact aggregates per shape
        # (fresh noise is still added to every answer; see dpwitness.serve.cache).
        session.engine = CachedAggregates(session.engine, capacity=self.config.limits.aggregate_cache)
        return session

    def budget(self, analyst: AnalystConfig, limit: int) -> Budget:
        spent = self.ledger.spent(analyst.name)
        history = self.ledger.history(analyst.name)
        return Budget(
            analyst=analyst.name,
            total=analyst.epsilon,
            spent=spent,
            remaining=max(analyst.epsilon - spent, 0.0),
            records=len(history),
            history=[BudgetEntry(label=h.label, epsilon=h.epsilon) for h in history[-limit:]],
        )


def create_app(config: ServiceConfig, *, ledger: Ledger | None = None) -> FastAPI:
    """The FastAPI application serving ``config`` (tables are loaded now)."""
    service = Service.start(config, ledger)

    @asynccontextmanager
    async def lifespan(_: FastAPI) -> AsyncIterator[None]:
        yield
        if isinstance(service.ledger, GroupCommitLedger):
            service.ledger.close()

    app = FastAPI(
        title="dpwitness serve",
        version=__version__,
        description="Differentially private aggregate queries under a per-analyst ε budget. Every answer is noised; "
        "every spend is in the ledger before the answer is sent.",
        lifespan=lifespan,
    )
    app.state.service = service
    app.add_middleware(BodySizeLimit, max_bytes=config.limits.max_request_bytes)

    def authenticated(authorization: Annotated[str | None, Header(description="Bearer <token>")] = None) -> AnalystConfig:
        token = None
        if authorization and authorization[:7].lower() == "bearer ":
            token = authorization[7:].strip()
        name = service.tokens.analyst_for(token)
        if name is None:
            raise QueryError(401, "a valid token is required: send 'Authorization: Bearer <token>'")
        analyst = config.analysts[name]
        if not service.rate.allow(name, rate=analyst.rate_per_second, burst=analyst.rate_burst):
            rate = analyst.rate_per_second or config.limits.rate_per_second
            raise QueryError(429, f"rate limit: {rate:g} requests per second on average; retry later")
        return analyst

    Analyst = Annotated[AnalystConfig, Depends(authenticated)]

    @app.exception_handler(QueryError)
    async def refused(_: Request, error: QueryError) -> JSONResponse:
        headers = {"WWW-Authenticate": "Bearer"} if error.status == 401 else None
        return JSONResponse({"detail": error.message}, status_code=error.status, headers=headers)

    @app.exception_handler(RequestValidationError)
    async def invalid(_: Request, error: RequestValidationError) -> JSONResponse:
        # Pydantic's own report echoes the input; keep only where and what.
        problems = [{"loc": [str(p) for p in e.get("loc", ())], "msg": str(e.get("msg", "invalid"))} for e in error.errors()]
        return JSONResponse({"detail": problems}, status_code=422)

    @app.exception_handler(Exception)
    async def unexpected(_: Request, error: Exception) -> JSONResponse:
        log.exception("unexpected error")
        return JSONResponse({"detail": "internal error; nothing about the data is reported"}, status_code=500)

    @app.get("/health", summary="Liveness (no authentication, no data)")
    def health() -> dict[str, str]:
        return {"status": "ok"}

    @app.get("/v1/tables", summary="Tables you may query and their public schema (never values)")
    def tables(analyst: Analyst) -> TableList:
        return TableList(tables=[t.config.public() for name, t in service.tables.items() if analyst.may_read(name)])

    @app.get("/v1/tables/{table}", summary="One table's public schema")
    def table(table: str, analyst: Analyst) -> dict[str, Any]:
        found = service.tables.get(table)
        if found is None or not analyst.may_read(table):
            raise QueryError(404, f"no table named {table!r} is available to you (see GET /v1/tables)")
        schema: dict[str, Any] = found.config.public()
        return schema

    @app.post("/v1/query", summary="Run one DP query, spending its ε", responses={402: {"description": "budget exceeded"}})
    def query(body: QueryRequest, analyst: Analyst) -> QueryAnswer:
        compiled = _compile(body, analyst)
        request_id = uuid.uuid4().hex
        label = LABEL_PREFIX.set(f"{request_id} {compiled.table.name}: ")
        try:
            session = service.session(analyst, compiled.table)
            with service.first_of_its_kind(compiled):
                release = _run(session, compiled)
        finally:
            LABEL_PREFIX.reset(label)
        spent = service.ledger.spent(analyst.name)
        return QueryAnswer(
            request_id=request_id,
            table=compiled.table.name,
            release=_public_release(release),
            spent=spent,
            remaining=max(analyst.epsilon - spent, 0.0),
        )

    @app.post("/v1/preview", summary="The scale and interval a query would have; spends nothing")
    def preview(body: QueryRequest, analyst: Analyst) -> PreviewAnswer:
        compiled = _compile(body, analyst)
        session = service.session(analyst, compiled.table)
        try:
            result = session.preview(compiled.statistic, compiled.column, alpha=compiled.alpha, **compiled.session_options())
        except ParameterError as error:
            raise _parameter_refusal(error) from None
        return PreviewAnswer(table=compiled.table.name, preview=_json_safe(result.to_dict()))

    @app.get("/v1/budget", summary="Your own total, spent and remaining ε, and your recent spends")
    def budget(analyst: Analyst, limit: Annotated[int, Query(ge=1, le=1000)] = 100) -> Budget:
        return service.budget(analyst, limit)

    def _compile(body: QueryRequest, analyst: AnalystConfig) -> CompiledQuery:
        return compile_query(body, analyst=analyst, tables=service.tables, limits=config.limits, alpha=config.alpha)

    return app


CONFIG_VARIABLE = "DPWITNESS_SERVE_CONFIG"
WORKERS_VARIABLE = "DPWITNESS_SERVE_WORKERS"


def app_from_environment() -> FastAPI:
    """The app for one of ``--workers N`` processes (uvicorn factory): the config named by
    ``$DPWITNESS_SERVE_CONFIG``, each worker taking 1/N of the per-analyst rate limit.

    The workers share the ledger file; SQLite's write lock makes their spends serial, so the
    budget guarantee is the same as with one process.
    """
    from dpwitness.serve.config import load_config

    config = load_config(os.environ[CONFIG_VARIABLE])
    workers = max(int(os.environ.get(WORKERS_VARIABLE, "1")), 1)
    return create_app(scale_rate_limits(config, workers))


def scale_rate_limits(config: ServiceConfig, workers: int) -> ServiceConfig:
    """Each of ``workers`` processes limits analysts to 1/workers of the configured rate."""
    if workers == 1:
        return config
    limits = replace(
        config.limits,
        rate_per_second=config.limits.rate_per_second / workers,
        rate_burst=max(1, math.ceil(config.limits.rate_burst / workers)),
    )
    analysts = {
        name: replace(
            a,
            rate_per_second=None if a.rate_per_second is None else a.rate_per_second / workers,
            rate_burst=None if a.rate_burst is None else max(1, math.ceil(a.rate_burst / workers)),
        )
        for name, a in config.analysts.items()
    }
    return replace(config, limits=limits, analysts=analysts)


def _run(session: Session, compiled: CompiledQuery) -> Release:
    try:
        query = session.query(compiled.statistic, compiled.column, **compiled.session_options())
        release = session.run(query, alpha=compiled.alpha)
        session.releases.clear()  # the service keeps no releases in memory
        return release
    except BudgetExceeded as error:
        raise QueryError(402, str(error)) from None
    except ParameterError as error:
        raise _parameter_refusal(error) from None


def _parameter_refusal(error: ParameterError) -> QueryError:
    if error.parameter in _REQUEST_PARAMETERS:
        return QueryError(422, str(error))
    return QueryError(422, f"the query could not be answered ({error.parameter} was not acceptable)")


def _public_release(release: Release) -> dict[str, Any]:
    data: dict[str, Any] = release.to_dict()
    for key in ("seed", "seeded"):
        data.pop(key, None)
    if isinstance(release.value, dict):
        data["value"] = {_key(k): v for k, v in release.value.items()}
        interval = release.interval
        assert isinstance(interval, dict)
        data["interval"] = {_key(k): list(v) for k, v in interval.items()}
    safe: dict[str, Any] = _json_safe(data)
    return safe


def _key(key: Any) -> str:
    return " & ".join(map(str, key)) if isinstance(key, tuple) else str(key)


def _json_safe(value: Any) -> Any:
    """NaN and ±∞ are not JSON: they become null."""
    if isinstance(value, float):
        return value if math.isfinite(value) else None
    if isinstance(value, dict):
        return {str(k): _json_safe(v) for k, v in value.items()}
    if isinstance(value, list | tuple):
        return [_json_safe(v) for v in value]
    return value
