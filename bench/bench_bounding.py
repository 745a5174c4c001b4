"""Contribution bounding: dpwitness's exact bounded aggregate against Polars' first k rows per user (and OpenDP).

    python3 bench/bench_bounding.py                                  # 10M rows, ≈ 5 per user, k = 5, 5 repeats
    python3 bench/bench_bounding.py --rows 1000000 --repeats 7
    python3 bench/bench_bounding.py --scaling 1000000,4000000       # the growth check: CPU at 1M against 4M rows
    PYTHONPATH=src /path/to/polars-1.36-venv/bin/python bench/bench_bounding.py   # the oldest Polars, with OpenDP 0.16

For sum(age), mean(age) and histogram(category) with ``privacy_unit="user_id",
max_contributions=k`` it times, interleaved in one process so that all sides see the same load
(each repeat runs every statistic on every side in turn):

* Polars without privacy keeping each user's *first* k rows (``int_range().over(user) < k``),
  then the clamped aggregate: the cheapest bounding there is (it is not private: which rows
  a user keeps depends on the file order);
* dpwitness's Polars engine computing the exact bounded aggregate (``ENGINE.aggregate``: the
  keyed-hash selection of ``engines/polars.py`` ``_bound``, the clamp, the counts), no noise;
* OpenDP's Polars integration when ``opendp`` imports here (its 0.16 pins polars 1.36.1):
  ``dp.unit_of(contributions=1, identifier="user_id")`` and ``truncate_per_group(k)``, the
  release of the same statistic (its noise included; the context is built once, untimed).

The data (``bench/gen_parquet.py --rows-per-user 5``): ``rows // 5`` users, each with a
Poisson(5) number of rows, so at k = 5 most rows belong to users above the bound.
CPU time (``process_time``: every thread of this process; the steadier figure on a shared
machine) and wall time are reported as the median over ``--repeats`` after one warm-up, with
the spread (min–max), the load average at the start and the end, the CPU model and the Polars
version. ``--scaling`` measures the bounded sum and Polars' first-k at several sizes (interleaved)
and prints each one's CPU time per row against the smallest size: a plan that grows superlinearly
shows a per-row cost that rises with the rows (the former ``rank().over(user)`` plan on Polars 1.36:
3.0 s at 1M rows, 18.8 s at 3M).
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import statistics
import sys
import time
import warnings
from collections.abc import Callable
from pathlib import Path
from typing import Any

import polars as pl

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))

from dpwitness.engines.polars import ENGINE  # noqa: E402
from dpwitness.query.queries import Query  # noqa: E402
from gen_parquet import CATEGORIES, generate  # noqa: E402  (bench/ is not a package)
from machine import cpu_model, interleaved, spread  # noqa: E402

STATS = ("sum", "mean", "histogram")
BOUNDS = (0.0, 100.0)
KEY = (1, 2, 3, 4)
TARGET = 1.5  # dpwitness ≤ 1.5× Polars' first-k (CPU)
OPENDP_TARGET = 5.0  # OpenDP ≥ 5× dpwitness (CPU)
ROWS_PER_USER = 5


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


def opendp_runner(path: Path, k: int, rows: int, runs: int) -> Callable[[str], object] | None:
    """OpenDP's release of one statistic with ``truncate_per_group(k)``, or None when OpenDP does not import."""
    try:
        import opendp.prelude as dp
    except ImportError:
        return None
    dp.enable_features("contrib")
    warnings.simplefilter("ignore", FutureWarning)  # dp.len's coming change of default sign
    margins = [dp.polars.Margin(by=[], max_length=rows), dp.polars.Margin(by=["category"], invariant="keys", max_length=rows)]
    data = pl.scan_parquet(path).with_columns(pl.col("category").cast(pl.String))  # OpenDP wants a plain string key
    context = dp.Context.compositor(
        data=data,
        privacy_unit=dp.unit_of(contributions=1, identifier="user_id"),
        privacy_loss=dp.loss_of(epsilon=float(runs)),
        split_evenly_over=runs,
        margins=margins,
    )
    keys = pl.LazyFrame({"category": CATEGORIES})

    def run(stat: str) -> object:
        q = context.query().truncate_per_group(k)
        if stat == "sum":
            return q.select(pl.col("age").fill_null(0).dp.sum(BOUNDS)).release().collect().item()
        if stat == "mean":
            return q.select(pl.col("age").fill_null(0).dp.mean(BOUNDS)).release().collect().item()
        return q.group_by("category").agg(dp.len()).with_keys(keys).release().collect().height

    return run


