"""The HTTP API (FastAPI): list tables, query, preview, own budget.

Guarantees, given the configuration's declared bounds and relation:

* every number derived from the data leaves through :class:`dpwitness.session.Session`, i.e.
  with Laplace noise calibrated to the query's Δ, after its ε was committed to the ledger;
* the ledger (:class:`GroupCommitLedger`) records a spend durably *before* its answer is sent,
  and checks the analyst's total (ε and δ, or ρ, stored in the ledger) inside the same SQLite
  write transaction, so concurrent requests never overspend and a crash loses no record of an
  answer that was sent;
* each request runs in its analyst's cache scope (:mod:`dpwitness.common.caching`): the sampler's
  calibrations and tables one analyst builds are never reused for another, so no analyst's
  response times depend on what another asked;
* an analyst sees only the tables listed for them and only their own budget and history;
* refusals (401, 402, 404, 413, 422, 429) are decided from the request and public metadata
  only and their messages contain no data values; nothing is spent for them.

Not covered: timing side channels of the aggregation itself (data-dependent, not
query-dependent), CPU contention between concurrent requests, and the server operator.
(No ``from __future__ import annotations`` here: FastAPI reads the local ``Annotated`` aliases.)
"""

import logging
import math
import os
import re
import threading
import uuid
from collections.abc import AsyncIterator, Awaitable, Callable, Iterator
from contextlib import asynccontextmanager, contextmanager
from dataclasses import dataclass, replace
from typing import Annotated, Any

import anyio.to_thread
from fastapi import Depends, FastAPI, Header, Query, Request
from fastapi.exceptions import RequestValidationError
from fastapi.responses import JSONResponse, Response
from pydantic import BaseModel, Field

from dpwitness import __version__
from dpwitness.common.caching import cache_scope
from dpwitness.common.encoding import json_value
from dpwitness.common.errors import BudgetExceeded, ParameterError
from dpwitness.mechanisms.release import Release
from dpwitness.privacy.budget import Budget, Ledger, guarantee, remaining
from dpwitness.query import queries
from dpwitness.serve.auth import TokenStore
from dpwitness.serve.cache import CachedAggregates
from dpwitness.serve.config import AnalystConfig, Limits, ServiceConfig
from dpwitness.serve.ledger import LABEL_PREFIX, GroupCommitLedger
from dpwitness.serve.limits import BodySizeLimit, RateLimiter, Receive, Scope, Send
from dpwitness.serve.policy import Policy
from dpwitness.serve.requests import QueryError, QueryRequest, TableRequest, compile_query
from dpwitness.serve.route import QueryRoute
from dpwitness.serve.sql import SqlRequest, answer_sql
from dpwitness.serve.tables import LoadedTable, load_table
from dpwitness.session import Session

log = logging.getLogger("dpwitness.serve")

#: ParameterError parameters that come from the request itself (safe to echo).
#: ``delta_budget``: the analyst's own total has no δ (or ρ) for a Gaussian release (their configuration, not data).
_REQUEST_PARAMETERS = {
    *("epsilon", "bounds", "column", "by", "keys", "alpha", "statistic", "categories", "split", "delta", "where"),
    *("mechanism", "delta_budget", "rho", "q", "bins", "joint"),
}


class TableList(BaseModel):
    tables: list[dict[str, Any]]


class Amount(BaseModel):
    """An amount of privacy; a field that does not apply to this budget is null."""

    epsilon: float | None
    delta: float | None
    rho: float | None

    @classmethod
    def of(cls, budget: Budget) -> "Amount":
        return cls(**budget.to_dict())


class BudgetEntry(BaseModel):
    label: str
    epsilon: float | None
    delta: float
    rho: float


class BudgetAnswer(BaseModel):
    analyst: str
    total: Amount = Field(description="(ε, δ) with rho null, or ρ (and δ) with epsilon null")
    spent: Amount = Field(description="what your releases satisfy together: the better of basic and zCDP composition")
    remaining: Amount = Field(
        description="the most one more release could spend (ε of a Laplace release, δ, ρ); on a ρ total only δ and ρ "
        "(epsilon null, as in total: a Laplace release of ε fits while ε²/2 ≤ ρ)",
    )
    records: int
    history: list[BudgetEntry] = Field(description="the most recent spends, oldest first")


