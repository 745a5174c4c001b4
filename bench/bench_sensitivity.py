"""Benchmark of the sensitivity witness: time to find the old replace-one Δ bug, and the sweep's runtime.

    python3 bench/bench_sensitivity.py            # 10 seeds of the bug search, then the library sweep (both engines)
    python3 bench/bench_sensitivity.py --quick    # 3 seeds, no sweep
    python3 bench/bench_sensitivity.py --no-spark # the sweep through Polars only

Targets (issue 10): the search finds today's replace-one bug, run against the *old* derivation,
in ≤ 10 s; the whole library sweep (tests/witness/test_sensitivity_library.py, Polars and Spark) runs in
CI in ≤ 3 minutes.

The old derivation, reproduced here on purpose as a wrong claim: an ungrouped replace-one sum
over [L, U] = [10, 20] on a nullable column was given Δ = U − L = 10. A null (which adds 0)
replaced by a value ≥ 10 moves the sum by up to max(U, 0) − min(L, 0) = 20. The search is run
(a) on a plain Polars function and (b) on the Polars engine's exact aggregate of the library's
own ``Query(statistic="sum", bounds=(10, 20), neighbours="replace-one")``, each from a cold start
(a fresh search, no example database). Writes bench/results/sensitivity.json, prints Markdown.
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import re
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

import polars as pl

from dpwitness import sensitivity_search
from dpwitness.engines import engine_for
from dpwitness.query.queries import Query

LOW, HIGH = 10.0, 20.0
OLD_DELTA = HIGH - LOW  # the old replace-one derivation: U − L
ROOT = Path(__file__).resolve().parents[1]
KEY = (1, 2, 3, 4)


def plain_sum(frame: pl.DataFrame) -> float:
    return float(frame["x"].fill_nan(None).clip(LOW, HIGH).sum())


def engine_sum() -> Any:
    engine = engine_for("polars")
    query = Query(statistic="sum", column="x", bounds=(LOW, HIGH), epsilon=1.0, neighbours="replace-one")

    def run(frame: pl.DataFrame) -> float:
        value = engine.aggregate(engine.open(frame), query, selection_key=KEY)["sum"]
        assert isinstance(value, float)
        return value

    return run, query.parts[0].sensitivity


def find_the_old_bug(seeds: int) -> list[dict[str, Any]]:
    rows = []
    on_engine, fixed_delta = engine_sum()
    for name, fn in (("Polars function", plain_sum), ("Polars engine, library Query", on_engine)):
        for seed in range(seeds):
            started = time.perf_counter()
            result = sensitivity_search(fn, columns={"x": pl.Float64}, claimed=OLD_DELTA, neighbours="replace-one", seed=seed)
            seconds = time.perf_counter() - started
            rows.append(
                {
                    "target": name,
                    "seed": seed,
                    "found": result.violated,
                    "shift": result.shift,
                    "pairs_tried": result.trials,
                    "rows_in_minimal_pair": [result.d.height, result.d_prime.height],
                    "seconds": seconds,
                    "fixed_delta": fixed_delta,
                }
            )
    return rows


def sweep(*, spark: bool) -> dict[str, Any]:
    """Run tests/witness/test_sensitivity_library.py in a fresh pytest; wall time, CPU time (pytest and every
    process under it, the Spark JVM included) and the time spent in each kind of test."""
    import psutil

    command = [sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", "--durations=0"]
    command += [str(ROOT / "tests" / "witness" / "test_sensitivity_library.py")]
    if not spark:
        command += ["-m", "not spark"]
    started = time.perf_counter()
    cpu: dict[int, float] = {}
    with tempfile.TemporaryFile(mode="w+") as log:  # not a pipe: Spark's log lines would fill it and block pytest
        child = subprocess.Popen(command, stdout=log, stderr=subprocess.STDOUT, text=True, cwd=ROOT)
        reader = psutil.Process(child.pid)
        while child.poll() is None:
            try:
                for process in [reader, *reader.children(recursive=True)]:
                    times = process.cpu_times()
                    cpu[process.pid] = times.user + times.system + times.children_user + times.children_system
            except psutil.Error:
                pass
            time.sleep(0.5)
        log.seek(0)
        output = log.read()
    seconds = time.perf_counter() - started
    phases: dict[str, float] = {}
    for line in output.splitlines():
        match = re.match(r"\s*([0-9.]+)s (call|setup|teardown)\s+\S+::(test_[a-z0-9_]+)", line)
        if match:
            phases[match.group(3)] = phases.get(match.group(3), 0.0) + float(match.group(1))
    summary = next((line for line in reversed(output.splitlines()) if " passed" in line or " failed" in line), output[-200:])
    return {
        "engines": "Polars and Spark" if spark else "Polars",
        "seconds": seconds,
        "cpu_seconds": sum(cpu.values()),
        "seconds_by_test": phases,
        "passed": child.returncode == 0,
        "summary": summary.strip("= "),
    }


def tightness() -> dict[str, Any]:
    """How close the Polars sweep's search came to each derived Δ: the fraction of parts it reached.

    A part whose largest shift found equals Δ is *tight*: the derivation is exact there and
    the search proves it could see a violation. Below Δ means the search did not find the
    worst pair in its trials, or Δ is conservative there (the sum of worst cases per row).
    """
    sys.path.insert(0, str(ROOT / "tests" / "witness"))
    import test_sensitivity_library as sweep_module

    parts = []
    for index, query in enumerate(sweep_module.CASES):
        for name, result in sweep_module._polars_search(index).items():
            if result.claimed > 0:
                parts.append(
                    {"query": f"{query.neighbours.value}: {query.label}", "part": name, "ratio": result.worst / result.claimed}
                )
    reached = [p for p in parts if p["ratio"] >= 1 - 1e-9]
    return {
        "parts": len(parts),
        "reached_delta": len(reached),
        "median_ratio": statistics.median(p["ratio"] for p in parts),
        "lowest": sorted(parts, key=lambda p: p["ratio"])[:5],
    }


def table(rows: list[dict[str, Any]]) -> str:
    lines = [
        "| target | seeds | found | median s | max s | pairs tried (median) | minimal pair |",
        "|---|---|---|---|---|---|---|",
    ]
    for target in dict.fromkeys(r["target"] for r in rows):
        mine = [r for r in rows if r["target"] == target]
        sizes = {tuple(r["rows_in_minimal_pair"]) for r in mine}
        lines.append(
            f"| {target} | {len(mine)} | {sum(r['found'] for r in mine)}/{len(mine)} | "
            f"{statistics.median(r['seconds'] for r in mine):.2f} | {max(r['seconds'] for r in mine):.2f} | "
            f"{statistics.median(r['pairs_tried'] for r in mine):.0f} | "
            f"{', '.join(f'{a} vs {b} rows' for a, b in sorted(sizes))} |"
        )
    return "\n".join(lines)


def report_bug_search(rows: list[dict[str, Any]]) -> None:
    print(f"## Finding the old replace-one Δ (claimed U − L = {OLD_DELTA:g} for a sum over [{LOW:g}, {HIGH:g}])\n")
    print(table(rows))
    worst = max(r["seconds"] for r in rows)
    print(f"\ntarget ≤ 10 s: {'met' if worst <= 10 and all(r['found'] for r in rows) else 'MISSED'} (slowest {worst:.2f} s)")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="3 seeds, no sweep")
    parser.add_argument("--no-sweep", action="store_true", help="only the bug search (10 seeds)")
    parser.add_argument("--no-spark", action="store_true", help="sweep through Polars only")
    parser.add_argument("--tightness", action="store_true", help="only: how close the Polars sweep came to each Δ")
    parser.add_argument("--sweep-only", action="store_true", help="only the library sweep")
    args = parser.parse_args()
    if args.tightness:
        found = tightness()
        print(
            f"searched shift reached Δ on {found['reached_delta']} of {found['parts']} parts with Δ > 0 "
            f"(median shift/Δ {found['median_ratio']:.2f}); lowest: {json.dumps(found['lowest'], indent=1)}"
        )
        return
    rows = [] if args.sweep_only else find_the_old_bug(3 if args.quick else 10)
    result: dict[str, Any] = {"bug_search": rows} if rows else {}
    if rows:
        report_bug_search(rows)
    if not (args.quick or args.no_sweep):
        swept = sweep(spark=not args.no_spark)
        result["sweep"] = swept
        print(
            f"\n## Library sweep ({swept['engines']})\n\n{swept['summary']}: {swept['seconds']:.0f} s wall, "
            f"{swept['cpu_seconds']:.0f} CPU-s (load average {os.getloadavg()[0]:.1f} on {os.cpu_count()} cores); "
            f"target ≤ 180 s: {'met' if swept['seconds'] <= 180 and swept['passed'] else 'MISSED'}"
        )
        for name, spent in sorted(swept["seconds_by_test"].items(), key=lambda item: -item[1]):
            print(f"- {name}: {spent:.1f} s")
    result["machine"] = {"python": platform.python_version(), "cpus": os.cpu_count(), "load_average": os.getloadavg()}
    out = ROOT / "bench" / "results"
    out.mkdir(exist_ok=True)
    path = out / "sensitivity.json"
    kept = json.loads(path.read_text()) if path.exists() else {}  # a partial run updates only its own figures
    path.write_text(json.dumps({**kept, **result}, indent=2))


if __name__ == "__main__":
    main()
