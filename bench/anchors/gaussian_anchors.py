"""Gaussian-noise throughput of OpenDP; runs INSIDE the anchors venv, prints JSON.

    "$DPW_ANCHORS_VENV"/bin/python bench/anchors/gaussian_anchors.py --size 100000 --repeats 3 --scale 4.2247

Called by ``bench/bench_gaussian.py`` through a subprocess (built by ``bench/anchors/setup.sh``).
Imports nothing from dpwitness. OpenDP 0.16: ``dp.m.make_gaussian`` over
``dp.vector_domain(dp.atom_domain(T=float))`` (and ``T=int``, its exact discrete Gaussian) with the
L2 distance, one call for the whole vector, default (secure) randomness; its privacy map gives ρ
for Δ = 1. A library that does not import is reported as ``{"name": ..., "skipped": reason}``.
"""

from __future__ import annotations

import argparse
import json
import statistics
import sys
import time
from collections.abc import Callable
from typing import Any


def _timed(run: Callable[[], object], repeats: int) -> tuple[list[float], list[float]]:
    run()
    wall, cpu = [], []
    for _ in range(repeats):
        start_cpu, start = time.process_time(), time.perf_counter()
        run()
        wall.append(time.perf_counter() - start)
        cpu.append(time.process_time() - start_cpu)
    return wall, cpu


def opendp_rows(size: int, repeats: int, scale: float) -> list[dict[str, Any]]:
    try:
        from importlib.metadata import version

        import opendp.prelude as dp
    except ImportError as exc:
        return [{"name": "OpenDP make_gaussian", "skipped": f"opendp does not import: {exc}"}]
    dp.enable_features("contrib")
    rows = []
    for label, kind in (("float", float), ("int (exact discrete)", int)):
        atom = dp.atom_domain(T=float, nan=False) if kind is float else dp.atom_domain(T=int)
        measurement = dp.m.make_gaussian(dp.vector_domain(atom), dp.l2_distance(T=kind), scale=scale)
        zero = kind(0)
        data = [zero] * size
        wall, cpu = _timed(lambda m=measurement, d=data: m(d), repeats)
        rows.append(
            {
                "name": f"OpenDP {version('opendp')} make_gaussian, {label}",
                "secure": True,
                "size": size,
                "times": wall,
                "best_rate": size / min(wall),
                "median_rate": size / statistics.median(wall),
                "cpu_rate": size / max(min(cpu), 1e-9),
                "rho_for_sensitivity_1": float(measurement.map(kind(1))),
                "note": "vector call, default randomness",
            }
        )
    return rows


def main() -> int:
    parser = argparse.ArgumentParser()
    parser.add_argument("--size", type=int, default=100_000)
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--scale", type=float, default=4.2247)
    args = parser.parse_args()
    json.dump({"python": sys.version.split()[0], "rows": opendp_rows(args.size, args.repeats, args.scale)}, sys.stdout)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
