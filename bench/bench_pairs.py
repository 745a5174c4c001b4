"""Paired runs of per-call mechanisms: µs per pair, in this process and in the worker processes.

    python3 bench/bench_pairs.py                  # RNM3, OneTimeRappor, Rappor; 400,000 pairs each
    python3 bench/bench_pairs.py --pairs 100000 --only Rappor

For each mechanism of DP-Sniper's table named: the raw cost of two calls (``mechanism(d, rng)``
and ``mechanism(d_prime, rng)`` on one generator, nothing else), then ``Sampler.draw_pairs`` with
``workers=0`` (this process: state setting, outputs, rows) and with the default workers (two
processes where more than one CPU is available), after one warm-up draw that starts them and
measures the rate. Prints the load (1-minute average) before and after each row: the figures are
wall-clock times on a shared machine. Also checks that both draws gave the same rows.
"""

from __future__ import annotations

import argparse
import math
import os
import sys
import time
from pathlib import Path

import numpy as np

from dpwitness.witness.audit import Sampler

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "tests" / "support"))  # the known-verdict catalogue
from catalogue import dp_sniper_table

NAMES = ("ReportNoisyMax3", "OneTimeRappor", "Rappor")


def _load() -> float:
    return os.getloadavg()[0]


def measure(name: str, pairs: int) -> dict[str, float]:
    case = next(entry.case for entry in dp_sniper_table() if entry.case.name == name)
    mechanism, d, d_prime = case.mechanism, case.d, case.d_prime
    load_before = _load()
    rng = np.random.default_rng(1)
    raw_n = min(pairs, 100_000)
    started = time.perf_counter()
    for _ in range(raw_n):
        mechanism(d, rng)
        mechanism(d_prime, rng)
    raw = (time.perf_counter() - started) / raw_n
    here = Sampler(mechanism, math.inf, workers=0)
    started = time.perf_counter()
    serial = here.draw_pairs(d, d_prime, np.random.SeedSequence(2), pairs)
    serial_seconds = (time.perf_counter() - started) / pairs
    with Sampler(mechanism, math.inf) as there:
        there.recent_seconds_per_run = serial_seconds / 2  # as an audit would know it from its earlier draws
        started = time.perf_counter()
        there.draw_pairs(d, d_prime, np.random.SeedSequence(3), 1000 + int(2.0 / serial_seconds))  # starts the workers
        warm_up = time.perf_counter() - started
        started = time.perf_counter()
        parallel = there.draw_pairs(d, d_prime, np.random.SeedSequence(2), pairs)
        parallel_seconds = (time.perf_counter() - started) / pairs
        workers = there._pool.count if there._pool is not None else 0
    same = all(np.array_equal(a, b, equal_nan=True) for a, b in zip(serial, parallel, strict=True))
    return {
        "raw": raw,
        "serial": serial_seconds,
        "parallel": parallel_seconds,
        "workers": workers,
        "warm_up": warm_up,
        "same": same,
        "load_before": load_before,
        "load_after": _load(),
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--pairs", type=int, default=400_000, help="pairs per draw (default 400,000)")
    parser.add_argument("--only", nargs="*", default=None, help=f"mechanisms (default: {' '.join(NAMES)})")
    args = parser.parse_args()
    print(
        "| mechanism | two raw calls (µs) | draw_pairs here (µs/pair) | in workers (µs/pair) | workers | speed-up "
        "| same rows | load (1 min, before → after) |"
    )
    print("|---|---|---|---|---|---|---|---|")
    for name in args.only or NAMES:
        r = measure(name, args.pairs)
        print(
            f"| {name} | {r['raw'] * 1e6:.1f} | {r['serial'] * 1e6:.1f} | {r['parallel'] * 1e6:.1f} | {r['workers']:.0f} "
            f"| {r['serial'] / r['parallel']:.2f}× | {'yes' if r['same'] else 'NO'} "
            f"| {r['load_before']:.1f} → {r['load_after']:.1f} |",
            flush=True,
        )


if __name__ == "__main__":
    main()
