"""Benchmark: SQL against the same queries through the Python API (issue 20's targets).

    python3 bench/bench_sql.py [--rows 10000000] [--repeats 5] [--plans 300]

* Planning: parse + compile + Δ (``dpwitness.sql.compile_statement``, every ``Query`` built) of
  a few statements against the table's schema, ``--plans`` times each: the median per statement
  (target ≤ 5 ms).
* Cost: on the generated Parquet table of ``bench/gen_parquet.py`` (``--rows`` rows, cached under
  the gitignored ``bench/data/``), ``Session.sql`` of a statement with a filter, a grouped count
  and a grouped mean over the 20 declared categories, against the same three releases through the
  Python API (``count``, ``mean`` with the same ``where``, ``by`` and ``keys``). Runs alternate;
  the ratio of the medians is reported (target ≤ 1.05).
* One pass (issue 31, item 1; ``--one-pass``): on the table read into memory, ``Session.sql`` of a
  grouped COUNT and AVG over the 20 declared categories (one engine pass since issue 31) against
  the exact Polars query with the same aggregates (one ``group_by`` with ``len`` and the clamped
  mean), and against the releases one pass each (the path before). Runs alternate; medians of
  CPU time (``process_time``) and wall time, with the load average (target ≤ 1.3× on CPU).

    python3 bench/bench_sql.py --one-pass --rows 2000000 --repeats 9
"""

from __future__ import annotations

import argparse
import statistics
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

import dpwitness as dw
from dpwitness.session.sql import compile_for

PLANNED = [
    "SELECT COUNT(*) FROM t WHERE age < 20",
    "SELECT category, COUNT(*) AS n, AVG(CLAMP(age, 0, 100)) FROM t "
    "WHERE category IN ('c00', 'c01', 'c02') AND age BETWEEN 18 AND 65 GROUP BY category HAVING n > 10 ORDER BY n DESC",
    "SELECT SUM(CLAMP(age, 0, 100)) / COUNT(*) AS ratio, MEDIAN(CLAMP(age, 0, 100)), VAR(CLAMP(age, 0, 100)) FROM t",
]


def planning(path: Path, plans: int) -> dict[str, float]:
    session = dw.Session(str(path), epsilon=1e6)
    session.schema()  # metadata read once, as in a session's life
    out: dict[str, float] = {}
    for statement in PLANNED:
        times = []
        for _ in range(plans):
            start = time.perf_counter()
            compile_for(session, statement, epsilon=1.0, name="t")
            times.append(time.perf_counter() - start)
        out[statement[:60]] = statistics.median(times) * 1e3
    return out


def cost(path: Path, repeats: int) -> tuple[float, float, float]:
    from gen_parquet import CATEGORIES

    keys = ", ".join(f"'{c}'" for c in CATEGORIES)
    statement = (
        f"SELECT category, COUNT(*), AVG(CLAMP(age, 0, 100)) FROM t WHERE category IN ({keys}) AND age >= 18 GROUP BY category"
    )
    where = f"category in [{keys.replace(chr(39), chr(34))}] and age >= 18"

    def by_sql() -> None:
        session = dw.Session(str(path), epsilon=1e6, seed=1)
        session.sql(statement, epsilon=2.0, name="t")

    def by_api() -> None:
        session = dw.Session(str(path), epsilon=1e6, seed=1)
        session.count(epsilon=1.0, by="category", keys=list(CATEGORIES), where=where)
        session.mean("age", (0, 100), epsilon=1.0, by="category", keys=list(CATEGORIES), where=where)

    # SQL's own work on a warm session: compile, and the all-queries check before the spend
    warm = dw.Session(str(path), epsilon=1e6, seed=1)
    warm.sql(statement, epsilon=2.0, name="t")
    own = []
    for _ in range(50):
        start = time.perf_counter()
        warm.check_budget(list(compile_for(warm, statement, epsilon=2.0, name="t").queries))
        own.append(time.perf_counter() - start)
    print(f"own   SQL's compile + check of all queries before the spend: {statistics.median(own) * 1e3:.2f} ms median")
    sql_times: list[float] = []
    api_times: list[float] = []
    by_sql()  # warm-up: page cache, plans
    by_api()
    for _ in range(repeats):
        for run, times in ((by_sql, sql_times), (by_api, api_times)):
            start = time.perf_counter()
            run()
            times.append(time.perf_counter() - start)
    return statistics.median(sql_times), statistics.median(api_times), min(sql_times) / min(api_times)


ONE_PASS = "SELECT category, COUNT(*), AVG(CLAMP(age, 0, 100)) FROM t WHERE category IN ({keys}) GROUP BY category"


