"""Laplace-noise throughput of the anchor libraries; runs INSIDE the anchors venv, prints JSON.

    "$DPW_ANCHORS_VENV"/bin/python bench/anchors/noise_anchors.py --size 100000 --repeats 5

Called by ``bench/bench_noise.py`` through a subprocess (the anchors pin their own NumPy,
Polars and scikit-learn, so they live in their own venv, built by ``bench/anchors/setup.sh``).
Imports nothing from dpwitness. Every anchor draws Laplace(scale = Δ/ε = 1) noise around 0.0
with the library's default, secure randomness, through its public API:

- OpenDP 0.16: ``dp.m.make_laplace`` over ``dp.vector_domain(dp.atom_domain(T=float))`` with the
  L1 distance: one call for the whole vector (default granularity k, then k = -28, the grid
  dpwitness uses at this scale), and the integer (discrete Laplace) version.
  Needs ``dp.enable_features("contrib")``; 0.16 no longer asks for "floating-point" here.
- diffprivlib 0.6.6: ``mechanisms.Laplace(epsilon=1, sensitivity=1).randomise(0.0)``, one call
  per sample (scalar API; its default RNG is ``random.SystemRandom``).
- python-dp 1.1.5 (Google's C++ library): ``LaplaceMechanism(epsilon=1, sensitivity=1)
  .add_noise(0.0)``, one call per sample (scalar API).

A library that does not import is reported as ``{"name": ..., "skipped": reason}``.
"""

from __future__ import annotations

import argparse
import json
import platform
import statistics
import sys
import time
from collections.abc import Callable
from typing import Any


def _timed(run: Callable[[], object], repeats: int) -> tuple[list[float], list[float]]:
    """Wall and CPU (user + system) times of ``repeats`` calls after one warm-up call."""
    run()  # warm-up (builds tables, loads the shared library)
    wall, cpu = [], []
    for _ in range(repeats):
        start_cpu = time.process_time()
        start = time.perf_counter()
        run()
        wall.append(time.perf_counter() - start)
        cpu.append(time.process_time() - start_cpu)
    return wall, cpu


def _row(
    name: str, library: str, version: str, api: str, size: int, timed: tuple[list[float], list[float]], note: str = ""
) -> dict[str, Any]:
    wall, cpu = timed
    return {
        "name": name,
        "library": library,
        "version": version,
        "api": api,
        "secure": True,
        "size": size,
        "times": wall,
        "cpu_times": cpu,
        "best_rate": size / min(wall),
        "median_rate": size / statistics.median(wall),
        "cpu_rate": size / max(min(cpu), 1e-9),
        "note": note,
    }


def bench_opendp(size: int, repeats: int) -> list[dict[str, Any]]:
    import opendp.prelude as dp

    dp.enable_features("contrib")
    version = dp.__version__
    rows = []
    values = [0.0] * size

    vec = dp.m.make_laplace(dp.vector_domain(dp.atom_domain(T=float, nan=False)), dp.l1_distance(T=float), scale=1.0)
    rows.append(
        _row(
            "OpenDP vectorised Laplace (float, default k)",
            "opendp",
            version,
            "dp.m.make_laplace(vector_domain(atom_domain(T=float)), l1_distance(T=float), scale=1)",
            size,
            _timed(lambda: vec(values), repeats),
            f"ε = {vec.map(1.0):.6g} for Δ = 1",
        )
    )
    sized = dp.m.make_laplace(
        dp.vector_domain(dp.atom_domain(T=float, nan=False), size=size), dp.l1_distance(T=float), scale=1.0, k=-28
    )
    rows.append(
        _row(
            "OpenDP vectorised Laplace (float, k = -28)",
            "opendp",
            version,
            "same, with size known and k=-28 (dpwitness's grid at this scale)",
            size,
            _timed(lambda: sized(values), repeats),
            f"ε = {sized.map(1.0):.6g} for Δ = 1",
        )
    )
    integers = [0] * size
    discrete = dp.m.make_laplace(dp.vector_domain(dp.atom_domain(T=int)), dp.l1_distance(T=int), scale=1.0)
    rows.append(
        _row(
            "OpenDP vectorised discrete Laplace (int)",
            "opendp",
            version,
            "dp.m.make_laplace(vector_domain(atom_domain(T=int)), l1_distance(T=int), scale=1)",
            size,
            _timed(lambda: discrete(integers), repeats),
            "integer outputs",
        )
    )
    return rows


def bench_diffprivlib(size: int, repeats: int) -> list[dict[str, Any]]:
    import diffprivlib
    from diffprivlib.mechanisms import Laplace

    mech = Laplace(epsilon=1.0, sensitivity=1.0)
    randomise = mech.randomise

    def run() -> list[float]:
        return [randomise(0.0) for _ in range(size)]

    return [
        _row(
            "diffprivlib Laplace",
            "diffprivlib",
            diffprivlib.__version__,
            "mechanisms.Laplace(epsilon=1, sensitivity=1).randomise(0.0) per sample",
            size,
            _timed(run, repeats),
            f"scalar API; RNG {type(mech._rng).__name__}",
        )
    ]


def bench_pydp(size: int, repeats: int) -> list[dict[str, Any]]:
    import pydp
    from pydp.algorithms.numerical_mechanisms import LaplaceMechanism

    mech = LaplaceMechanism(epsilon=1.0, sensitivity=1.0)
    add_noise = mech.add_noise

    def run() -> list[float]:
        return [add_noise(0.0) for _ in range(size)]

    return [
        _row(
            "python-dp (Google C++) Laplace",
            "python-dp",
            pydp.__version__,
            "LaplaceMechanism(epsilon=1, sensitivity=1).add_noise(0.0) per sample",
            size,
            _timed(run, repeats),
            "scalar API",
        )
    ]


BENCHES: dict[str, Callable[[int, int], list[dict[str, Any]]]] = {
    "opendp": bench_opendp,
    "diffprivlib": bench_diffprivlib,
    "python-dp": bench_pydp,
}


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--size", type=int, default=100_000, help="samples per timed call (default 10^5)")
    parser.add_argument("--repeats", type=int, default=5)
    parser.add_argument("--only", action="append", choices=sorted(BENCHES), help="run only these libraries")
    args = parser.parse_args(argv)
    rows: list[dict[str, Any]] = []
    for name in args.only or list(BENCHES):
        try:
            rows.extend(BENCHES[name](args.size, args.repeats))
        except Exception as exc:  # an anchor that fails to import or run is skipped, not fatal
            rows.append({"name": name, "library": name, "skipped": f"{type(exc).__name__}: {exc}"})
    json.dump({"python": sys.version.split()[0], "platform": platform.platform(), "rows": rows}, sys.stdout)
    sys.stdout.write("\n")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
