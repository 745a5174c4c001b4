"""The price of the one reader (issue 17 / 21): a DP mean and a grouped count read from a CSV with
quoted fields, against Polars' own ``scan_csv`` with inferred types (target ≤ 1.3×).

Writes a CSV of ``--rows`` rows (id, name, age, hours, sex, income) as Polars writes it (fields
quoted only where needed); 40 % of the names hold a quoted comma (``"Doe, Jane"``). Then, after
one warm-up round, ``--repeats`` interleaved rounds, each run's median CPU time (``process_time``:
every thread of this process) and wall time with their spread (min–max):

* ``polars``: ``pl.scan_csv(path)`` (types inferred, quotes honoured: a quoted field may run across
  lines), ``mean(clip(hours, 0, 100))`` and ``group_by(sex).len()``, streaming collect;
* ``dpwitness``: ``Session(path).mean("hours", (0, 100))`` and ``count(by="sex", keys=["F", "M"])``
  (the whole release: plan check, the one reader, aggregation, noise), and the bare read (the
  reader's plan for the same aggregates, no session); the reader takes its fast path (Polars'
  own parse after a byte check, cached per file), so each release is also timed with that cache
  cleared (a file's first read) and the check alone, and the exact path is timed bare.

Ratios to Polars are of the medians, CPU and wall; the target (≤ 1.3×) is judged on the median
wall time, with the CPU ratio beside it. With ``--spark``, also on a local Spark session
(``local[2]``), median of 3 after a warm-up: ``spark.read.csv`` (header, every column text)
against ``Session(engine="spark")`` for the same two releases (the driver's CPU only: Spark's
work is in its JVM).

Usage: ``python bench/bench_csv_read.py --rows 5000000 [--spark]`` (figures: docs/benchmarks.md,
"CSV read").
"""

from __future__ import annotations

import argparse
import os
import sys
import tempfile
from collections.abc import Callable
from pathlib import Path
from typing import Any

import numpy as np
import polars as pl

from dpwitness import Session
from dpwitness.io import reader
from dpwitness.io.cells import polars_number
from dpwitness.io.reader import scan_polars

sys.path.insert(0, str(Path(__file__).resolve().parent))
from machine import cpu_model, interleaved, spread  # bench/ is not a package

Run = Callable[[Path], object]


#: The one numeric column the benchmark averages, declared (a CSV column is text until its type is).
HOURS = {"hours": "float"}


def generate(rows: int, path: Path) -> Path:
    rng = np.random.default_rng(1)
    names = np.array(["Doe, Jane", "Smith", "Lee", "O'Brien", "Garcia, Ana"])[rng.integers(0, 5, rows)]
    frame = pl.DataFrame(
        {
            "id": np.arange(rows),
            "name": names,
            "age": rng.integers(17, 90, rows),
            "hours": np.round(rng.uniform(1, 99, rows), 1),
            "sex": np.array(["F", "M"])[rng.integers(0, 2, rows)],
            "income": rng.integers(0, 100_000, rows),
        }
    )
    frame.write_csv(path)
    return path


def _number(column: str) -> pl.Expr:
    return polars_number(pl.col(column))  # the engines' read: the cell grammar


def _mean_on(frame: pl.LazyFrame, hours: pl.Expr) -> object:
    return frame.select(hours.clip(0, 100).mean()).collect(engine="streaming")


def _grouped_on(frame: pl.LazyFrame) -> object:
    return frame.group_by("sex").len().collect(engine="streaming")


RUNS: dict[str, Run] = {
    "polars scan_csv (inferred) mean": lambda p: _mean_on(pl.scan_csv(p), pl.col("hours")),
    "polars scan_csv (inferred) grouped count": lambda p: _grouped_on(pl.scan_csv(p)),
    "dpwitness reader, bare mean": lambda p: _mean_on(scan_polars(p), _number("hours")),
    "dpwitness reader, bare grouped count": lambda p: _grouped_on(scan_polars(p)),
    "dpwitness reader, exact path, bare mean": lambda p: _mean_on(scan_polars(p, exact=True), _number("hours")),
    "dpwitness byte check alone (not cached)": lambda p: _uncached(reader.native_is_exact, p),
    "dpwitness Session.mean (DP)": lambda p: Session(p, epsilon=1.0, dtypes=HOURS).mean("hours", (0, 100), epsilon=1.0),
    "dpwitness Session.count by sex (DP)": lambda p: Session(p, epsilon=1.0).count(by="sex", keys=["F", "M"], epsilon=1.0),
    "dpwitness Session.mean (DP), check not cached": lambda p: _uncached(
        lambda p: Session(p, epsilon=1.0, dtypes=HOURS).mean("hours", (0, 100), epsilon=1.0), p
    ),
    "dpwitness Session.count by sex (DP), check not cached": lambda p: _uncached(
        lambda p: Session(p, epsilon=1.0).count(by="sex", keys=["F", "M"], epsilon=1.0), p
    ),
}
PAIRS = {
    "mean": ("polars scan_csv (inferred) mean", "dpwitness Session.mean (DP)"),
    "grouped count": ("polars scan_csv (inferred) grouped count", "dpwitness Session.count by sex (DP)"),
    "mean, first read of the file": ("polars scan_csv (inferred) mean", "dpwitness Session.mean (DP), check not cached"),
    "grouped count, first read of the file": (
        "polars scan_csv (inferred) grouped count",
        "dpwitness Session.count by sex (DP), check not cached",
    ),
}