def one_pass(path: Path, repeats: int) -> dict[str, tuple[float, float]]:
    """Median (CPU s, wall s) of the statement through SQL (one pass), one pass per release, and Polars."""
    import polars as pl

    from gen_parquet import CATEGORIES

    frame = pl.read_parquet(path, columns=["category", "age"])  # in memory, as the issue measures
    statement = ONE_PASS.format(keys=", ".join(f"'{c}'" for c in CATEGORIES))

    def by_sql() -> None:
        dw.Session(frame, epsilon=1e6, seed=1).sql(statement, epsilon=2.0, name="t")

    def per_release() -> None:  # the path before issue 31: one engine pass per release
        session = dw.Session(frame, epsilon=1e6, seed=1)
        for aggregate in compile_for(session, statement, epsilon=2.0, name="t").aggregates:
            session.run(aggregate.query)

    def by_polars() -> None:
        age = pl.col("age").cast(pl.Float64).clip(0, 100)
        exact = frame.lazy().filter(pl.col("category").is_in(list(CATEGORIES)))
        exact.group_by("category").agg(pl.len(), age.mean()).collect(engine="streaming")

    runs = {"SQL, one pass": by_sql, "SQL, one pass per release (before)": per_release, "Polars, exact": by_polars}
    times: dict[str, list[tuple[float, float]]] = {name: [] for name in runs}
    for run in runs.values():  # warm-up: plans, calibration tables
        run()
    for _ in range(repeats):
        for name, run in runs.items():
            cpu, wall = time.process_time(), time.perf_counter()
            run()
            times[name].append((time.process_time() - cpu, time.perf_counter() - wall))
    return {name: (statistics.median(c for c, _ in t), statistics.median(w for _, w in t)) for name, t in times.items()}


def one_pass_spark(path: Path, repeats: int) -> dict[str, float]:
    """Median wall s of the statement on the Spark engine (one job) and one job per release, against
    the exact Spark query (the JVM's CPU is not this process's: wall only)."""
    from pyspark.sql import functions as F

    from dpwitness.engines.spark import local_session
    from gen_parquet import CATEGORIES

    spark = local_session()
    statement = ONE_PASS.format(keys=", ".join(f"'{c}'" for c in CATEGORIES))

    def by_sql() -> None:
        dw.Session(str(path), epsilon=1e6, seed=1, engine="spark").sql(statement, epsilon=2.0, name="t")

    def per_release() -> None:
        session = dw.Session(str(path), epsilon=1e6, seed=1, engine="spark")
        for aggregate in compile_for(session, statement, epsilon=2.0, name="t").aggregates:
            session.run(aggregate.query)

    def by_spark() -> None:
        age = F.least(F.greatest(F.col("age").cast("double"), F.lit(0.0)), F.lit(100.0))
        frame = spark.read.parquet(str(path)).filter(F.col("category").isin(list(CATEGORIES)))
        frame.groupBy("category").agg(F.count(F.lit(1)), F.avg(age)).collect()

    runs = {"SQL on Spark, one job": by_sql, "SQL on Spark, one job per release (before)": per_release, "Spark, exact": by_spark}
    times: dict[str, list[float]] = {name: [] for name in runs}
    for run in runs.values():
        run()
    for _ in range(repeats):
        for name, run in runs.items():
            wall = time.perf_counter()
            run()
            times[name].append(time.perf_counter() - wall)
    return {name: statistics.median(t) for name, t in times.items()}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--rows", type=int, default=10_000_000)
    parser.add_argument("--repeats", type=int, default=9)
    parser.add_argument("--plans", type=int, default=300)
    parser.add_argument("--one-pass", action="store_true", help="only the one-pass figure (issue 31, item 1)")
    parser.add_argument("--spark", action="store_true", help="with --one-pass: on the Spark engine (wall times)")
    args = parser.parse_args()
    import os

    from gen_parquet import generate
    from machine import cpu_model

    path = generate(args.rows, quiet=True)
    print(f"load: {os.getloadavg()[0]:.2f} (1-min average); CPU: {cpu_model()}; polars {pl_version()}")
    if args.one_pass and args.spark:
        walls = one_pass_spark(path, args.repeats)
        exact = walls["Spark, exact"]
        for name, wall in walls.items():
            print(f"one pass  {name:44} wall {wall:.3f} s ({wall / exact:.2f}×)")
        print(f"      on {args.rows:,} Parquet rows, local[2], {args.repeats} alternating runs each, medians")
        print(f"load: {os.getloadavg()[0]:.2f} (1-min average)")
        return
    if args.one_pass:
        figures = one_pass(path, args.repeats)
        polars_cpu, polars_wall = figures["Polars, exact"]
        for name, (cpu, wall) in figures.items():
            print(f"one pass  {name:36} CPU {cpu:.3f} s ({cpu / polars_cpu:.2f}×)  wall {wall:.3f} s ({wall / polars_wall:.2f}×)")
        print(f"      on {args.rows:,} rows in memory, {args.repeats} alternating runs each, medians; target ≤ 1.3× on CPU")
        print(f"load: {os.getloadavg()[0]:.2f} (1-min average)")
        return
    for statement, ms in planning(path, args.plans).items():
        print(f"plan  {ms:7.3f} ms median  {statement}…")
    sql_s, api_s, best = cost(path, args.repeats)
    print(f"cost  SQL {sql_s:.3f} s, Python API {api_s:.3f} s (medians), ratio {sql_s / api_s:.3f};", end=" ")
    print(f"ratio of the fastest runs {best:.3f}")
    print(f"      on {args.rows:,} rows, {args.repeats} alternating runs each")
    print(f"load: {os.getloadavg()[0]:.2f} (1-min average)")


def pl_version() -> str:
    import polars as pl

    return str(pl.__version__)


if __name__ == "__main__":
    main()
