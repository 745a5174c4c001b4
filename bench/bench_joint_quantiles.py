"""Joint quantiles (JointExp) against separate quantiles at the same ε: rank error and CPU time.

    python bench/bench_joint_quantiles.py               # 100 seeded runs per cell
    python bench/bench_joint_quantiles.py --runs 50 --json bench/results/joint_quantiles.json
    python bench/bench_joint_quantiles.py --no-anchors  # without the anchors venv's OpenDP, diffprivlib, python-dp

Data (bounds [0, 100]): Adult's ``age`` when ../shared/data/adult.csv is found (``--data adult``,
the default), else, or with ``--data lognormal``, as many draws of a skewed continuous law
(lognormal, median e^3.5 ≈ 33, σ = 0.5; fixed seed). Adult's ages are whole years: every
estimate between two ages has the same rank, so a floor of rank error that no grid method
below one year escapes dominates at ε = 1 there; the continuous sample has no such floor. Add/remove one
record, pure ε-DP, ε ∈ {0.1, 1}, 3 levels (quartiles) and 7 (5, 10, 25, 50, 75, 90, 95%).

Methods, each given the whole ε of the cell:
- joint: :func:`dpwitness.mechanisms.joint_quantiles.joint_quantiles`, JointExp on 256 bins, one draw;
- separate: one Laplace histogram of 64 bins per level at ε/m each (dpwitness's single-quantile
  method, the issue's "separate quantiles splitting ε");
- shared histogram: one Laplace histogram of 64 bins at ε, every level post-processed from it
  (what ``Session.quantile(q=[…])`` releases today).

With the anchors venv (``bash bench/anchors/setup.sh``; ``--no-anchors`` skips them), the same
cells for OpenDP 0.16's ``make_private_quantile`` (exponential mechanism per level at ε/m, over
the 4,097 edges of JointExp's 4,096 bins), diffprivlib 0.6.6's ``tools.quantile`` (ε split over the
levels inside the call) and python-dp 1.1.5's ``QuantileTree`` (every level from one tree),
through ``bench/anchors/quantile_anchors.py``, scored by the same rank error. Their CPU time
includes their pass over the column (they take the data, not bin counts).

Rank error of an estimate o for level q: the distance from q·n to [#{x < o}, #{x ≤ o}] (0 when
o is a true q-quantile), averaged over the levels of a release; the table gives its mean and
its 5th–95th percentiles over the seeded runs. CPU time: the median process time of one release
(all levels), from the exact bin counts (the engine's aggregate is not timed).
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import statistics
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import numpy as np
import numpy.typing as npt

import dpwitness
from dpwitness.common.data import ADULT_ROWS, adult_column
from dpwitness.mechanisms.additive import Laplace
from dpwitness.mechanisms.joint_quantiles import DEFAULT_BINS as JOINT_BINS
from dpwitness.mechanisms.joint_quantiles import bin_counts, joint_quantiles
from dpwitness.mechanisms.quantiles import DEFAULT_BINS, GUARD_ALPHA, estimate, rank_error
from dpwitness.privacy.neighbours import Neighbours, histogram_sensitivity

sys.path.insert(0, str(Path(__file__).resolve().parent))
from bench_quantiles import measure_anchors  # bench/ is not a package
from machine import cpu_model

BOUNDS = (0.0, 100.0)
EPSILONS = (0.1, 1.0)
LEVELS: dict[int, tuple[float, ...]] = {3: (0.25, 0.5, 0.75), 7: (0.05, 0.1, 0.25, 0.5, 0.75, 0.9, 0.95)}
Method = Callable[[float, tuple[float, ...], int], list[float]]


def mean_rank_error(ordered: npt.NDArray[np.float64], estimates: list[float], levels: tuple[float, ...]) -> float:
    """The mean over levels of the distance from q·n to [#{x < o}, #{x ≤ o}] (``ordered``: the data, sorted)."""
    errors = []
    for q, value in zip(levels, estimates, strict=True):
        below = float(np.searchsorted(ordered, value, side="left"))
        upto = float(np.searchsorted(ordered, value, side="right"))
        target = q * ordered.size
        errors.append(max(below - target, target - upto, 0.0))
    return float(np.mean(errors))


def methods(data: npt.NDArray[np.float64]) -> dict[str, Method]:
    """The three methods, each a function of (ε, levels, seed) on the exact bin counts of ``data``."""
    joint_counts = bin_counts(data, BOUNDS, JOINT_BINS)
    histogram = bin_counts(data, BOUNDS, DEFAULT_BINS).astype(np.float64)

    def histogram_release(epsilon: float, levels: tuple[float, ...], seed: int) -> list[float]:
        delta = histogram_sensitivity(Neighbours.ADD_REMOVE)
        mechanism = Laplace(sensitivity=delta, epsilon=epsilon, dimension=DEFAULT_BINS, changed_coordinates=1)
        noisy = np.asarray(mechanism.release(histogram, seed=seed).value, dtype=np.float64)
        return estimate(noisy, levels, BOUNDS, rank_error(mechanism.scale, DEFAULT_BINS, GUARD_ALPHA))

    def joint(epsilon: float, levels: tuple[float, ...], seed: int) -> list[float]:
        release = joint_quantiles(joint_counts, levels, bounds=BOUNDS, epsilon=epsilon, neighbours="add-remove", seed=seed)
        return [float(v) for v in release.value]

    def separate(epsilon: float, levels: tuple[float, ...], seed: int) -> list[float]:
        share = epsilon / len(levels)
        return [histogram_release(share, (q,), seed * 1000 + i)[0] for i, q in enumerate(levels)]

    return {
        f"joint (JointExp, {JOINT_BINS} bins)": joint,
        f"separate ({DEFAULT_BINS}-bin histogram per level, ε/m each)": separate,
        f"shared histogram ({DEFAULT_BINS} bins, ε)": histogram_release,
    }


def anchor_rows(
    data: npt.NDArray[np.float64], csv_path: Path, epsilon: float, count: int, levels: tuple[float, ...], runs: int
) -> list[dict[str, Any]]:
    """The anchors' rows of one cell (quantile_anchors.py in the anchors venv), or one row saying why not."""
    anchors, skipped = measure_anchors(csv_path, epsilon, levels, runs, candidates=JOINT_BINS + 1)
    if skipped is not None:
        why = skipped.splitlines()[0].removeprefix("anchors skipped: ")
        return [{"epsilon": epsilon, "levels": count, "method": "anchors", "skipped": why}]
    ordered, rows = np.sort(data), []
    for row in anchors:
        if "skipped" in row:
            rows.append({"epsilon": epsilon, "levels": count, "method": row["name"], "skipped": row["skipped"]})
            continue
        errors = [mean_rank_error(ordered, values, levels) for values in row["values"]]
        rows.append(
            {
                "epsilon": epsilon,
                "levels": count,
                "method": f"{row['name']} {row.get('version', '')} (data pass included)".replace("  ", " "),
                "mean": float(np.mean(errors)),
                "p5": float(np.quantile(errors, 0.05)),
                "p95": float(np.quantile(errors, 0.95)),
                "cpu_ms": 1e3 * statistics.median(row["cpu_times"]),
                "runs": len(errors),
            }
        )
    return rows


def run(data: npt.NDArray[np.float64], runs: int, csv_path: Path | None = None) -> list[dict[str, Any]]:
    """One row per (ε, m, method): rank errors over ``runs`` seeded releases, median CPU time; with
    ``csv_path`` (the data as a CSV with an ``age`` column) the anchors' rows too."""
    ordered = np.sort(data)
    rows = []
    for epsilon in EPSILONS:
        for count, levels in LEVELS.items():
            if csv_path is not None:
                rows += anchor_rows(data, csv_path, epsilon, count, levels, runs)
            for name, method in methods(data).items():
                method(epsilon, levels, 10**6)  # warm-up (tables, caches)
                errors, cpu = [], []
                for seed in range(runs):
                    start = time.process_time()
                    estimates = method(epsilon, levels, seed)
                    cpu.append(time.process_time() - start)
                    errors.append(mean_rank_error(ordered, estimates, levels))
                rows.append(
                    {
                        "epsilon": epsilon,
                        "levels": count,
                        "method": name,
                        "mean": float(np.mean(errors)),
                        "p5": float(np.quantile(errors, 0.05)),
                        "p95": float(np.quantile(errors, 0.95)),
                        "cpu_ms": 1e3 * statistics.median(cpu),
                        "runs": runs,
                    }
                )
    return rows


def machine() -> dict[str, Any]:
    return {
        "cpu": cpu_model(),
        "cores": os.cpu_count(),
        "load_average": os.getloadavg(),
        "python": platform.python_version(),
        "numpy": np.__version__,
        "dpwitness": getattr(dpwitness, "__version__", "?"),
    }


def markdown(rows: list[dict[str, Any]], source: str, rows_in_data: int, info: dict[str, Any]) -> str:
    lines = [
        f"Rank error (rows) of one release, mean over levels; {max(r.get('runs', 0) for r in rows)} runs per cell; "
        f"{source}, n = {rows_in_data:,}, bounds {BOUNDS}, add/remove.",
        "",
        "| ε | levels | method | mean rank error | 5th–95th pct | CPU ms / release |",
        "|---|---|---|---|---|---|",
    ]
    for r in rows:
        if "skipped" in r:
            lines.append(f"| {r['epsilon']:g} | {r['levels']} | {r['method']} | skipped: {r['skipped']} | | |")
            continue
        spread = f"{r['p5']:.1f}–{r['p95']:.1f}"
        lines.append(f"| {r['epsilon']:g} | {r['levels']} | {r['method']} | {r['mean']:.1f} | {spread} | {r['cpu_ms']:.2f} |")
    lines += [
        "",
        f"{info['cpu']}, {info['cores']} cores, load average {info['load_average'][0]:.2f} · Python {info['python']} · "
        f"NumPy {info['numpy']} · dpwitness {info['dpwitness']}",
    ]
    return "\n".join(lines)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n", 1)[0])
    parser.add_argument("--runs", type=int, default=100, help="seeded releases per cell (default 100)")
    parser.add_argument("--data", choices=("adult", "lognormal"), default="adult", help="adult (default) or lognormal")
    parser.add_argument("--json", type=Path, help="also write the rows and the machine facts here")
    parser.add_argument("--no-anchors", action="store_true", help="skip OpenDP, diffprivlib and python-dp")
    args = parser.parse_args()
    ages = adult_column("age") if args.data == "adult" else None
    source = "Adult age"
    if ages is None:
        ages = np.random.default_rng(2021).lognormal(mean=3.5, sigma=0.5, size=ADULT_ROWS)
        source = "lognormal(3.5, 0.5) sample" + (" (Adult not found)" if args.data == "adult" else "")
    info = machine()
    with tempfile.TemporaryDirectory() as folder:
        csv_path = None
        if not args.no_anchors:  # the anchors read the same values from a CSV (one column, full precision)
            csv_path = Path(folder) / "age.csv"
            csv_path.write_text("age\n" + "\n".join(repr(float(v)) for v in ages) + "\n")
        rows = run(ages, args.runs, csv_path)
    print(markdown(rows, source, ages.size, info))
    if args.json:
        args.json.parent.mkdir(parents=True, exist_ok=True)
        args.json.write_text(json.dumps({"source": source, "n": int(ages.size), "rows": rows, "machine": info}, indent=2))


if __name__ == "__main__":
    main()
