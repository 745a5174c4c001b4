"""Time one DP statistic through OpenDP's Polars integration; print one JSON object.

Runs in the anchors venv (``bash bench/anchors/setup.sh``; OpenDP 0.16 with polars 1.36.1):

    .venv-anchors/bin/python bench/anchors/opendp_polars.py PATH --stat sum [--max-contributions 5] [--repeats 5]

The measured time for one query is what a user waits for: building the query on an existing
``dp.Context.compositor`` (OpenDP checks the plan and derives the sensitivity), ``release()``
and ``collect()``. The context is built once, outside the timing (its time is reported as
``setup_s``), like dpwitness' ``Session``. Peak RSS is this process's ``ru_maxrss``.

Queries, ε = 1 each, add/remove one row (OpenDP's ``contributions=1``) or, with
``--max-contributions k``, one person with one ``user_id`` contributing up to k rows
(``unit_of(contributions=1, identifier="user_id")`` plus ``truncate_per_group(k)``, OpenDP's
random row selection: with an identifier, ``contributions`` counts the identifiers a person may
hold, so ``contributions=k`` as well would make OpenDP's noise k times what the bound needs).
The JSON gives the noise scale OpenDP derived for each released column (``scales``, from the
query's ``summarize()``), so the unit can be checked: k·100/ε for the bounded sum.

* count      ``dp.len()``
* sum        ``pl.col("age").fill_null(0).dp.sum((0, 100))``
* mean       ``pl.col("age").fill_null(0).dp.mean((0, 100))`` (noisy sum / noisy length)
* histogram  ``group_by("category").agg(dp.len())`` over the 20 public category keys
"""

from __future__ import annotations

import argparse
import json
import resource
import statistics
import sys
import time
import warnings
from typing import Any

CATEGORIES = [f"c{i:02d}" for i in range(20)]


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("path")
    parser.add_argument("--stat", choices=["count", "sum", "mean", "histogram"], required=True)
    parser.add_argument("--max-contributions", type=int, default=None)
    parser.add_argument("--repeats", type=int, default=5)
    parser.add_argument("--rows", type=int, required=True, help="public upper bound on the row count (OpenDP margin)")
    args = parser.parse_args(argv)

    import opendp.prelude as dp
    import polars as pl

    dp.enable_features("contrib")
    warnings.simplefilter("ignore", FutureWarning)  # dp.len's coming change of default sign
    bounded = args.max_contributions is not None
    started = time.perf_counter()
    margins = [dp.polars.Margin(by=[], max_length=args.rows)]
    if args.stat == "histogram":
        margins.append(dp.polars.Margin(by=["category"], invariant="keys", max_length=args.rows))
    data = pl.scan_parquet(args.path)
    if args.stat == "histogram":
        # OpenDP wants a plain string key; the Parquet column is dictionary-encoded (Categorical).
        data = data.with_columns(pl.col("category").cast(pl.String))
    unit = dp.unit_of(contributions=1, identifier="user_id" if bounded else None)
    context = dp.Context.compositor(
        data=data,
        privacy_unit=unit,
        privacy_loss=dp.loss_of(epsilon=float(args.repeats + 1)),
        split_evenly_over=args.repeats + 1,
        margins=margins,
    )
    setup = time.perf_counter() - started

    def planned() -> Any:
        query = context.query()
        if bounded:
            query = query.truncate_per_group(args.max_contributions)
        if args.stat == "count":
            return query.select(dp.len())
        if args.stat == "sum":
            return query.select(pl.col("age").fill_null(0).dp.sum((0, 100)))
        if args.stat == "mean":
            return query.select(pl.col("age").fill_null(0).dp.mean((0, 100)))
        return query.group_by("category").agg(dp.len()).with_keys(pl.LazyFrame({"category": CATEGORIES}))

    def run() -> Any:
        released = planned().release().collect()
        return released.height if args.stat == "histogram" else released.item()

    times = []
    value: Any = None
    error = None
    scales: list[float] = []
    try:
        scales = [float(scale) for scale in planned().summarize()["scale"].to_list()]  # spends nothing
        for _ in range(args.repeats + 1):  # the first run warms caches and is not counted
            t0 = time.perf_counter()
            value = run()
            times.append(time.perf_counter() - t0)
    except Exception as exc:  # report, do not crash the harness
        error = f"{type(exc).__name__}: {exc}"[:500]
    from importlib.metadata import version

    result = {
        "system": "opendp-polars",
        "version": version("opendp"),
        "polars": pl.__version__,
        "stat": args.stat,
        "bounded": bounded,
        "setup_s": setup,
        "times_s": times[1:],
        "median_s": statistics.median(times[1:]) if len(times) > 1 else None,
        "value": value,
        "scales": scales,
        "peak_rss_mb": resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024,
        "error": error,
    }
    json.dump(result, sys.stdout)
    print()


if __name__ == "__main__":
    main()
