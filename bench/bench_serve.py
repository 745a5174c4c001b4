"""Load test of ``dpwitness serve`` on the Adult table, on loopback.

A real server subprocess (``python -m dpwitness serve``) on 127.0.0.1; ``--clients`` concurrent
analysts (one token and one keep-alive connection each, asyncio) send a mix of DP queries for ``--seconds``.  Half-way
through (``--kill``) the server is killed with SIGKILL and restarted on the same ledger, and
the load continues.  Afterwards the ledger is read directly:

* lost records: answers the clients received whose request id is not in the ledger (target 0);
* overspend: any analyst whose ledger total exceeds their budget (target 0).  One extra
  "tight" client has a budget for exactly ``--tight-queries`` queries and keeps asking.

Targets (issue 6): ≥ 500 DP queries/s sustained, p99 ≤ 100 ms, zero overspend, zero lost records.

    python bench/bench_serve.py                 # 60 s, 32 clients, kill -9 at 30 s
    python bench/bench_serve.py --seconds 10    # a quick check
    python bench/bench_serve.py --no-kill       # throughput only
    python bench/bench_serve.py --asgi          # the application's CPU per query, in-process
"""

from __future__ import annotations

import argparse
import asyncio
import json
import math
import os
import shutil
import sqlite3
import statistics
import tempfile
import threading
import time
import tomllib
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import httpx

from dpwitness.common.data import adult_path
from dpwitness.serve.process import ServerProcess, write_config

EXAMPLE = Path(__file__).resolve().parents[1] / "examples" / "service.toml"
QUERY_EPSILON = 0.01
MIX: list[dict[str, Any]] = [
    {"statistic": "count"},
    {"statistic": "mean", "column": "age"},
    {"statistic": "sum", "column": "hours_per_week"},
    {"statistic": "histogram", "column": "education"},
    {"statistic": "count", "by": ["sex"]},
    {"statistic": "mean", "column": "hours_per_week", "by": ["sex", "income"]},
]


@dataclass
class Tally:
    latencies: list[float] = field(default_factory=list)
    answered: list[tuple[str, str, float]] = field(default_factory=list)  # (analyst, request id, ε)
    refused_budget: int = 0
    failed: int = 0
    per_second: dict[int, int] = field(default_factory=dict)


class Connection:
    """A minimal keep-alive HTTP/1.1 client on asyncio streams (the load generator must be cheaper
    than the server it measures; httpx costs about 1 ms of CPU per request here)."""

    def __init__(self, url: str, token: str) -> None:
        host, port = url.removeprefix("http://").split(":")
        self.host, self.port = host, int(port)
        self.token = token
        self.reader: asyncio.StreamReader | None = None
        self.writer: asyncio.StreamWriter | None = None

    async def post(self, path: str, body: dict[str, Any]) -> tuple[int, dict[str, Any]]:
        if self.writer is None:
            self.reader, self.writer = await asyncio.open_connection(self.host, self.port)
        assert self.reader is not None
        payload = json.dumps(body).encode()
        head = (
            f"POST {path} HTTP/1.1\r\nHost: {self.host}\r\nAuthorization: Bearer {self.token}\r\n"
            f"Content-Type: application/json\r\nContent-Length: {len(payload)}\r\n\r\n"
        ).encode()
        try:
            self.writer.write(head + payload)
            await self.writer.drain()
            status_line = await self.reader.readline()
            length = 0
            while True:
                line = await self.reader.readline()
                if line in (b"\r\n", b""):
                    break
                name, _, value = line.decode("latin-1").partition(":")
                if name.lower() == "content-length":
                    length = int(value)
            data = await self.reader.readexactly(length)
            status = int(status_line.split()[1])
        except (OSError, ValueError, IndexError, asyncio.IncompleteReadError):
            self.close()
            raise ConnectionError from None
        return status, json.loads(data) if data else {}

    def close(self) -> None:
        if self.writer is not None:
            self.writer.close()
        self.reader = self.writer = None


async def client_loop(url: list[str], analyst: str, token: str, stop_at: float, start: float, tally: Tally, offset: int) -> None:
    connection = Connection(url[0], token)
    i = offset
    while time.perf_counter() < stop_at:
        body = {"table": "adult", "epsilon": QUERY_EPSILON, **MIX[i % len(MIX)]}
        i += 1
        sent = time.perf_counter()
        try:
            status, answer = await connection.post("/v1/query", body)
        except ConnectionError:
            tally.failed += 1
            await asyncio.sleep(0.05)
            continue
        done = time.perf_counter()
        if status == 200:
            tally.latencies.append(done - sent)
            tally.answered.append((analyst, answer["request_id"], answer["release"]["epsilon"]))
            second = int(done - start)
            tally.per_second[second] = tally.per_second.get(second, 0) + 1
        elif status == 402:
            tally.refused_budget += 1
        else:
            tally.failed += 1
    connection.close()