class QueryAnswer(BaseModel):
    request_id: str = Field(description="also at the start of this spend's ledger label")
    table: str
    release: dict[str, Any] = Field(description="the noisy value, its ε, Δ, Laplace scale and interval")
    spent: Amount
    remaining: Amount


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
    def start(cls, config: ServiceConfig, ledger: Ledger | None = None, *, raise_budgets: bool = False) -> "Service":
        tables = {name: load_table(table) for name, table in config.tables.items()}
        tokens = TokenStore([a.token for a in config.analysts.values()])
        config.ledger.parent.mkdir(parents=True, exist_ok=True)
        store = ledger if ledger is not None else GroupCommitLedger(config.ledger)
        try:
            for analyst in config.analysts.values():
                open_account(store, analyst, raise_budgets=raise_budgets)
        except BaseException:
            if isinstance(store, GroupCommitLedger) and ledger is None:
                store.close()
            raise
        rate = RateLimiter(rate=config.limits.rate_per_second, burst=config.limits.rate_burst)
        return cls(config, tables, tokens, store, rate)

    def __post_init__(self) -> None:
        self._sessions: dict[tuple[str, str], Session] = {}
        self._sessions_lock = threading.Lock()
        self._seen: dict[str, set[tuple[Any, ...]]] = {}  # per analyst, like the caches
        self._first_locks: dict[str, threading.Lock] = {}

    @contextmanager
    def first_of_its_kind(self, analyst: str, compiled: TableRequest) -> Iterator[None]:
        """Run an analyst's first query of each shape (statistic, column, bounds, groups, ε) alone.

        Its first run builds the sampler's tables (tens of ms of CPU, then cached in the
        analyst's own cache scope); without this, N simultaneous first requests would each
        build the same tables. Keyed by analyst, like the caches, so that whether a shape is
        new says nothing about other analysts.
        """
        shape = compiled.shape
        with self._sessions_lock:
            seen = self._seen.setdefault(analyst, set())
            lock = self._first_locks.setdefault(analyst, threading.Lock())
        if shape in seen:
            yield
            return
        with lock:
            try:
                yield
            finally:
                if len(seen) > 10_000:  # shapes are cheap to relearn; memory is not free
                    seen.clear()
                seen.add(shape)

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
            table.frame,  # the total is the one stored in the ledger (opened at start)
            schema=table.schema,  # the config's declaration: defaults and checks as on every face
            neighbours=spec.neighbours.value,
            privacy_unit=spec.privacy_unit,
            max_contributions=spec.max_contributions,
            max_rows=spec.max_rows,
            ledger=self.ledger,
            account=analyst.name,
        )
        # The table never changes while the service runs: remember exact aggregates per shape
        # (fresh noise is still added to every answer; see dpwitness.serve.cache).
        session.engine = CachedAggregates(session.engine, capacity=self.config.limits.aggregate_cache)
        return session

    def budget(self, analyst: AnalystConfig, limit: int) -> BudgetAnswer:
        total, usage = self.ledger.total(analyst.name), self.ledger.usage(analyst.name)
        history = self.ledger.history(analyst.name)
        return BudgetAnswer(
            analyst=analyst.name,
            total=Amount.of(total),
            spent=Amount.of(guarantee(total, usage)),
            remaining=Amount.of(remaining(total, usage)),
            records=len(history),
            history=[
                BudgetEntry(label=h.label, epsilon=h.epsilon if math.isfinite(h.epsilon) else None, delta=h.delta, rho=h.rho)
                for h in history[-limit:]
            ],
        )

    def ready(self, analyst: str, compiled: TableRequest, session: Session, query: queries.Query) -> bool:
        """Whether ``analyst`` ran this shape before (:meth:`first_of_its_kind`: its noise tables are in
        the analyst's caches) and the session holds its checked plan and exact aggregate, so that
        answering it costs no engine work. Only this analyst's own state is consulted."""
        with self._sessions_lock:
            seen = compiled.shape in self._seen.get(analyst, ())
        return seen and isinstance(session.engine, CachedAggregates) and session.engine.holds(query)

    def standing(self, analyst: AnalystConfig) -> tuple[Amount, Amount]:
        """(spent, remaining) of the analyst's account, for an answer: as of the commit of its spend
        (the group-commit ledger keeps it, so no SQLite read), or read from the ledger."""
        if isinstance(self.ledger, GroupCommitLedger):
            total, usage = self.ledger.standing(analyst.name)
        else:
            total, usage = self.ledger.total(analyst.name), self.ledger.usage(analyst.name)
        return Amount.of(guarantee(total, usage)), Amount.of(remaining(total, usage))


