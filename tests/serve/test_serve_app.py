"""Where the service answers a DP query (issue 31, item 6): a shape the analyst has ready on the event
loop, awaiting the ledger's commit; anything else in a worker thread; ``POST /v1/query`` in front of
FastAPI's own middleware. In-process (FastAPI's TestClient), on a small table."""

from __future__ import annotations

import sqlite3
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import anyio.to_thread
import pytest
from fastapi.testclient import TestClient

from dpwitness.serve.app import create_app
from dpwitness.serve.config import load_config
from dpwitness.serve.ledger import LABEL_PREFIX
from dpwitness.serve.limits import Receive, Scope, Send
from dpwitness.serve.process import write_config

TOKEN = "alice-token-" + "a" * 24
HEADERS = {"Authorization": f"Bearer {TOKEN}"}
MEAN = {"table": "people", "statistic": "mean", "column": "salary", "epsilon": 0.1}


def config(folder: Path, **service: Any) -> Path:
    path = folder / "people.csv"
    path.write_text("dept,salary\n" + "".join(f"{'ABC'[i % 3]},{1000 + 7 * i}\n" for i in range(300)))
    table = {"path": str(path), "columns": {"dept": {"categories": ["A", "B", "C"]}, "salary": {"bounds": [0, 5000]}}}
    return write_config(
        folder / "service.toml",
        tables={"people": table},
        analysts={"alice": (TOKEN, 100.0)},
        service={"ledger": str(folder / "ledger.db"), "rate_per_second": 1000.0, "rate_burst": 1000, **service},
    )


@pytest.fixture
def handed_off(monkeypatch: pytest.MonkeyPatch) -> Iterator[list[str]]:
    """The names of the functions the service hands to a worker thread."""
    names: list[str] = []
    original = anyio.to_thread.run_sync

    async def counting(function: Any, *args: Any, **kwargs: Any) -> Any:
        names.append(getattr(function, "__name__", repr(function)))
        return await original(function, *args, **kwargs)

    monkeypatch.setattr(anyio.to_thread, "run_sync", counting)
    yield names


def spends(folder: Path, prefix: str) -> int:
    with sqlite3.connect(folder / "ledger.db") as db:
        (n,) = db.execute("SELECT COUNT(*) FROM spends WHERE label LIKE ?", (prefix + "%",)).fetchone()
    return int(n)


def test_a_ready_shape_is_answered_on_the_event_loop_after_its_spend_is_committed(tmp_path: Path, handed_off: list[str]) -> None:
    app = create_app(load_config(config(tmp_path)))
    service = app.state.service
    committed: list[int] = []
    with TestClient(app) as client:
        first = client.post("/v1/query", json=MEAN, headers=HEADERS)
        assert first.status_code == 200, first.text
        assert handed_off.count("answer_query") == 1  # a new shape: tables, plan check, aggregate in a thread
        engine = service.session(service.config.analysts["alice"], service.tables["people"]).engine
        inner = engine.aggregate

        def aggregate(handle: Any, query: Any, *, selection_key: Any) -> Any:
            committed.append(spends(tmp_path, LABEL_PREFIX.get()))  # this request's spend, durable already
            return inner(handle, query, selection_key=selection_key)

        engine.aggregate = aggregate
        answers = [client.post("/v1/query", json={**MEAN, "epsilon": 0.2}, headers=HEADERS) for _ in range(3)]
        assert [a.status_code for a in answers] == [200, 200, 200]
        assert handed_off.count("answer_query") == 2  # a new ε is a new shape (its noise tables); then none
        assert committed == [1, 1, 1]
        for answer in (first, *answers):
            assert spends(tmp_path, answer.json()["request_id"] + " ") == 1
        assert answers[-1].json()["spent"]["epsilon"] == pytest.approx(0.7)


def test_without_the_aggregate_cache_every_query_runs_in_a_worker_thread(tmp_path: Path, handed_off: list[str]) -> None:
    with TestClient(create_app(load_config(config(tmp_path, aggregate_cache=0)))) as client:
        for _ in range(3):
            assert client.post("/v1/query", json=MEAN, headers=HEADERS).status_code == 200
    assert handed_off.count("answer_query") == 3


def test_a_query_is_answered_in_front_of_the_framework_middleware(tmp_path: Path) -> None:
    """FastAPI's middleware stack (its error and telemetry layers, and any middleware added to the
    app) sees every request the framework answers, and no ``application/json`` query."""
    app = create_app(load_config(config(tmp_path)))
    seen: list[tuple[str, str]] = []

    class Counting:
        def __init__(self, app: Any) -> None:
            self.app = app

        async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
            if scope["type"] == "http":
                seen.append((scope["method"], scope["path"]))
            await self.app(scope, receive, send)

    app.add_middleware(Counting)
    with TestClient(app) as client:
        assert client.post("/v1/query", json=MEAN, headers=HEADERS).status_code == 200
        other = {**HEADERS, "content-type": "application/x+json"}
        count = b'{"table": "people", "statistic": "count", "epsilon": 0.1}'
        assert client.post("/v1/query", content=count, headers=other).status_code == 200
        assert client.get("/health").status_code == 200
        assert client.post("/v1/query", content=b"x" * 100_000, headers=HEADERS).status_code == 413  # the limit comes first
    assert seen == [("POST", "/v1/query"), ("GET", "/health")]