def killer(server: ServerProcess, at: float, url: list[str], events: dict[str, float]) -> None:
    time.sleep(max(at - time.perf_counter(), 0))
    events["cpu_before_kill"] = _cpu_seconds(server.process.pid if server.process else 0)
    events["killed"] = time.perf_counter()
    server.kill()
    server.start()
    events["restarted"] = time.perf_counter()


def verify(ledger: Path, tally: Tally, budgets: dict[str, float]) -> dict[str, Any]:
    with sqlite3.connect(ledger) as db:
        rows = db.execute("SELECT account, label, epsilon FROM spends").fetchall()
    recorded = {label.split(" ", 1)[0] for _, label, _ in rows}
    totals: dict[str, float] = {}
    for account, _, epsilon in rows:
        totals[account] = totals.get(account, 0.0) + epsilon
    lost = [rid for _, rid, _ in tally.answered if rid not in recorded]
    overspent = {a: t for a, t in totals.items() if t > budgets[a] * (1 + 1e-9)}
    return {
        "ledger_records": len(rows),
        "answers_returned": len(tally.answered),
        "lost_records": len(lost),
        "records_without_answer": len(rows) - (len(tally.answered) - len(lost)),
        "overspent_analysts": overspent,
        "tight_analyst_spent": totals.get("tight", 0.0),
        "tight_analyst_budget": budgets["tight"],
    }