def _each_case(cases: list[Any], sides: dict[str, Callable[[Any], object]]) -> dict[tuple[Any, str], Callable[[], object]]:
    """Every side on every case, keyed (case, side), cases outermost (the order the rounds run them in)."""
    return {(case, side): (lambda run=run, case=case: run(case)) for case in cases for side, run in sides.items()}  # type: ignore[misc]


def measure(path: Path, k: int, repeats: int, stats: tuple[str, ...] = STATS, *, opendp: bool = False) -> list[dict[str, Any]]:
    """Median (and spread) of ``repeats`` interleaved runs per statistic and side, after one warm-up each."""
    handle = ENGINE.open(path)
    rows = pl.scan_parquet(path).select(pl.len()).collect().item()
    sides: dict[str, Callable[[str], object]] = {
        "polars_first_k": lambda stat: first_k(path, stat, k).collect(engine="streaming"),
        "dpwitness": lambda stat: ENGINE.aggregate(handle, query(stat, k), selection_key=KEY),
    }
    if opendp:
        runner = opendp_runner(path, k, rows, (repeats + 1) * len(stats))
        if runner is None:
            print("OpenDP does not import here: its column is left out", file=sys.stderr)
        else:
            sides["opendp"] = runner
    samples = interleaved(_each_case(list(stats), sides), repeats)
    out = []
    for stat in stats:
        row: dict[str, Any] = {"stat": stat}
        for side in sides:
            summary = spread(samples[(stat, side)])
            row.update({f"{side}_{name}": value for name, value in summary.items()})
        row["ratio_cpu"] = row["dpwitness_cpu_s"] / row["polars_first_k_cpu_s"]
        row["ratio_wall"] = row["dpwitness_wall_s"] / row["polars_first_k_wall_s"]
        if "opendp" in sides:
            row["opendp_over_dpwitness_cpu"] = row["opendp_cpu_s"] / row["dpwitness_cpu_s"]
            row["opendp_over_dpwitness_wall"] = row["opendp_wall_s"] / row["dpwitness_wall_s"]
        out.append(row)
    return out


def scaling(sizes: list[int], k: int, repeats: int, directory: Path | None = None) -> list[dict[str, Any]]:
    """The bounded sum and Polars' first-k at each size, interleaved: CPU per row against the smallest size."""
    where = {} if directory is None else {"directory": directory}
    paths = {n: generate(n, rows_per_user=ROWS_PER_USER, quiet=True, **where) for n in sizes}
    handles = {n: ENGINE.open(p) for n, p in paths.items()}
    sides: dict[str, Callable[[int], object]] = {
        "polars_first_k": lambda n: first_k(paths[n], "sum", k).collect(engine="streaming"),
        "dpwitness": lambda n: ENGINE.aggregate(handles[n], query("sum", k), selection_key=KEY),
    }
    samples = interleaved(_each_case(sizes, sides), repeats)
    out = []
    for n in sizes:
        row: dict[str, Any] = {"rows": n}
        for side in sides:
            summary = spread(samples[(n, side)])
            row.update({f"{side}_{name}": value for name, value in summary.items()})
            base = statistics.median(s[0] for s in samples[(sizes[0], side)])
            row[f"{side}_cpu_per_row_vs_smallest"] = (summary["cpu_s"] / n) / (base / sizes[0])
        out.append(row)
    return out


def _cell(row: dict[str, Any], side: str) -> str:
    return (
        f"{row[f'{side}_cpu_s']:.2f} s [{row[f'{side}_cpu_min_s']:.2f}–{row[f'{side}_cpu_max_s']:.2f}] "
        f"/ {row[f'{side}_wall_s']:.2f} s [{row[f'{side}_wall_min_s']:.2f}–{row[f'{side}_wall_max_s']:.2f}]"
    )


