"""The ASGI application: the page, its static assets (packaged, offline) and the JSON API."""

from __future__ import annotations

import threading
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from typing import Any

from fastapi import FastAPI, Request
from fastapi.exceptions import RequestValidationError
from fastapi.responses import HTMLResponse, JSONResponse
from fastapi.staticfiles import StaticFiles

from dpwitness import __version__
from dpwitness.common.encoding import dumps
from dpwitness.common.errors import BudgetExceeded, ParameterError
from dpwitness.explorer import compute, warm
from dpwitness.explorer.api import router
from dpwitness.explorer.strings import STATIC

#: What a query parameter of each type must be, in words.
_EXPECTED = {
    "float_parsing": "a number",
    "finite_number": "a finite number",
    "int_parsing": "a whole number",
    "int_from_float": "a whole number",
    "bool_parsing": "true or false",
    "missing": "given",
}


#: Seconds the background warm-up waits, so it does not compete with the first page load.
WARM_DELAY_S = 3.0


@asynccontextmanager
async def _lifespan(app: FastAPI) -> AsyncIterator[None]:
    """Before serving: compute the page's first answers; then warm the ε slider in the background."""
    warm.warm_defaults()
    stop = threading.Event()
    worker = threading.Thread(target=warm.warm_slider, args=(stop, WARM_DELAY_S), name="dpwitness-warm", daemon=True)
    worker.start()
    yield
    stop.set()


STYLESHEET_LINK = '<link rel="stylesheet" href="/static/explorer.css">'


LIMITS_MARK = "<!-- limits -->"
KATEX_LINK = '<link rel="stylesheet" href="/static/vendor/katex/katex.min.css">'
KATEX_FONTS = "/static/vendor/katex/fonts/"


def page_html() -> str:
    """index.html with its stylesheets inlined (the page's and KaTeX's, its font URLs made absolute:
    the first paint waits for one response, not three) and the server's parameter ranges embedded,
    so the page validates every control with the same ranges."""
    html = (STATIC / "index.html").read_text(encoding="utf-8")
    css = (STATIC / "explorer.css").read_text(encoding="utf-8")
    katex = (
        (STATIC / "vendor" / "katex" / "katex.min.css").read_text(encoding="utf-8").replace("url(fonts/", f"url({KATEX_FONTS}")
    )
    html = html.replace(KATEX_LINK, f"<style>\n{katex}</style>", 1)
    limits = dumps(compute.limits())
    html = html.replace(LIMITS_MARK, f'<script type="application/json" id="dpw-limits">{limits}</script>', 1)
    return html.replace(STYLESHEET_LINK, f"<style>\n{css}</style>", 1)


def create_app() -> FastAPI:
    """Build the explorer app. Everything it serves is inside the package."""
    app = FastAPI(
        title="dpwitness explorer",
        version=__version__,
        openapi_url="/api/openapi.json",
        docs_url=None,  # Swagger UI would load from a CDN; the page stays offline
        redoc_url=None,
        lifespan=_lifespan,
    )
    app.include_router(router)
    app.mount("/static", StaticFiles(directory=STATIC), name="static")

    @app.get("/", include_in_schema=False)
    def index() -> HTMLResponse:
        return HTMLResponse(page_html())

    @app.middleware("http")
    async def _step_aside(request: Request, call_next: Any) -> Any:
        warm.note_request()
        return await call_next(request)

    app.add_exception_handler(ParameterError, _parameter_error)
    app.add_exception_handler(BudgetExceeded, _budget_exceeded)
    app.add_exception_handler(RequestValidationError, _validation_error)
    app.add_exception_handler(ValueError, _value_error)
    return app


async def _parameter_error(request: Request, error: Exception) -> JSONResponse:
    assert isinstance(error, ParameterError)
    return JSONResponse(status_code=422, content={"detail": str(error), "parameter": error.parameter, "code": "parameter"})


async def _budget_exceeded(request: Request, error: Exception) -> JSONResponse:
    return JSONResponse(status_code=409, content={"detail": str(error), "parameter": "budget", "code": "budget"})


async def _validation_error(request: Request, error: Exception) -> JSONResponse:
    assert isinstance(error, RequestValidationError)
    problems: list[dict[str, Any]] = []
    for item in error.errors():
        location = item.get("loc", ())
        parameter = str(location[-1]) if location else "request"
        expected = _EXPECTED.get(str(item.get("type")), str(item.get("msg", "valid")))
        got = item.get("input")
        problems.append({"parameter": parameter, "detail": f"{parameter} must be {expected}; got {got!r}"})
    first = problems[0] if problems else {"parameter": "request", "detail": "invalid request"}
    return JSONResponse(
        status_code=422,
        content={"detail": first["detail"], "parameter": first["parameter"], "code": "parameter", "errors": problems},
    )


async def _value_error(request: Request, error: Exception) -> JSONResponse:
    return JSONResponse(status_code=400, content={"detail": str(error), "parameter": None, "code": "invalid"})