def open_account(ledger: Ledger, analyst: AnalystConfig, *, raise_budgets: bool) -> Budget:
    """Create the analyst's ledger account with the configured total, or check it against the
    stored one; ``raise_budgets`` records a raise where the config's total is higher."""
    wanted = analyst.total
    try:
        ledger.open_account(analyst.name, wanted)
        return wanted
    except ParameterError as error:
        if raise_budgets:
            stored = ledger.total(analyst.name)
            try:
                return ledger.raise_budget(
                    analyst.name,
                    epsilon=None if wanted.is_zcdp else wanted.epsilon,
                    rho=wanted.rho if wanted.is_zcdp else None,
                    delta=wanted.delta,
                    label="dpwitness serve --raise-budgets",
                )
            except ParameterError as refused:
                field = {"delta_budget": "delta"}.get(refused.parameter, refused.parameter)
                raise ParameterError(
                    f"analysts.{analyst.name}.{field}", refused.expected + f" (stored: {stored})", getattr(analyst, field, None)
                ) from None
        field = {"delta_budget": "delta"}.get(error.parameter, error.parameter)
        raise ParameterError(
            f"analysts.{analyst.name}.{field}",
            re.sub(r"raise_budget\(\w+=…\)", "dpwitness serve --raise-budgets", error.expected),
            getattr(analyst, field, None),
        ) from None


class ServiceApp(FastAPI):
    """The service's FastAPI application, with ``front`` (when set) in front of the framework: every
    HTTP request goes to ``front`` (the body limit, then :class:`QueryRoute`), which answers
    ``POST /v1/query`` itself and hands the rest to :meth:`framework`. FastAPI's own layers (its
    server-error middleware, its telemetry check and middleware, run on every request) then run
    only for what the framework answers; lifespan events go straight to it."""

    front: Callable[[Scope, Receive, Send], Awaitable[None]] | None = None

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if self.front is not None and scope["type"] == "http":
            await self.front(scope, receive, send)
        else:
            await super().__call__(scope, receive, send)

    async def framework(self, scope: Scope, receive: Receive, send: Send) -> None:
        """FastAPI's own handling: its middleware, routes and exception handlers."""
        await super().__call__(scope, receive, send)


