"""Benchmark: dpwitness on Spark against plain Spark doing the same aggregation, one session.

    python3 bench/bench_spark.py [--rows 10000000] [--repeats 5] [--json out.json]

Five queries on the benchmark's Parquet table (``bench/gen_parquet.py``): count, sum and mean
of ``age`` over [0, 100], the grouped count of ``category`` with its 20 declared keys, and the
count of a JOIN of two private tables on the privacy unit ``user_id`` (the table with a second
one of half its rows over the same users, 2 rows each on average; each side kept to ≤ 5 rows per
user and per key, ``PrivateJoin``; plain Spark: the inner join's ``count()``).
dpwitness runs the whole release (``Session(engine="spark")``: plan, aggregate, noise); plain
Spark runs the aggregate a user would write without privacy (``count()``, ``sum``, ``mean``,
``groupBy().count()``). Both sides share one local Spark session (``local[2]``, bound to
127.0.0.1) and run interleaved, so that the machine's load hits both alike.

Each run builds a new DataFrame: re-collecting the *same* DataFrame reuses its shuffle files
and skips the scan, which would flatter whichever side did it. Reported per query: best and
median wall time, and the CPU time of the JVM plus this process over the best run's repeats
(``psutil``), the steadier figure on a shared machine. The Tumult comparison is
``bench/anchors/tumult_bench.py`` (its own venv and Spark 3.5).
"""

from __future__ import annotations

import argparse
import contextlib
import json
import os
import statistics
import sys
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))
from gen_parquet import CATEGORIES, generate

BOUNDS = (0, 100)
QUERIES = ("count", "sum", "mean", "grouped count", "private join")
JOIN_BOUND = 5  # rows per user and per key on each side of the private join
TARGET = 1.5  # grouped count with declared keys: within 1.5× plain Spark


def _cpu_seconds() -> float:
    """CPU time of this process and its children (the Spark JVM), user + system."""
    import psutil

    me = psutil.Process()
    total = float(sum(me.cpu_times()[:2]))
    for child in me.children(recursive=True):
        with contextlib.suppress(psutil.Error):
            total += sum(child.cpu_times()[:2])
    return total


def measure(run: Callable[[], Any], repeats: int) -> dict[str, Any]:
    """Wall times of ``repeats`` runs after one warm-up, and the CPU seconds per run (mean)."""
    run()
    walls = []
    cpu_start = _cpu_seconds()
    for _ in range(repeats):
        started = time.perf_counter()
        run()
        walls.append(time.perf_counter() - started)
    cpu = (_cpu_seconds() - cpu_start) / repeats
    return {"best_s": min(walls), "median_s": statistics.median(walls), "cpu_s": cpu, "walls_s": walls}


def runs(spark: Any, path: str, right: str) -> dict[str, tuple[Callable[[], Any], Callable[[], Any]]]:
    """Per query: (plain Spark, dpwitness release), each reading ``path`` (and the join's ``right``) afresh."""
    from pyspark.sql import functions as F

    from dpwitness.query.resolve import PrivateJoin, Request
    from dpwitness.session import Session

    def session() -> Session:
        return Session(spark.read.parquet(path), epsilon=1e6, engine="spark")

    def frame() -> Any:
        return spark.read.parquet(path)

    return {
        "count": (lambda: frame().count(), lambda: session().count(epsilon=1.0).value),
        "sum": (
            lambda: frame().agg(F.sum("age")).first()[0],
            lambda: session().sum("age", BOUNDS, epsilon=1.0).value,
        ),
        "mean": (
            lambda: frame().agg(F.mean("age")).first()[0],
            lambda: session().mean("age", BOUNDS, epsilon=1.0).value,
        ),
        "grouped count": (
            lambda: frame().groupBy("category").count().collect(),
            lambda: session().histogram("category", CATEGORIES, epsilon=1.0).value,
        ),
        "private join": (
            lambda: frame().join(spark.read.parquet(right), "user_id").count(),
            lambda: (
                Session(spark.read.parquet(path), epsilon=1e6, engine="spark", privacy_unit="user_id")
                .ask(
                    Request(
                        "count",
                        epsilon=1.0,
                        join=PrivateJoin(
                            right, on="user_id", max_rows_per_key=JOIN_BOUND, max_rows_per_unit=JOIN_BOUND, name="r"
                        ),
                    )
                )
                .value
            ),
        ),
    }


def uptime() -> str:
    return "load average " + ", ".join(f"{x:.1f}" for x in os.getloadavg())


def report(results: dict[str, Any]) -> str:
    lines = [
        f"Spark local[2], {results['rows']:,} rows of Parquet, {results['repeats']} runs each after a warm-up; "
        f"load before {results['load_before']}, after {results['load_after']}",
        "",
        "| query | plain Spark best / median (CPU) | dpwitness best / median (CPU) | ratio best | ratio CPU |",
        "| --- | ---: | ---: | ---: | ---: |",
    ]
    for name in QUERIES:
        plain, dp = results["queries"][name]["plain"], results["queries"][name]["dpwitness"]
        lines.append(
            f"| {name} | {plain['best_s']:.2f} / {plain['median_s']:.2f} s ({plain['cpu_s']:.2f} s) "
            f"| {dp['best_s']:.2f} / {dp['median_s']:.2f} s ({dp['cpu_s']:.2f} s) "
            f"| {dp['best_s'] / plain['best_s']:.2f}× | {dp['cpu_s'] / plain['cpu_s']:.2f}× |"
        )
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rows", type=int, default=10_000_000)
    parser.add_argument("--repeats", type=int, default=5)
    parser.add_argument("--queries", default=",".join(QUERIES), help="comma-separated subset of: " + ", ".join(QUERIES))
    parser.add_argument("--json", type=Path, default=None)
    args = parser.parse_args(argv)
    os.environ.setdefault("SPARK_LOCAL_IP", "127.0.0.1")
    from dpwitness.engines.spark import local_session

    path = str(generate(args.rows))
    right = str(generate(args.rows // 2, rows_per_user=2, seed=7))  # the same users (rows // 4), 2 rows each
    spark = local_session(driver_memory="4g", shuffle_partitions=16)
    results: dict[str, Any] = {"rows": args.rows, "repeats": args.repeats, "load_before": uptime(), "queries": {}}
    try:
        for name in [q.strip() for q in args.queries.split(",") if q.strip()]:
            plain, dp = runs(spark, path, right)[name]
            results["queries"][name] = {"plain": measure(plain, args.repeats), "dpwitness": measure(dp, args.repeats)}
            print(name, json.dumps(results["queries"][name]), flush=True)
    finally:
        results["load_after"] = uptime()
        spark.stop()
    if set(results["queries"]) == set(QUERIES):
        print(report(results))
    if args.json is not None:
        args.json.write_text(json.dumps(results, indent=2))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
