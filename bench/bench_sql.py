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


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--rows", type=int, default=10_000_000)
    parser.add_argument("--repeats", type=int, default=9)
    parser.add_argument("--plans", type=int, default=300)
    args = parser.parse_args()
    import os

    from gen_parquet import generate

    path = generate(args.rows, quiet=True)
    print(f"load: {os.getloadavg()[0]:.2f} (1-min average)")
    for statement, ms in planning(path, args.plans).items():
        print(f"plan  {ms:7.3f} ms median  {statement}…")
    sql_s, api_s, best = cost(path, args.repeats)
    print(f"cost  SQL {sql_s:.3f} s, Python API {api_s:.3f} s (medians), ratio {sql_s / api_s:.3f};", end=" ")
    print(f"ratio of the fastest runs {best:.3f}")
    print(f"      on {args.rows:,} rows, {args.repeats} alternating runs each")
    print(f"load: {os.getloadavg()[0]:.2f} (1-min average)")


if __name__ == "__main__":
    main()