async def run(args: argparse.Namespace) -> dict[str, Any]:
    data = adult_path()
    if data is None:
        raise SystemExit("the Adult table (../shared/data/adult.csv) is needed for this benchmark")
    folder = Path(tempfile.mkdtemp(prefix="bench-serve-"))
    tables = {"adult": tomllib.loads(EXAMPLE.read_text())["tables"]["adult"]}
    tables["adult"]["path"] = str(data)
    analysts = {f"analyst{i}": (f"token-{i}-{'x' * 32}", 1e6) for i in range(args.clients)}
    analysts["tight"] = ("token-tight-" + "y" * 32, args.tight_queries * QUERY_EPSILON)
    budgets = {name: eps for name, (_, eps) in analysts.items()}
    ledger = folder / "ledger.db"
    config = write_config(
        folder / "service.toml",
        tables=tables,
        analysts=analysts,
        service={
            "ledger": str(ledger),
            "rate_per_second": 1e6,
            "rate_burst": 1_000_000,
            "aggregate_cache": args.aggregate_cache,
        },
    )
    env = {"POLARS_MAX_THREADS": str(args.polars_threads)} if args.polars_threads else {}
    server = ServerProcess(config, log=folder / "server.log", env=env, workers=args.workers).start()
    url = [server.url]
    tally = Tally()
    events: dict[str, float] = {}
    try:
        # warm up: each analyst's first use of each (Δ, ε) builds the sampler's tables in that
        # analyst's own cache scope (no analyst's timings depend on another's: docs/serve.md)
        warm_start = time.perf_counter()
        for token, _ in analysts.values():
            async with httpx.AsyncClient(headers={"Authorization": f"Bearer {token}"}, timeout=120) as http:
                for body in MIX:
                    await http.post(f"{server.url}/v1/preview", json={"table": "adult", "epsilon": QUERY_EPSILON, **body})
        events["warm_up_s"] = time.perf_counter() - warm_start
        cpu_at_start = _cpu_seconds(server.process.pid if server.process else 0)
        loadgen_at_start = time.process_time()
        start = time.perf_counter()
        stop_at = start + args.seconds
        if args.kill:
            threading.Thread(target=killer, args=(server, start + args.seconds / 2, url, events), daemon=True).start()
        tasks = [client_loop(url, name, token, stop_at, start, tally, i) for i, (name, (token, _)) in enumerate(analysts.items())]
        await asyncio.gather(*tasks)
        elapsed = time.perf_counter() - start
        server_cpu = _cpu_seconds(server.process.pid if server.process else 0) + events.get("cpu_before_kill", 0.0) - cpu_at_start
        loadgen_cpu = time.process_time() - loadgen_at_start
    finally:
        server.stop()
    verified = verify(ledger, tally, budgets)
    if not args.keep:
        shutil.rmtree(folder, ignore_errors=True)
    latencies = sorted(tally.latencies)
    outage = events.get("restarted", 0.0) - events.get("killed", 0.0)
    report = {
        "clients": args.clients + 1,
        "workers": args.workers,
        "aggregate_cache": args.aggregate_cache,
        "seconds": round(elapsed, 2),
        "answered": len(latencies),
        "queries_per_second": round(len(latencies) / elapsed, 1),
        "queries_per_second_while_up": round(len(latencies) / (elapsed - outage), 1),
        "median_per_second": statistics.median(tally.per_second.values()) if tally.per_second else 0,
        "p50_ms": round(1000 * latencies[len(latencies) // 2], 2) if latencies else None,
        "p99_ms": round(1000 * latencies[min(len(latencies) - 1, math.ceil(0.99 * len(latencies)) - 1)], 2)
        if latencies
        else None,
        "server_cpu_s": round(server_cpu, 1),
        "server_cpu_ms_per_query": round(1000 * server_cpu / max(len(latencies), 1), 2),
        "loadgen_cpu_ms_per_query": round(1000 * loadgen_cpu / max(len(latencies), 1), 2),
        "load_average_1min": round(os.getloadavg()[0], 1),
        "refused_budget": tally.refused_budget,
        "connection_errors_or_5xx": tally.failed,
        "warm_up_s_per_analyst": round(events["warm_up_s"] / len(analysts), 3),
        "kill": {"at_s": round(events["killed"] - start, 2), "restart_s": round(outage, 2)} if "killed" in events else None,
        **verified,
    }
    return report


def _cpu_seconds(group: int) -> float:
    """User + system CPU seconds of the live processes in a process group (Linux /proc)."""
    total = 0.0
    for stat in Path("/proc").glob("[0-9]*/stat"):
        try:
            fields = stat.read_text().rsplit(")", 1)[1].split()
        except OSError:
            continue
        if int(fields[2]) == group:  # field 5 of stat: the process group
            total += (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")
    return total


def ledger_benchmark(seconds: float, threads: int) -> dict[str, Any]:
    """Spends/s and latency of the core ledger (one transaction and fsync per spend) against
    group commit, with ``threads`` concurrent spenders on one file each."""
    from dpwitness.privacy.budget import Budget, Ledger, Spend
    from dpwitness.serve.ledger import GroupCommitLedger

    results: dict[str, Any] = {}
    folders: list[Path] = []
    for name, make in (
        ("one fsync per spend (dpwitness.privacy.budget.Ledger)", Ledger),
        ("group commit (GroupCommitLedger)", GroupCommitLedger),
    ):
        folder = Path(tempfile.mkdtemp(prefix="bench-ledger-"))
        ledger = make(folder / "ledger.db")
        for index in range(threads):
            ledger.open_account(f"analyst{index}", Budget(1e9, 0.0, math.inf))
        folders.append(folder)
        latencies: list[float] = []
        stop = time.perf_counter() + seconds

        def spender(index: int, ledger: Any = ledger, latencies: list[float] = latencies, stop: float = stop) -> None:
            while time.perf_counter() < stop:
                sent = time.perf_counter()
                ledger.spend(f"analyst{index}", Spend("bench", 0.01))
                latencies.append(time.perf_counter() - sent)

        workers = [threading.Thread(target=spender, args=(i,)) for i in range(threads)]
        for worker in workers:
            worker.start()
        for worker in workers:
            worker.join()
        if isinstance(ledger, GroupCommitLedger):
            ledger.close()
        latencies.sort()
        results[name] = {
            "spends_per_second": round(len(latencies) / seconds, 1),
            "p50_ms": round(1000 * latencies[len(latencies) // 2], 2),
            "p99_ms": round(1000 * latencies[int(0.99 * (len(latencies) - 1))], 2),
        }
    for folder in folders:
        shutil.rmtree(folder, ignore_errors=True)
    return results


def asgi_benchmark(queries: int, repeats: int) -> dict[str, Any]:
    """CPU per DP query of the application alone: the ASGI app called in-process, one request at a
    time (no sockets, no HTTP parsing, no other client), ``queries`` of the mix per repeat, each
    repeat on a fresh ledger after a warm-up of every shape. CPU time of this process (all
    threads: the handler's worker thread and the ledger's writer included), so the figure
    depends little on the machine's load; the wall time is reported beside it."""
    from dpwitness.serve.app import create_app
    from dpwitness.serve.config import load_config

    data = adult_path()
    if data is None:
        raise SystemExit("the Adult table (../shared/data/adult.csv) is needed for this benchmark")
    token = "token-asgi-" + "z" * 32
    cpu_ms: list[float] = []
    wall_ms: list[float] = []
    for _ in range(repeats):
        folder = Path(tempfile.mkdtemp(prefix="bench-serve-asgi-"))
        tables = {"adult": tomllib.loads(EXAMPLE.read_text())["tables"]["adult"]}
        tables["adult"]["path"] = str(data)
        config = write_config(
            folder / "service.toml",
            tables=tables,
            analysts={"asgi": (token, 1e9)},
            service={"ledger": str(folder / "ledger.db"), "rate_per_second": 1e9, "rate_burst": 1_000_000_000},
        )
        app = create_app(load_config(config))

        async def one(body: dict[str, Any], app: Any = app) -> int:
            payload = json.dumps(body).encode()
            scope = {
                "type": "http", "asgi": {"version": "3.0"}, "http_version": "1.1", "method": "POST",
                "scheme": "http", "path": "/v1/query", "raw_path": b"/v1/query", "root_path": "",
                "query_string": b"", "client": ("127.0.0.1", 1), "server": ("127.0.0.1", 2),
                "headers": [
                    (b"host", b"127.0.0.1"), (b"authorization", f"Bearer {token}".encode()),
                    (b"content-type", b"application/json"), (b"content-length", str(len(payload)).encode()),
                ],
            }  # fmt: skip
            sent = False
            status = 0

            async def receive() -> dict[str, Any]:
                nonlocal sent
                if not sent:
                    sent = True
                    return {"type": "http.request", "body": payload, "more_body": False}
                await asyncio.sleep(3600)
                return {"type": "http.disconnect"}

            async def send(message: dict[str, Any]) -> None:
                nonlocal status
                if message["type"] == "http.response.start":
                    status = message["status"]

            await app(scope, receive, send)
            return status

        async def drive(count: int, one: Any = one) -> None:
            for i in range(count):
                status = await one({"table": "adult", "epsilon": QUERY_EPSILON, **MIX[i % len(MIX)]})
                if status != 200:
                    raise SystemExit(f"the application answered {status}")

        async def measured(drive: Any = drive) -> tuple[float, float]:
            await drive(4 * len(MIX))  # warm-up: every shape's tables and plan
            cpu, wall = time.process_time(), time.perf_counter()
            await drive(queries)
            return time.process_time() - cpu, time.perf_counter() - wall

        cpu, wall = asyncio.run(measured())
        app.state.service.ledger.close()
        shutil.rmtree(folder, ignore_errors=True)
        cpu_ms.append(1000 * cpu / queries)
        wall_ms.append(1000 * wall / queries)
    return {
        "queries_per_repeat": queries,
        "repeats": repeats,
        "cpu_ms_per_query_median": round(statistics.median(cpu_ms), 3),
        "cpu_ms_per_query_range": [round(min(cpu_ms), 3), round(max(cpu_ms), 3)],
        "wall_ms_per_query_median": round(statistics.median(wall_ms), 3),
        "load_average_1min": round(os.getloadavg()[0], 1),
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--seconds", type=float, default=60.0)
    parser.add_argument("--clients", type=int, default=32)
    parser.add_argument("--tight-queries", type=int, default=100)
    parser.add_argument("--kill", action=argparse.BooleanOptionalAction, default=True, help="kill -9 and restart half-way")
    parser.add_argument("--polars-threads", type=int, default=0, help="POLARS_MAX_THREADS for the server (0: Polars' default)")
    parser.add_argument("--workers", type=int, default=1, help="server processes (dpwitness serve --workers)")
    parser.add_argument(
        "--aggregate-cache",
        type=int,
        default=1024,
        help="exact aggregates remembered per analyst and table (0: recompute every time)",
    )
    parser.add_argument("--keep", action="store_true", help="keep the temporary folder (config, ledger, server log)")
    parser.add_argument("--json", action="store_true")
    parser.add_argument(
        "--ledger-only", action="store_true", help="only compare the ledger's spend rate with and without group commit"
    )
    parser.add_argument(
        "--asgi",
        action="store_true",
        help="only the application's CPU per query, called in-process one request at a time (no sockets)",
    )
    parser.add_argument("--repeats", type=int, default=5, help="repeats of --asgi")
    args = parser.parse_args()
    if args.asgi:
        print(json.dumps(asgi_benchmark(600, args.repeats), indent=2))
        return
    if args.ledger_only:
        print(json.dumps(ledger_benchmark(min(args.seconds, 10.0), args.clients + 1), indent=2))
        return
    report = asyncio.run(run(args))
    if args.json:
        print(json.dumps(report, indent=2))
        return
    for key, value in report.items():
        print(f"{key:>28}: {value}")
    ok = (
        report["queries_per_second"] >= 500
        and (report["p99_ms"] or math.inf) <= 100
        and not report["overspent_analysts"]
        and report["lost_records"] == 0
    )
    print(f"{'targets met':>28}: {ok} (≥ 500 q/s, p99 ≤ 100 ms, 0 overspend, 0 lost records)")


if __name__ == "__main__":
    main()
