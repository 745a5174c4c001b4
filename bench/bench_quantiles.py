"""DP quantiles: dpwitness against OpenDP, diffprivlib and python-dp, error and time side by side, in one run.

    python bench/bench_quantiles.py                           # Adult age in [0, 100], 300 releases each
    python bench/bench_quantiles.py --repeats 100 --json bench/results/quantiles.json
    python bench/bench_quantiles.py --no-anchors              # dpwitness only

Scenarios (add/remove one record, pure ε-DP, bounds [0, 100], the Adult table's ``age``):
the median at ε = 1 (the issue's target: within ±1 year of the true median in ≥ 95% of
releases), the three quartiles at a total ε = 1, and the median at ε = 0.1 and 0.01 (where
the noise starts to matter on 32,561 rows).

- dpwitness: ``Session(frame).quantile("age", q, (0, 100), epsilon=ε)`` with the default secure
  randomness and its default 64 bins: one noisy histogram for all q (one spend). Timed per release on an
  in-memory Polars frame (as the anchors get their data in memory), and, for the first
  scenario, on the CSV path (the scan included).
- the anchors, through ``bench/anchors/quantile_anchors.py`` in the anchors venv (built by
  ``bash bench/anchors/setup.sh``; skipped with a message when absent): OpenDP's
  ``make_private_quantile`` over the 65 edges of the same bins (one release per q, ε split),
  diffprivlib's ``tools.quantile`` (ε split over q inside the call) and python-dp's
  ``QuantileTree`` (Google's hierarchical histogram, all q from one tree).

Every library's releases are scored here by one function: the absolute error against NumPy's
``np.quantile`` of the column, its mean and 95th percentile, and the share within ±1 year.
Time is the median wall and CPU time of one release (all its q), after one warm-up.
docs/benchmarks.md has the figures and their limits.
"""

from __future__ import annotations

import argparse
import datetime as dt
import json
import os
import platform
import statistics
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import numpy as np
import polars as pl

from dpwitness import Session
from dpwitness.common.data import adult_path

HERE = Path(__file__).resolve().parent
REPO = HERE.parent
ANCHORS_SCRIPT = HERE / "anchors" / "quantile_anchors.py"
DEFAULT_ANCHORS_VENV = REPO / ".venv-anchors"
BOUNDS = (0.0, 100.0)
SCENARIOS: tuple[tuple[float, tuple[float, ...]], ...] = ((1.0, (0.5,)), (1.0, (0.25, 0.5, 0.75)), (0.1, (0.5,)), (0.01, (0.5,)))
TARGET_SHARE = 0.95
TOLERANCE = 1.0


def measure_dpwitness(source: Any, epsilon: float, quantiles: tuple[float, ...], repeats: int, *, name: str) -> dict[str, Any]:
    """``repeats`` secure releases of ``quantiles`` of age (after one warm-up), with their times."""
    session = Session(source, epsilon=epsilon * (repeats + 1), dtypes={"age": "integer"})  # a CSV is text until declared

    def release() -> list[float]:
        value = session.quantile("age", list(quantiles), BOUNDS, epsilon=epsilon).value
        return [float(value)] if not isinstance(value, dict) else [float(value[q]) for q in quantiles]

    release()
    values, times, cpu = [], [], []
    for _ in range(repeats):
        start_cpu, start = time.process_time(), time.perf_counter()
        values.append(release())
        times.append(time.perf_counter() - start)
        cpu.append(time.process_time() - start_cpu)
    return {
        "name": name,
        "library": "dpwitness",
        "method": "Laplace histogram of 64 bins (exact discrete noise), all q from one spend",
        "values": values,
        "times": times,
        "cpu_times": cpu,
    }


def measure_anchors(
    data: Path, epsilon: float, quantiles: tuple[float, ...], repeats: int, *, candidates: int | None = None
) -> tuple[list[dict[str, Any]], str | None]:
    """Rows from quantile_anchors.py in the anchors venv, or ([], why they were skipped);
    ``candidates``: OpenDP's grid size (None: the script's default, 65)."""
    python = Path(os.environ.get("DPW_ANCHORS_VENV", DEFAULT_ANCHORS_VENV)) / "bin" / "python"
    if not python.exists():
        return [], f"anchors skipped: {python} not found; run `bash bench/anchors/setup.sh` to build the venv"
    command = [str(python), str(ANCHORS_SCRIPT), str(data), "--column", "age", "--bounds", *map(str, BOUNDS)]
    command += ["--epsilon", str(epsilon), "--repeats", str(repeats), "--quantiles", *map(str, quantiles)]
    if candidates is not None:
        command += ["--candidates", str(candidates)]
    env = dict(os.environ, OMP_NUM_THREADS="1", POLARS_MAX_THREADS="1", RAYON_NUM_THREADS="1")
    try:
        out = subprocess.run(command, capture_output=True, text=True, check=True, env=env, timeout=3600)
    except (subprocess.CalledProcessError, subprocess.TimeoutExpired) as exc:
        return [], f"anchors skipped: quantile_anchors.py failed: {exc} {getattr(exc, 'stderr', '')}"
    rows: list[dict[str, Any]] = json.loads(out.stdout)["rows"]
    return rows, None


