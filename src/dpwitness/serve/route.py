"""``POST /v1/query`` from ASGI straight to the service's query handler (issue 31, item 6).

Under load most of a query's server CPU went to the web framework around the handler, not to
the handler: FastAPI's router, its dependency solving and body validation, Starlette's request
objects and exception middleware (≈ 55% of the server's interpreter time, against ≈ 10% for
the handler itself, in a py-spy profile; docs/serve.md#benchmark). :class:`QueryRoute` takes
the common case, a JSON object posted to ``/v1/query``, and calls the same functions the
framework would: the same authentication and rate limit, the same :class:`QueryRequest` model,
the same handler, and the same refusal responses. So what is
refused, with which status and message, does not change, and nothing is spent for a refusal.

Everything else (other paths and methods, a body that is not a JSON object, another content
type) is passed to the FastAPI application untouched, with the body replayed, and answered
there as before. :class:`~dpwitness.serve.limits.BodySizeLimit` runs outside this route.
"""

from __future__ import annotations

import json
from collections.abc import Awaitable, Callable
from typing import Any

from pydantic import ValidationError
from starlette.responses import Response

from dpwitness.serve.config import AnalystConfig
from dpwitness.serve.limits import ASGIApp, Receive, Scope, Send, read_body
from dpwitness.serve.requests import QueryError, QueryRequest

PATH = "/v1/query"


class QueryRoute:
    """ASGI middleware answering ``POST /v1/query`` with a JSON object body itself.

    ``authenticate`` maps the Authorization header to the analyst (raising :class:`QueryError`:
    401 or 429); ``answer`` runs the query (awaiting the ledger's commit, on the event loop or
    in a worker thread: see ``dpwitness.serve.app``); ``refused``, ``invalid`` and ``unexpected``
    build the service's responses for a :class:`QueryError`, a list of validation problems and
    any other exception.
    """

    def __init__(
        self,
        app: ASGIApp,
        *,
        authenticate: Callable[[str | None], Awaitable[AnalystConfig]],
        answer: Callable[[QueryRequest, AnalystConfig], Awaitable[Response]],
        refused: Callable[[QueryError], Response],
        invalid: Callable[[list[dict[str, Any]]], Response],
        unexpected: Callable[[Exception], Response],
    ) -> None:
        self.app = app
        self.authenticate = authenticate
        self.answer = answer
        self.refused = refused
        self.invalid = invalid
        self.unexpected = unexpected

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http" or scope["method"] != "POST" or scope["path"] != PATH:
            await self.app(scope, receive, send)
            return
        authorization: str | None = None
        content_type: bytes | None = None
        for name, value in scope["headers"]:  # the first of each, as the framework reads them
            if name == b"authorization" and authorization is None:
                authorization = value.decode("latin-1")
            elif name == b"content-type" and content_type is None:
                content_type = value
        read = await read_body(receive)  # no cap here: the size limit sits outside this route
        assert read is not None
        body, replay = read
        json_body = content_type is not None and content_type.split(b";", 1)[0].strip().lower() == b"application/json"
        document = _json_object(body) if json_body else None
        if document is None:  # the framework answers (and refuses) everything unusual, as before
            await self.app(scope, replay, send)
            return
        response = await self._respond(authorization, document)
        await response(scope, replay, send)

    async def _respond(self, authorization: str | None, document: dict[str, Any]) -> Response:
        try:
            analyst = await self.authenticate(authorization)  # before the body's fields, as in FastAPI
            try:
                request = QueryRequest.model_validate(document)
            except ValidationError as error:
                return self.invalid([{**problem, "loc": ("body", *problem["loc"])} for problem in error.errors()])
            return await self.answer(request, analyst)
        except QueryError as error:
            return self.refused(error)
        except Exception as error:  # the service's 500, which says nothing about the data
            return self.unexpected(error)


def _json_object(body: bytes) -> dict[str, Any] | None:
    try:
        document = json.loads(body)
    except ValueError:
        return None
    return document if isinstance(document, dict) else None
