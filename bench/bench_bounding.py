"""Contribution bounding: dpwitness's exact bounded aggregate against Polars' first k rows per user, in one process.

    python3 bench/bench_bounding.py                      # 10M rows (bench/gen_parquet.py), k = 5, best of 3
    python3 bench/bench_bounding.py --rows 1000000 --repeats 5

For sum(age), mean(age) and histogram(category) with ``privacy_unit="user_id",
max_contributions=k`` it times, interleaved in one process so that both see the same load:

* Polars without privacy keeping each user's *first* k rows (``int_range().over(user) < k``),
  then the clamped aggregate: the cheapest bounding there is (it is not private: which rows
  a user keeps depends on the file order);
* dpwitness's Polars engine computing the exact bounded aggregate (``ENGINE.aggregate``: the
  keyed-hash selection of ``engines/polars.py`` ``_bound``, the clamp, the counts), no noise.

Both CPU time (``process_time``: the steadier figure on a shared machine) and wall time are
reported, best of ``--repeats`` after one warm-up, with the load average. The DP release's
end-to-end time and memory against OpenDP are measured by ``bench/bench_statistics.py``.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import polars as pl

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))

from dpwitness.engines.polars import ENGINE  # noqa: E402
from dpwitness.queries import Query  # noqa: E402
from gen_parquet import CATEGORIES, generate  # noqa: E402  (bench/ is not a package)

STATS = ("sum", "mean", "histogram")
BOUNDS = (0.0, 100.0)
KEY = (1, 2, 3, 4)
TARGET = 1.5


def query(stat: str, k: int) -> Query:
    unit = {"privacy_unit": "user_id", "max_contributions": k}
    if stat == "histogram":
        return Query(statistic="histogram", column="category", keys=tuple(CATEGORIES), epsilon=1.0, **unit)  # type: ignore[arg-type]
    return Query(statistic=stat, column="age", bounds=BOUNDS, epsilon=1.0, **unit)  # type: ignore[arg-type]


def first_k(path: Path, stat: str, k: int) -> pl.LazyFrame:
    frame = pl.scan_parquet(path).filter(pl.int_range(pl.len()).over("user_id") < k)
    age = pl.col("age").cast(pl.Float64).clip(*BOUNDS)
    if stat == "histogram":
        return frame.filter(pl.col("category").is_in(CATEGORIES)).group_by("category").agg(pl.len())
    return frame.select(pl.col("age").count().alias("count"), (age.sum() if stat == "sum" else (age - 50.0).sum()).alias("s"))


def best(run: Callable[[], object], repeats: int) -> tuple[float, float]:
    run()
    cpu, wall = [], []
    for _ in range(repeats):
        c, w = time.process_time(), time.perf_counter()
        run()
        cpu.append(time.process_time() - c)
        wall.append(time.perf_counter() - w)
    return min(cpu), min(wall)


def measure(path: Path, k: int, repeats: int, stats: tuple[str, ...] = STATS) -> list[dict[str, Any]]:
    handle = ENGINE.open(path)
    rows = []
    for stat in stats:
        plain_cpu, plain_wall = best(lambda stat=stat: first_k(path, stat, k).collect(engine="streaming"), repeats)  # type: ignore[misc]
        bounded = query(stat, k)
        dp_cpu, dp_wall = best(lambda bounded=bounded: ENGINE.aggregate(handle, bounded, selection_key=KEY), repeats)  # type: ignore[misc]
        rows.append(
            {
                "stat": stat,
                "polars_first_k_cpu_s": plain_cpu,
                "polars_first_k_wall_s": plain_wall,
                "dpwitness_cpu_s": dp_cpu,
                "dpwitness_wall_s": dp_wall,
                "ratio_cpu": dp_cpu / plain_cpu,
                "ratio_wall": dp_wall / plain_wall,
            }
        )
    return rows


def table(rows: list[dict[str, Any]], k: int) -> str:
    lines = [
        f"| statistic | Polars, first {k} rows per user (CPU / wall) | dpwitness bounded, exact (CPU / wall) "
        f"| ratio CPU (≤ {TARGET}×) | ratio wall |",
        "| --- | ---: | ---: | ---: | ---: |",
    ]
    for r in rows:
        lines.append(
            f"| {r['stat']} | {r['polars_first_k_cpu_s']:.2f} s / {r['polars_first_k_wall_s']:.2f} s "
            f"| {r['dpwitness_cpu_s']:.2f} s / {r['dpwitness_wall_s']:.2f} s | {r['ratio_cpu']:.2f}× | {r['ratio_wall']:.2f}× |"
        )
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rows", type=int, default=10_000_000)
    parser.add_argument("--max-contributions", type=int, default=5)
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--json", type=Path, default=None)
    args = parser.parse_args(argv)
    path = generate(args.rows)
    start_load = os.getloadavg()[0]
    rows = measure(path, args.max_contributions, args.repeats)
    print(f"# Contribution bounding, {args.rows:,} rows, k = {args.max_contributions}")
    print(f"load average {start_load:.1f} at the start, {os.getloadavg()[0]:.1f} at the end; best of {args.repeats}\n")
    print(table(rows, args.max_contributions))
    if args.json:
        args.json.write_text(json.dumps({"rows": args.rows, "k": args.max_contributions, "results": rows}, indent=2))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
