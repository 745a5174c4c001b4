"""Benchmark of the black-box auditor: tightness, detection, false alarms, speed.

    python3 bench/bench_audit.py            # full run (a few minutes on 2 cores)
    python3 bench/bench_audit.py --quick    # fewer seeds

Targets (issue 4): on a correct Laplace at ε = 1 and ε = 0.1, ε_lb ≥ 0.95·ε at 95% confidence;
on the inverted calibration the true loss within 5%; each from ≤ 10⁷ samples in ≤ 10 s.
Every buggy catalogue mechanism flagged; no correct one flagged across repeated seeds.
Published comparison: DP-Sniper (Bichsel et al., S&P 2021) reports ε_lb ≈ 0.097 for a correct
ε = 0.1 Laplace from 2·10⁸ samples.
Writes bench/results/audit.json and prints Markdown tables.
"""

from __future__ import annotations

import argparse
import json
import math
import platform
import time
from pathlib import Path
from typing import Any

from dpwitness import Laplace, audit
from dpwitness.attacks.tamper import inverted_laplace, releases
from dpwitness.witness.catalogue import buggy_cases, correct_cases

PER_INPUT = 5_000_000  # 10⁷ samples in all


def tightness() -> list[dict[str, Any]]:
    rows = []
    runs = [
        ("Laplace ε = 1", releases(Laplace(sensitivity=1.0, epsilon=1.0)), 1.0, 1.0),
        ("Laplace ε = 0.1", releases(Laplace(sensitivity=1.0, epsilon=0.1)), 0.1, 0.1),
        ("inverted, claimed ε = 0.5 (true loss 2)", releases(inverted_laplace(sensitivity=1.0, epsilon=0.5)), 0.5, 2.0),
    ]
    for name, mechanism, claimed, true_loss in runs:
        for mode, samples in (("fixed 5·10⁶ per input", PER_INPUT), ("adaptive (default)", None)):
            result = audit(mechanism, 0.0, 1.0, epsilon=claimed, samples=samples, seed=2021)
            rows.append(
                {
                    "mechanism": name,
                    "mode": mode,
                    "true_loss": true_loss,
                    "epsilon_lb": result.epsilon_lower_bound,
                    "fraction_of_true_loss": result.epsilon_lower_bound / true_loss,
                    "verdict": result.verdict,
                    "samples_total": 2 * result.samples,
                    "seconds": result.seconds,
                    "event": result.event,
                }
            )
            print(f"  {name:42s} {mode:24s} ε_lb = {result.epsilon_lower_bound:.4f} ({result.seconds:.2f} s)", flush=True)
    return rows


def detection() -> list[dict[str, Any]]:
    rows = []
    for case in buggy_cases():
        result = audit(case.mechanism, case.d, case.d_prime, epsilon=case.epsilon, seed=1)
        rows.append(
            {
                "mechanism": case.name,
                "claimed": case.epsilon,
                "true_loss": case.true_loss,
                "flagged": result.violated,
                "epsilon_lb": result.epsilon_lower_bound,
                "samples_per_input": result.samples,
                "seconds": result.seconds,
                "event": result.event,
            }
        )
        print(f"  {case.name:32s} flagged={result.violated} ε_lb={result.epsilon_lower_bound:.3f} n={result.samples:,}")
    return rows


def false_alarms(seeds: int, samples: int) -> dict[str, Any]:
    per_case = {}
    total = flagged = 0
    verdicts: dict[str, int] = {"ok": 0, "inconclusive": 0, "violated": 0}
    started = time.perf_counter()
    for case in correct_cases():
        hits = 0
        for seed in range(seeds):
            result = audit(case.mechanism, case.d, case.d_prime, epsilon=case.epsilon, samples=samples, seed=10_000 + seed)
            hits += result.violated
            verdicts[result.verdict] += 1
        per_case[case.name] = hits
        total += seeds
        flagged += hits
        print(f"  {case.name:32s} false alarms {hits}/{seeds}", flush=True)
    return {
        "runs": total,
        "flagged": flagged,
        "rate": flagged / total,
        "per_case": per_case,
        "verdicts": verdicts,
        "samples_per_input": samples,
        "seconds": time.perf_counter() - started,
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--quick", action="store_true", help="5 seeds per correct mechanism instead of 25")
    args = parser.parse_args()
    seeds = 5 if args.quick else 25
    print("tightness", flush=True)
    tight = tightness()
    print("detection", flush=True)
    detected = detection()
    print("false alarms", flush=True)
    alarms = false_alarms(seeds, 200_000)
    results = {
        "machine": f"{platform.machine()}, {platform.python_implementation()} {platform.python_version()}",
        "tightness": tight,
        "detection": detected,
        "false_alarms": alarms,
        "dp_sniper": {"epsilon": 0.1, "epsilon_lb": 0.097, "samples_total": 2e8},
    }
    out = Path(__file__).parent / "results" / "audit.json"
    out.parent.mkdir(exist_ok=True)
    out.write_text(json.dumps(results, indent=2, default=str))
    print("\n| mechanism | mode | ε_lb | of true loss | samples (both inputs) | seconds |")
    print("|---|---|---|---|---|---|")
    for r in tight:
        print(
            f"| {r['mechanism']} | {r['mode']} | {r['epsilon_lb']:.4f} | {r['fraction_of_true_loss']:.1%} | "
            f"{r['samples_total']:.2g} | {r['seconds']:.2f} |"
        )
    print("| DP-Sniper (published) | ε = 0.1 Laplace | 0.097 | 97% | 2·10⁸ | — |")
    print("\n| buggy mechanism | claimed ε | true loss | flagged | ε_lb | runs per input | seconds |")
    print("|---|---|---|---|---|---|---|")
    for r in detected:
        loss = "∞" if math.isinf(r["true_loss"]) else f"{r['true_loss']:g}"
        print(
            f"| {r['mechanism']} | {r['claimed']:g} | {loss} | {'yes' if r['flagged'] else 'NO'} | {r['epsilon_lb']:.3f} | "
            f"{r['samples_per_input']:,} | {r['seconds']:.2f} |"
        )
    print(
        f"\nfalse alarms: {alarms['flagged']}/{alarms['runs']} audits of correct mechanisms flagged "
        f"({alarms['rate']:.1%}; {seeds} seeds × {len(alarms['per_case'])} mechanisms, "
        f"{alarms['samples_per_input']:,} runs per input); "
        f"verdicts {alarms['verdicts']}; {alarms['seconds']:.0f} s"
    )
    print(f"results written to {out}")


if __name__ == "__main__":
    main()
