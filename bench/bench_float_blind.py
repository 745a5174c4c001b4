"""False-ok rate of ``audit(..., float_test=True)`` on real float Laplace mechanisms (issue 18).

    .venv-anchors/bin/python bench/bench_float_blind.py     # diffprivlib 0.6.6 from the anchors' venv
    python3 bench/bench_float_blind.py                      # without diffprivlib: numpy float Laplace only

diffprivlib's ``Laplace.randomise`` computes ``value − scale·standard_laplace`` in floats, a porous
support (Mironov 2012) that the bit-pattern events see at 0 vs 1 and not at 100 vs 101. The target:
the float test never says "ok" where it is blind (false-ok rate 0), while integer mechanisms
(diffprivlib ``Geometric``) and dpwitness's own grid releases keep their "ok". Prints a Markdown
table; not run in CI (tests/witness/test_audit_blind_spots.py checks numpy float Laplace at 5 magnitudes).
"""

from __future__ import annotations

import argparse
import os
import sys
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "src"))  # the anchors' venv runs the working tree

from dpwitness import Laplace, audit
from dpwitness.witness.cases import releases

PAIRS = [(0.0, 1.0), (100.0, 101.0), (1000.0, 1001.0), (12345.0, 12346.0), (1e6, 1e6 + 1), (-300.0, -299.0)]


def mechanisms() -> list[tuple[str, Callable[..., Any], bool]]:
    """(name, per-call mechanism, whether its outputs are exact grid values)."""

    def numpy_laplace(x: float, rng: np.random.Generator) -> float:
        return x + rng.laplace(0.0, 1.0)

    found: list[tuple[str, Callable[..., Any], bool]] = [("numpy float Laplace, b = 1", numpy_laplace, False)]
    grid = releases(Laplace(sensitivity=1.0, epsilon=1.0))
    found.append(("dpwitness Laplace (grid)", lambda x, rng, size: grid(x, rng, size), True))
    try:
        from diffprivlib.mechanisms import Geometric
        from diffprivlib.mechanisms import Laplace as DiffprivlibLaplace
    except ImportError:
        print("diffprivlib not importable: run with .venv-anchors/bin/python for its rows", file=sys.stderr)
        return found
    laplace = DiffprivlibLaplace(epsilon=1.0, sensitivity=1.0, random_state=np.random.RandomState(2026))
    geometric = Geometric(epsilon=1.0, sensitivity=1, random_state=np.random.RandomState(2026))
    found.append(("diffprivlib 0.6.6 Laplace", lambda x, rng: laplace.randomise(x), False))
    found.append(("diffprivlib 0.6.6 Geometric", lambda x, rng: geometric.randomise(int(x)), True))
    return found


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--samples", type=int, default=100_000, help="runs per input (default 10⁵)")
    parser.add_argument("--seeds", type=int, default=2, help="seeds per pair (default 2)")
    args = parser.parse_args()
    print(f"load average before: {os.getloadavg()[0]:.1f}")
    print("| mechanism | pair | verdicts (ok / inconclusive / violated) | largest ε_lb | seconds |")
    print("|---|---|---|---|---|")
    false_ok = blind = 0
    for name, mechanism, grid in mechanisms():
        for x, y in PAIRS:
            if "Geometric" in name and x != int(x):
                continue
            counts = {"ok": 0, "inconclusive": 0, "violated": 0}
            largest, started = 0.0, time.perf_counter()
            for seed in range(args.seeds):
                result = audit(mechanism, x, y, epsilon=1.0, samples=args.samples, seed=seed, float_test=True)
                counts[result.verdict] += 1
                largest = max(largest, result.epsilon_lower_bound)
                if not grid:
                    blind += result.verdict != "violated"
                    false_ok += result.verdict == "ok"
            print(
                f"| {name} | {x:g} vs {y:g} | {counts['ok']} / {counts['inconclusive']} / {counts['violated']} | "
                f"{largest:.3g} | {time.perf_counter() - started:.1f} |",
                flush=True,
            )
    print(f"\nfalse ok on full-precision float mechanisms: {false_ok} of {blind} audits not proven violated")
    print(f"load average after: {os.getloadavg()[0]:.1f}")


if __name__ == "__main__":
    main()