def table(rows: list[dict[str, Any]], k: int) -> str:
    opendp = "opendp_cpu_s" in rows[0] if rows else False
    header = (
        f"| statistic | Polars, first {k} rows per user (CPU / wall) | dpwitness bounded, exact (CPU / wall) "
        f"| ratio CPU (≤ {TARGET}×) | ratio wall |"
    )
    rule = "| --- | ---: | ---: | ---: | ---: |"
    if opendp:
        header += f" OpenDP truncate_per_group({k}) release (CPU / wall) | OpenDP ÷ dpwitness CPU (≥ {OPENDP_TARGET}×) |"
        rule += " ---: | ---: |"
    lines = [header, rule]
    for r in rows:
        line = f"| {r['stat']} | {_cell(r, 'polars_first_k')} | {_cell(r, 'dpwitness')} "
        line += f"| {r['ratio_cpu']:.2f}× | {r['ratio_wall']:.2f}× |"
        if opendp:
            line += f" {_cell(r, 'opendp')} | {r['opendp_over_dpwitness_cpu']:.2f}× |"
        lines.append(line)
    return "\n".join(lines)


def scaling_table(rows: list[dict[str, Any]]) -> str:
    lines = [
        "| rows | Polars first-k sum (CPU / wall) | CPU per row ÷ smallest "
        "| dpwitness bounded sum (CPU / wall) | CPU per row ÷ smallest |",
        "| ---: | ---: | ---: | ---: | ---: |",
    ]
    for r in rows:
        lines.append(
            f"| {r['rows']:,} | {_cell(r, 'polars_first_k')} | {r['polars_first_k_cpu_per_row_vs_smallest']:.2f} "
            f"| {_cell(r, 'dpwitness')} | {r['dpwitness_cpu_per_row_vs_smallest']:.2f} |"
        )
    return "\n".join(lines)


def _context() -> str:
    return f"polars {pl.__version__}, Python {platform.python_version()}, {cpu_model()}, {os.cpu_count()} cores"


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rows", type=int, default=10_000_000)
    parser.add_argument("--max-contributions", type=int, default=5)
    parser.add_argument("--repeats", type=int, default=5)
    parser.add_argument("--stats", default=",".join(STATS), help="comma-separated, from sum,mean,histogram")
    parser.add_argument("--no-opendp", action="store_true", help="leave OpenDP out even when it imports")
    parser.add_argument("--scaling", default=None, help="comma-separated row counts: the growth check instead")
    parser.add_argument("--json", type=Path, default=None)
    args = parser.parse_args(argv)
    k = args.max_contributions
    start_load = os.getloadavg()
    started = time.strftime("%Y-%m-%d %H:%M:%S UTC", time.gmtime())
    if args.scaling:
        sizes = sorted(int(n) for n in args.scaling.split(","))
        results = scaling(sizes, k, args.repeats)
        title = f"# Growth of bounding, k = {k}, {' / '.join(f'{n:,}' for n in sizes)} rows, ≈ {ROWS_PER_USER} rows per user"
        text = scaling_table(results)
    else:
        path = generate(args.rows, rows_per_user=ROWS_PER_USER)
        stats = tuple(s for s in args.stats.split(",") if s)
        results = measure(path, k, args.repeats, stats, opendp=not args.no_opendp)
        title = f"# Contribution bounding, {args.rows:,} rows, ≈ {ROWS_PER_USER} rows per user (Poisson), k = {k}"
        text = table(results, k)
    end_load = os.getloadavg()
    print(title)
    print(f"{started}; {_context()}")
    print(
        f"load average {start_load[0]:.1f} at the start, {end_load[0]:.1f} at the end; "
        f"median of {args.repeats} interleaved repeats after a warm-up, [min–max]\n"
    )
    print(text)
    if args.json:
        payload = {
            "started": started,
            "context": _context(),
            "load": [start_load[0], end_load[0]],
            "rows": args.rows,
            "k": k,
            "repeats": args.repeats,
            "results": results,
        }
        args.json.write_text(json.dumps(payload, indent=2))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