def _uncached(run: Callable[[Path], object], path: Path) -> object:
    """``run`` as on a file the process has not checked yet (the fast path's byte check included)."""
    reader._CHECKS.clear()
    return run(path)


def _spreads(runs: dict[str, Callable[[], object]], repeats: int) -> dict[str, dict[str, float]]:
    return {name: spread(samples) for name, samples in interleaved(runs, repeats).items()}


def measure(path: Path, repeats: int) -> dict[str, dict[str, float]]:
    return _spreads({name: (lambda run=run: run(path)) for name, run in RUNS.items()}, repeats)  # type: ignore[misc]


def measure_spark(path: Path, repeats: int = 3) -> dict[str, dict[str, float]]:
    from pyspark.sql import functions as F

    from dpwitness.engines.spark import local_session

    spark = local_session()
    csv = spark.read.option("header", True)
    runs: dict[str, Callable[[], object]] = {
        "spark.read.csv grouped count": lambda: csv.csv(str(path)).groupBy("sex").count().collect(),
        "dpwitness Session(engine=spark).count by sex": lambda: Session(path, epsilon=1.0, engine="spark").count(
            by="sex", keys=["F", "M"], epsilon=1.0
        ),
        "spark.read.csv mean": lambda: csv.csv(str(path)).select(F.mean(F.col("hours").cast("double"))).collect(),
        "dpwitness Session(engine=spark).mean": lambda: Session(path, epsilon=1.0, engine="spark", dtypes=HOURS).mean(
            "hours", (0, 100), epsilon=1.0
        ),
    }
    return _spreads(runs, repeats)


def _row(name: str, t: dict[str, Any], width: int = 54) -> str:
    return (
        f"  {name:{width}} wall {t['wall_s']:6.2f} s [{t['wall_min_s']:.2f}–{t['wall_max_s']:.2f}]"
        f"  CPU {t['cpu_s']:6.2f} s [{t['cpu_min_s']:.2f}–{t['cpu_max_s']:.2f}]"
    )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rows", type=int, default=5_000_000)
    parser.add_argument("--repeats", type=int, default=5, help="timed rounds after the warm-up (default 5)")
    parser.add_argument("--spark", action="store_true", help="also time the Spark engine against spark.read.csv")
    options = parser.parse_args()
    with tempfile.TemporaryDirectory() as folder:
        path = generate(options.rows, Path(folder) / "people.csv")
        size = path.stat().st_size / 1e6
        print(f"{options.rows:,} rows, {size:.0f} MB; median of {options.repeats} interleaved rounds after a warm-up, [min–max]")
        print(f"{cpu_model()}, {os.cpu_count()} cores; Polars {pl.__version__}; load before: {os.getloadavg()[0]:.2f} (1-min)")
        times = measure(path, options.repeats)
        for name, timing in times.items():
            print(_row(name, timing))
        for what, (polars, ours) in PAIRS.items():
            wall = times[ours]["wall_s"] / times[polars]["wall_s"]
            cpu = times[ours]["cpu_s"] / times[polars]["cpu_s"]
            verdict = "met" if wall <= 1.3 else "MISSED"
            print(f"  ratio {what}: wall {wall:.2f}x, CPU {cpu:.2f}x (target <= 1.3x, median wall: {verdict})")
        print(f"load after: {os.getloadavg()[0]:.2f} (1-min)")
        if options.spark:
            for name, timing in measure_spark(path).items():
                print(_row(name, timing, 46))
            print(f"load after Spark: {os.getloadavg()[0]:.2f} (1-min)")


if __name__ == "__main__":
    main()
