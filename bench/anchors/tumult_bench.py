"""Tumult Analytics 0.21 on the Spark benchmark's queries, in its own venv (``tumult_setup.sh``).

    bash bench/anchors/tumult_setup.sh
    .venv-tumult/bin/python bench/anchors/tumult_bench.py [--rows 10000000] [--mean-rows 1000000] [--repeats 3]
        [--queries count,sum,mean,'grouped count','private join']

The same Parquet files as ``bench/bench_spark.py`` (``python3 bench/gen_parquet.py --rows N``
writes them; this script does not import dpwitness, which is not installed in that venv):
count, sum of ``age`` over [0, 100], the grouped count of ``category`` with its 20 keys
declared (``KeySet.from_dict``), and the mean over [0, 100] at ``--mean-rows`` (Tumult's
average runs a per-row Python function, hence the smaller table), and the count of a JOIN of two
private tables on the privacy ID as Tumult writes it: both tables ``AddRowsWithID("user_id")`` in
one ID space, ``join_private`` on the ID (no truncation needed, its docs say), then
``enforce(MaxRowsPerID(25))``; the right table is ``bench_spark.py``'s (half the rows over the same
users, its other columns renamed so that the natural join is on ``user_id`` alone). dpwitness
keeps ≤ 5 rows per user and key on each side before its join (M = 5·5 + 5·5 = 50): the same work
(a bounded join on the person), different bounds. Spark ``local[2]`` bound to
127.0.0.1, 16 shuffle partitions, as dpwitness's benchmark; ``PYSPARK_PYTHON`` is set to this
venv's Python. Each run builds a new Tumult Session over a new DataFrame (as dpwitness's
benchmark builds a new dpwitness Session) and collects the answer. Prints best and median wall
time per query, the CPU time of the JVM plus this process, and the load average.
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

DATA = Path(__file__).resolve().parent.parent / "data"
CATEGORIES = [f"c{i:02d}" for i in range(20)]  # bench/gen_parquet.py's categories


def _cpu_seconds() -> float:
    """CPU time of this process and its children (the JVM); without psutil, this process only."""
    try:
        import psutil
    except ImportError:
        return time.process_time()
    me = psutil.Process()
    total = float(sum(me.cpu_times()[:2]))
    for child in me.children(recursive=True):
        with contextlib.suppress(psutil.Error):
            total += sum(child.cpu_times()[:2])
    return total


def measure(run: Callable[[], Any], repeats: int) -> dict[str, Any]:
    run()  # warm-up
    walls = []
    cpu_start = _cpu_seconds()
    for _ in range(repeats):
        started = time.perf_counter()
        run()
        walls.append(time.perf_counter() - started)
    return {
        "best_s": min(walls),
        "median_s": statistics.median(walls),
        "cpu_s": (_cpu_seconds() - cpu_start) / repeats,
        "walls_s": walls,
    }


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rows", type=int, default=10_000_000)
    parser.add_argument("--mean-rows", type=int, default=1_000_000)
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--queries", default="count,sum,mean,grouped count,private join", help="comma-separated subset")
    parser.add_argument("--json", type=Path, default=None)
    args = parser.parse_args(argv)
    os.environ["PYSPARK_PYTHON"] = sys.executable
    os.environ.setdefault("SPARK_LOCAL_IP", "127.0.0.1")
    paths = {rows: DATA / f"statistics_{rows}.parquet" for rows in (args.rows, args.mean_rows)}
    right = DATA / f"statistics_{args.rows // 2}_per_user_2.parquet"  # written by bench_spark.py
    missing = [str(p) for p in [*paths.values(), right] if not p.exists()]
    if missing:
        sys.exit(f"missing {', '.join(missing)}: run `python3 bench/bench_spark.py --rows N` first (it writes both)")

    from pyspark.sql import SparkSession
    from tmlt.analytics import AddOneRow, AddRowsWithID, KeySet, MaxRowsPerID, PureDPBudget, QueryBuilder, Session

    spark = (
        SparkSession.builder.master("local[2]")
        .config("spark.driver.bindAddress", "127.0.0.1")
        .config("spark.driver.host", "127.0.0.1")
        .config("spark.ui.enabled", "false")
        .config("spark.ui.showConsoleProgress", "false")
        .config("spark.sql.shuffle.partitions", "16")
        .config("spark.driver.memory", "4g")
        .getOrCreate()
    )
    spark.sparkContext.setLogLevel("ERROR")
    keys = KeySet.from_dict({"category": CATEGORIES})

    def release(rows: int, query: Any) -> Callable[[], Any]:
        def run() -> Any:
            frame = spark.read.parquet(str(paths[rows]))
            session = Session.from_dataframe(PureDPBudget(1e6), "t", frame, AddOneRow())
            return session.evaluate(query, PureDPBudget(1.0)).collect()

        return run

    def joined() -> Any:
        left = spark.read.parquet(str(paths[args.rows]))
        other = spark.read.parquet(str(right)).withColumnRenamed("age", "r_age").withColumnRenamed("category", "r_category")
        session = (
            Session.Builder()
            .with_privacy_budget(PureDPBudget(1e6))
            .with_id_space("users")
            .with_private_dataframe("left", left, protected_change=AddRowsWithID("user_id", "users"))
            .with_private_dataframe("right", other, protected_change=AddRowsWithID("user_id", "users"))
            .build()
        )
        query = QueryBuilder("left").join_private("right").enforce(MaxRowsPerID(25)).count()
        return session.evaluate(query, PureDPBudget(1.0)).collect()

    queries = {
        "count": release(args.rows, QueryBuilder("t").count()),
        "sum": release(args.rows, QueryBuilder("t").sum("age", 0, 100)),
        f"mean ({args.mean_rows:,} rows)": release(args.mean_rows, QueryBuilder("t").average("age", 0, 100)),
        "grouped count": release(args.rows, QueryBuilder("t").groupby(keys).count()),
        "private join": joined,
    }
    load = ", ".join(f"{x:.1f}" for x in os.getloadavg())
    results: dict[str, Any] = {"rows": args.rows, "repeats": args.repeats, "load_before": load, "queries": {}}
    try:
        wanted = {q.strip() for q in args.queries.split(",")}
        for name, run in queries.items():
            if name.split(" (")[0] not in wanted:
                continue
            results["queries"][name] = measure(run, args.repeats)
            figure = results["queries"][name]
            print(
                f"{name}: best {figure['best_s']:.2f} s, median {figure['median_s']:.2f} s, CPU {figure['cpu_s']:.2f} s",
                flush=True,
            )
    finally:
        results["load_after"] = ", ".join(f"{x:.1f}" for x in os.getloadavg())
        spark.stop()
    print(f"load average before {results['load_before']}, after {results['load_after']}")
    if args.json is not None:
        args.json.write_text(json.dumps(results, indent=2))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