def create_app(config: ServiceConfig, *, ledger: Ledger | None = None, raise_budgets: bool = False) -> FastAPI:
    """The FastAPI application serving ``config`` (tables are loaded and ledger accounts opened now).

    Each analyst's total is stored in the ledger the first time; a config whose total differs
    from the stored one is refused, unless ``raise_budgets`` (``serve --raise-budgets``) raises
    the stored totals to the configured ones, each recorded as a ledger event.
    """
    service = Service.start(config, ledger, raise_budgets=raise_budgets)

    @asynccontextmanager
    async def lifespan(_: FastAPI) -> AsyncIterator[None]:
        yield
        if isinstance(service.ledger, GroupCommitLedger):
            service.ledger.close()

    app = ServiceApp(
        title="dpwitness serve",
        version=__version__,
        description="Differentially private aggregate queries under a per-analyst ε budget. Every answer is noised; "
        "every spend is in the ledger before the answer is sent.",
        lifespan=lifespan,
    )
    app.state.service = service

    # async: a few µs of hashing and a token bucket, run on the event loop (a sync dependency
    # would cost every request a second hand-off to a worker thread)
    async def authenticated(authorization: Annotated[str | None, Header(description="Bearer <token>")] = None) -> AnalystConfig:
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

    def refusal(error: QueryError) -> JSONResponse:
        headers = {"WWW-Authenticate": "Bearer"} if error.status == 401 else None
        return JSONResponse({"detail": error.message}, status_code=error.status, headers=headers)

    def invalid_request(errors: list[dict[str, Any]]) -> JSONResponse:
        # Pydantic's own report echoes the input; keep only where and what.
        problems = [{"loc": [str(p) for p in e.get("loc", ())], "msg": str(e.get("msg", "invalid"))} for e in errors]
        # "detail" is one line, like every other error of the service ("epsilon: Input should be greater than 0");
        # "errors" keeps each problem's location for programs.
        where = [".".join(p for p in problem["loc"] if p != "body") or "body" for problem in problems]
        detail = "; ".join(f"{place}: {problem['msg']}" for place, problem in zip(where, problems, strict=True))
        return JSONResponse({"detail": detail or "invalid request", "errors": problems}, status_code=422)

    def internal_error(_: Exception) -> JSONResponse:
        log.exception("unexpected error")
        return JSONResponse({"detail": "internal error; nothing about the data is reported"}, status_code=500)

    @app.exception_handler(QueryError)
    async def refused(_: Request, error: QueryError) -> JSONResponse:
        return refusal(error)

    @app.exception_handler(RequestValidationError)
    async def invalid(_: Request, error: RequestValidationError) -> JSONResponse:
        return invalid_request(list(error.errors()))

    @app.exception_handler(Exception)
    async def unexpected(_: Request, error: Exception) -> JSONResponse:
        return internal_error(error)

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

    @app.post(
        "/v1/query",
        summary="Run one DP query, spending its ε",
        response_model=QueryAnswer,
        responses={402: {"description": "budget exceeded"}},
    )
    def query(body: QueryRequest, analyst: Analyst) -> Response:
        return answer_query(analyst, *resolved(body, analyst))  # reached only when QueryRoute passes a request on

    def resolved(body: QueryRequest, analyst: AnalystConfig) -> tuple[TableRequest, Session, queries.Query]:
        """The request compiled, its analyst's session and its one Query (spends nothing)."""
        compiled = _compile(body, analyst)
        session = service.session(analyst, compiled.table)
        with cache_scope(analyst.name), _refusals():
            return compiled, session, resolve(session, compiled, config.limits)

    def answer_query(analyst: AnalystConfig, compiled: TableRequest, session: Session, query: queries.Query) -> Response:
        """The resolved query run (the spend committed first), in a worker thread: it waits for the commit."""
        with _labelled(compiled) as request_id, cache_scope(analyst.name), _refusals():
            with service.first_of_its_kind(analyst.name, compiled):
                release = session.run(query, **compiled.request.run_options())
            session.releases.clear()  # the service keeps no releases in memory
        return answered(analyst, compiled, request_id, release)

    async def answer_query_on_loop(body: QueryRequest, analyst: AnalystConfig) -> Response:
        """QueryRoute's handler. A shape this analyst's session has ready (its noise tables built, its
        plan checked, its exact aggregate remembered) costs tens of µs besides the spend, so it is
        answered on the event loop, awaiting the ledger's commit (no worker thread, no hand-off);
        anything else (a new shape, a privacy unit, no aggregate cache) in a worker thread, as
        ``answer_query``. Either way the spend is durable before the answer is built."""
        compiled, session, query = resolved(body, analyst)
        if not service.ready(analyst.name, compiled, session, query):
            return await anyio.to_thread.run_sync(answer_query, analyst, compiled, session, query)
        with _labelled(compiled) as request_id, cache_scope(analyst.name), _refusals():
            release = await session.run_async(query, **compiled.request.run_options())
            session.releases.clear()  # the service keeps no releases in memory
        return answered(analyst, compiled, request_id, release)

    def answered(analyst: AnalystConfig, compiled: TableRequest, request_id: str, release: Release) -> Response:
        spent, left = service.standing(analyst)
        answer = QueryAnswer(
            request_id=request_id,
            table=compiled.table.name,
            release=_public_release(release),
            spent=spent,
            remaining=left,
        )
        # Encoded once here (FastAPI would validate the model again against response_model first).
        return Response(answer.model_dump_json(), media_type="application/json")

    # POST /v1/query without the framework's middleware, routing and dependency solving (most of
    # a query's CPU under load); the same functions as above decide and answer. The body limit
    # comes first, for every request.
    route = QueryRoute(
        app.framework,
        authenticate=authenticated,
        answer=answer_query_on_loop,
        refused=refusal,
        invalid=invalid_request,
        unexpected=internal_error,
    )
    app.front = BodySizeLimit(route, max_bytes=config.limits.max_request_bytes)

    @app.post("/v1/preview", summary="The scale and interval a query would have; spends nothing")
    def preview(body: QueryRequest, analyst: Analyst) -> PreviewAnswer:
        compiled = _compile(body, analyst)
        session = service.session(analyst, compiled.table)
        try:
            with cache_scope(analyst.name):  # what others previewed never makes this one faster
                query = resolve(session, compiled, config.limits)
                result = session.preview(query, **compiled.request.run_options())
        except ParameterError as error:
            raise _parameter_refusal(error) from None
        return PreviewAnswer(table=compiled.table.name, preview=json_value(result.to_dict()))

    @app.post(
        "/v1/sql",
        summary="Answer one SQL SELECT (docs/sql.md), spending its ε",
        responses={402: {"description": "budget exceeded"}},
    )
    def sql(body: SqlRequest, analyst: Analyst) -> dict[str, Any]:
        request_id = uuid.uuid4().hex
        label = LABEL_PREFIX.set(f"{request_id} sql: ")
        try:
            with cache_scope(analyst.name):
                answer = answer_sql(
                    body,
                    analyst=analyst,
                    tables=service.tables,
                    limits=config.limits,
                    alpha=config.alpha,
                    session_for=lambda table: service.session(analyst, table),
                )
        finally:
            LABEL_PREFIX.reset(label)
        spent, left = service.standing(analyst)
        return {"request_id": request_id, **answer, "spent": spent.model_dump(), "remaining": left.model_dump()}

    @app.get("/v1/budget", summary="Your own total, spent and remaining ε and δ (or ρ), and your recent spends")
    def budget(analyst: Analyst, limit: Annotated[int, Query(ge=1, le=1000)] = 100) -> BudgetAnswer:
        return service.budget(analyst, limit)

    def _compile(body: QueryRequest, analyst: AnalystConfig) -> TableRequest:
        return compile_query(body, analyst=analyst, tables=service.tables, alpha=config.alpha)

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


def resolve(session: Session, compiled: TableRequest, limits: Limits) -> queries.Query:
    """The request as the session's one :class:`~dpwitness.query.queries.Query` (the table's declared
    schema fills the keys and bounds, the core derives Δ and checks every field), then this
    service's :class:`~dpwitness.serve.policy.Policy` on that query; spends nothing."""
    query = session.resolve(compiled.request)
    Policy.of(compiled.table, limits).check(query)
    return query


@contextmanager
def _labelled(compiled: TableRequest) -> Iterator[str]:
    """A new request id, and the ledger labels of the spends made meanwhile prefixed with it and the table."""
    request_id = uuid.uuid4().hex
    label = LABEL_PREFIX.set(f"{request_id} {compiled.table.name}: ")
    try:
        yield request_id
    finally:
        LABEL_PREFIX.reset(label)


@contextmanager
def _refusals() -> Iterator[None]:
    """A refused budget as 402, a refused parameter as 422 (:func:`_parameter_refusal`)."""
    try:
        yield
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
    safe: dict[str, Any] = json_value(data)
    return safe


def _key(key: Any) -> str:
    return " & ".join(map(str, key)) if isinstance(key, tuple) else str(key)