def score(row: dict[str, Any], truth: list[float], quantiles: tuple[float, ...]) -> list[dict[str, Any]]:
    """Per q: mean and 95th-percentile absolute error, share within ±1, median times (ms)."""
    if "skipped" in row:
        return [{"name": row["name"], "q": q, "skipped": row["skipped"]} for q in quantiles]
    values = np.asarray(row["values"], dtype=np.float64)
    out = []
    for column, (q, true) in enumerate(zip(quantiles, truth, strict=True)):
        errors = np.abs(values[:, column] - true)
        out.append(
            {
                "name": row["name"],
                "q": q,
                "truth": true,
                "mean_error": float(errors.mean()),
                "p95_error": float(np.quantile(errors, 0.95)),
                "within": float(np.mean(errors <= TOLERANCE)),
                "ms": 1e3 * statistics.median(row["times"]),
                "cpu_ms": 1e3 * statistics.median(row["cpu_times"]),
                "releases": len(values),
            }
        )
    return out


def table(scored: list[dict[str, Any]]) -> str:
    lines = [
        "| ε (total) | q | library | mean abs. error | 95th pct. error | within ±1 year | ms per release (wall) | ms (CPU) |",
        "| --- | --- | --- | --- | --- | --- | --- | --- |",
    ]
    for s in scored:
        if "skipped" in s:
            lines.append(f"| {s['epsilon']:g} | {s['q']:g} | {s['name']} | skipped: {s['skipped']} | | | | |")
            continue
        lines.append(
            f"| {s['epsilon']:g} | {s['q']:g} | {s['name']} | {s['mean_error']:.3f} | {s['p95_error']:.3f} | "
            f"{100 * s['within']:.1f}% | {s['ms']:.2f} | {s['cpu_ms']:.2f} |"
        )
    return "\n".join(lines)


def verdict(scored: list[dict[str, Any]]) -> str:
    target = [
        s
        for s in scored
        if s.get("library") == "dpwitness" and s["epsilon"] == 1.0 and s["quantiles"] == (0.5,) and "within" in s
    ]
    if not target:
        return "target not measured"
    share = min(s["within"] for s in target)
    state = "MET" if share >= TARGET_SHARE else "NOT MET"
    return f"target (median of age at ε = 1 within ±1 year in ≥ 95% of releases): {100 * share:.1f}%, {state}"


def run(data: Path, repeats: int, anchors: bool) -> list[dict[str, Any]]:
    frame = pl.read_csv(data, columns=["age"])
    ages = frame["age"].to_numpy()
    scored: list[dict[str, Any]] = []
    for index, (epsilon, quantiles) in enumerate(SCENARIOS):
        truth = [float(t) for t in np.quantile(ages, quantiles)]
        rows = [measure_dpwitness(frame, epsilon, quantiles, repeats, name="dpwitness (in-memory frame)")]
        if index == 0:
            rows.append(measure_dpwitness(str(data), epsilon, quantiles, repeats, name="dpwitness (CSV path, scan included)"))
        skipped = None
        if anchors:
            anchor_rows, skipped = measure_anchors(data, epsilon, quantiles, repeats)
            rows += anchor_rows
        for row in rows:
            for s in score(row, truth, quantiles):
                scored.append({**s, "epsilon": epsilon, "quantiles": quantiles, "library": row.get("library", row["name"])})
        if skipped:
            print(skipped, file=sys.stderr)
    return scored


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--data", type=Path, default=None, help="CSV with an integer 'age' column (default: the Adult table)")
    parser.add_argument("--repeats", type=int, default=300)
    parser.add_argument("--no-anchors", action="store_true")
    parser.add_argument("--json", type=Path, default=None)
    args = parser.parse_args(argv)
    data = args.data or adult_path()
    if data is None:
        print("the Adult table is absent (set DPWITNESS_ADULT)", file=sys.stderr)
        return 2
    started = time.perf_counter()
    scored = run(Path(data), args.repeats, not args.no_anchors)
    print(f"# DP quantiles of age on {Path(data).name}, bounds [0, 100], {args.repeats} releases per row")
    print(f"# {platform.platform()}, Python {platform.python_version()}, load average {os.getloadavg()[0]:.2f}")
    print(table(scored))
    print(verdict(scored))
    print(f"# total {time.perf_counter() - started:.0f} s")
    if args.json is not None:
        args.json.parent.mkdir(parents=True, exist_ok=True)
        payload = {"when": dt.datetime.now(dt.UTC).isoformat(), "repeats": args.repeats, "scored": scored}
        args.json.write_text(json.dumps(payload, indent=2, default=list) + "\n", encoding="utf-8")
    return 0


if __name__ == "__main__":
    sys.exit(main())
