"""Request limits enforced before any spend: body size (ASGI middleware) and a per-analyst rate."""

from __future__ import annotations

import threading
import time
from collections.abc import Awaitable, Callable, MutableMapping
from typing import Any

from dpwitness.common.encoding import dumps

Scope = MutableMapping[str, Any]
Message = MutableMapping[str, Any]
Receive = Callable[[], Awaitable[Message]]
Send = Callable[[Message], Awaitable[None]]
ASGIApp = Callable[[Scope, Receive, Send], Awaitable[None]]


class RateLimiter:
    """A token bucket per analyst: ``rate`` requests per second on average, bursts of ``burst``."""

    def __init__(self, *, rate: float, burst: int) -> None:
        self.rate = rate
        self.burst = float(burst)
        self._buckets: dict[str, tuple[float, float]] = {}
        self._lock = threading.Lock()

    def allow(self, analyst: str, *, rate: float | None = None, burst: int | None = None) -> bool:
        """Take one token from ``analyst``'s bucket (``rate``/``burst`` override the defaults)."""
        rate = self.rate if rate is None else rate
        capacity = self.burst if burst is None else float(burst)
        now = time.monotonic()
        with self._lock:
            tokens, last = self._buckets.get(analyst, (capacity, now))
            tokens = min(capacity, tokens + (now - last) * rate)
            allowed = tokens >= 1.0
            self._buckets[analyst] = (tokens - 1.0 if allowed else tokens, now)
        return allowed


class BodySizeLimit:
    """Refuse (413) any request body larger than ``max_bytes``, declared or streamed.

    The body is read here (it is small by construction) and replayed to the application.
    """

    def __init__(self, app: ASGIApp, *, max_bytes: int) -> None:
        self.app = app
        self.max_bytes = max_bytes

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        for name, value in scope.get("headers", []):
            if name == b"content-length":
                try:
                    declared = int(value)
                except ValueError:
                    await _refuse(send, 400, "the Content-Length header is not a number")
                    return
                if declared > self.max_bytes:
                    await _refuse(send, 413, f"the request body is larger than {self.max_bytes} bytes")
                    return
        read = await read_body(receive, self.max_bytes)
        if read is None:
            await _refuse(send, 413, f"the request body is larger than {self.max_bytes} bytes")
            return
        await self.app(scope, read[1], send)


async def read_body(receive: Receive, max_bytes: float = float("inf")) -> tuple[bytes, Receive] | None:
    """The whole request body and a ``receive`` that replays it to the application; None as soon as
    the body passes ``max_bytes`` (the rest is not read).

    :param receive: the ASGI receive callable of the request.
    :param max_bytes: the largest body accepted.
    """
    chunks: list[bytes] = []
    size = 0
    while True:
        message = await receive()
        if message["type"] != "http.request":
            break
        chunk = message.get("body", b"")
        size += len(chunk)
        if size > max_bytes:
            return None
        chunks.append(chunk)
        if not message.get("more_body", False):
            break
    body = b"".join(chunks)
    replayed = False

    async def replay() -> Message:
        nonlocal replayed
        if not replayed:
            replayed = True
            return {"type": "http.request", "body": body, "more_body": False}
        return await receive()

    return body, replay


async def _refuse(send: Send, status: int, message: str) -> None:
    payload = dumps({"detail": message}).encode()
    await send(
        {
            "type": "http.response.start",
            "status": status,
            "headers": [(b"content-type", b"application/json"), (b"content-length", str(len(payload)).encode())],
        }
    )
    await send({"type": "http.response.body", "body": payload})
