"""DP quantiles of the anchor libraries; runs INSIDE the anchors venv and prints JSON.

    .venv-anchors/bin/python bench/anchors/quantile_anchors.py DATA.csv --column age --bounds 0 100 \
        --epsilon 1 --quantiles 0.5 --repeats 300

Called by ``bench/bench_quantiles.py`` in a subprocess (the anchors pin their own NumPy, Polars
and scikit-learn, so they live in their own venv, built by ``bench/anchors/setup.sh``). Imports
nothing from dpwitness. Prints the raw released values and the time of each release; the
caller computes the errors, so every library is scored by one piece of code.

- OpenDP 0.16: ``dp.m.make_private_quantile`` (the exponential mechanism over candidates,
  Smith 2011, with permute-and-flip / Gumbel noise) on ``vector_domain(atom_domain(T=float))``
  under the symmetric (add/remove) distance and pure DP; the noise scale is found with
  ``dp.binary_search_param`` so that one release is ``ε/len(q)``-DP (several q are released
  one by one). Candidates: ``--candidates`` equally spaced points of [L, U] (default 65,
  the edges of dpwitness' default 64 bins, so both resolve the same grid). Timed per call of the
  measurement on the column as a Python list (the conversion is done once, outside).
- diffprivlib 0.6.6: ``diffprivlib.tools.quantile(array, q, epsilon=ε, bounds=(L, U))``
  (the exponential mechanism over the intervals between sorted values; several q split ε
  evenly inside the call), on a NumPy array.
- python-dp 1.1.5 (Google's C++ library): ``QuantileTree(L, U, 4, 16)`` (its default height and
  branching), every value added with ``add_entry``, then ``compute_quantiles(ε, 0, 1, 1, q,
  "laplace")``: a hierarchical histogram with Laplace noise, all q from one tree. The tree is
  rebuilt for every release (its ingestion is part of the release, as the scan is for the others).

A library that does not import is reported as ``{"name": ..., "skipped": reason}``.
"""

from __future__ import annotations

import argparse
import csv
import json
import platform
import sys
import time
import warnings
from collections.abc import Callable
from typing import Any


def read_column(path: str, column: str) -> list[float]:
    with open(path, newline="") as handle:
        return [float(row[column]) for row in csv.DictReader(handle) if row[column] not in ("", "NA", "?")]


def _timed_releases(release: Callable[[], list[float]], repeats: int) -> tuple[list[list[float]], list[float], list[float]]:
    """Released values, wall times and CPU times of ``repeats`` releases after one warm-up."""
    release()
    values, times, cpu = [], [], []
    for _ in range(repeats):
        start_cpu, start = time.process_time(), time.perf_counter()
        values.append([float(v) for v in release()])
        times.append(time.perf_counter() - start)
        cpu.append(time.process_time() - start_cpu)
    return values, times, cpu


def bench_opendp(data: list[float], args: argparse.Namespace) -> dict[str, Any]:
    import opendp.prelude as dp

    dp.enable_features("contrib")
    low, high = args.bounds
    count = args.candidates
    candidates = [low + (high - low) * i / (count - 1) for i in range(count)]
    share = args.epsilon / len(args.quantiles)
    space = (dp.vector_domain(dp.atom_domain(T=float, nan=False)), dp.symmetric_distance())

    def make(q: float) -> Any:
        return dp.binary_search_chain(
            lambda s: dp.m.make_private_quantile(*space, dp.max_divergence(), candidates, q, s), d_in=1, d_out=share
        )

    started = time.perf_counter()
    measurements = [make(q) for q in args.quantiles]
    setup = time.perf_counter() - started
    values, times, cpu = _timed_releases(lambda: [m(data) for m in measurements], args.repeats)
    return {
        "name": "OpenDP make_private_quantile",
        "library": "opendp",
        "version": dp.__version__,
        "method": f"exponential mechanism over {count} candidates, one release per q at ε/{len(args.quantiles)}",
        "setup_s": setup,
        "values": values,
        "times": times,
        "cpu_times": cpu,
    }


def bench_diffprivlib(data: list[float], args: argparse.Namespace) -> dict[str, Any]:
    import diffprivlib
    import numpy as np
    from diffprivlib.tools import quantile

    array = np.asarray(data, dtype=np.float64)
    quantiles = list(args.quantiles)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        values, times, cpu = _timed_releases(
            lambda: list(np.atleast_1d(quantile(array, quantiles, epsilon=args.epsilon, bounds=tuple(args.bounds)))),
            args.repeats,
        )
    return {
        "name": "diffprivlib tools.quantile",
        "library": "diffprivlib",
        "version": diffprivlib.__version__,
        "method": "exponential mechanism over the sorted data's intervals, ε split evenly over q",
        "setup_s": 0.0,
        "values": values,
        "times": times,
        "cpu_times": cpu,
    }


def bench_pydp(data: list[float], args: argparse.Namespace) -> dict[str, Any]:
    import pydp
    from pydp.algorithms.quantile_tree import QuantileTree

    low, high = args.bounds

    def release() -> list[float]:
        tree = QuantileTree(low, high, 4, 16)  # Google's defaults: height 4, branching 16
        for value in data:
            tree.add_entry(value)
        return list(tree.compute_quantiles(args.epsilon, 0.0, 1, 1, list(args.quantiles), "laplace"))

    values, times, cpu = _timed_releases(release, args.repeats)
    return {
        "name": "python-dp QuantileTree",
        "library": "python-dp",
        "version": pydp.__version__,
        "method": "Laplace noise on a 16-ary tree of height 4 over [L, U], all q from one tree",
        "setup_s": 0.0,
        "values": values,
        "times": times,
        "cpu_times": cpu,
    }


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("data")
    parser.add_argument("--column", default="age")
    parser.add_argument("--bounds", type=float, nargs=2, default=(0.0, 100.0))
    parser.add_argument("--epsilon", type=float, default=1.0)
    parser.add_argument("--quantiles", type=float, nargs="+", default=[0.5])
    parser.add_argument("--candidates", type=int, default=65)
    parser.add_argument("--repeats", type=int, default=300)
    args = parser.parse_args(argv)
    data = read_column(args.data, args.column)
    rows = []
    for name, bench in (("opendp", bench_opendp), ("diffprivlib", bench_diffprivlib), ("python-dp", bench_pydp)):
        try:
            rows.append(bench(data, args))
        except ImportError as error:
            rows.append({"name": name, "skipped": f"{type(error).__name__}: {error}"})
    json.dump({"python": sys.version.split()[0], "platform": platform.platform(), "rows": rows}, sys.stdout)
    return 0


if __name__ == "__main__":
    sys.exit(main())
