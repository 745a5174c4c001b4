"""Benchmark of the black-box auditor: DP-Sniper's table, leaks, detection, false alarms, tightness.

    python3 bench/bench_audit.py                      # everything (about 40 minutes on 2 busy cores)
    python3 bench/bench_audit.py --only sniper leaks  # some sections
    python3 bench/bench_audit.py --quick              # fewer seeds, shorter budgets

Targets (issue 10):
* tight mode, on every mechanism of DP-Sniper's table re-implemented in
  :func:`catalogue.dp_sniper_cases` (ε = 0.1): certified ε_lb ≥ the smallest of
  DP-Sniper's published lower confidence bound, 0.98 × the exact loss where known and
  0.98 × ε for proven ε-DP mechanisms, in ≤ 120 s per mechanism;
* a 1% point-mass leak and a 1% leak into a window of half-width 10⁻³·b each flagged in ≤ 60 s;
* no false alarm on correct mechanisms (Laplace, geometric, report-noisy-max, sparse vector
  Alg. 1–2 in natural form) across seeded audits of 2·10⁵ runs per input (200 seeds asked;
  the seed count run is printed);
* tightness ≥ 0.95ε from 10⁷ samples.
Writes bench/results/audit.json (after every section) and prints Markdown tables.
"""

from __future__ import annotations

import argparse
import json
import math
import platform
import sys
import time
from pathlib import Path
from typing import Any

from dpwitness import Laplace, audit
from dpwitness.witness.cases import inverted_laplace, releases

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "tests" / "support"))  # the known-verdict catalogue
from catalogue import buggy_cases, correct_cases, dp_sniper_cases

PER_INPUT = 5_000_000  # 10⁷ samples in all
OUT = Path(__file__).parent / "results" / "audit.json"
LEAKS = ("leak: exact answer on 1% of runs", "leak: scale b/1000 on 1% of runs")
#: Correct mechanisms of the no-false-alarm target (natural-form SVT runs one Python call per output).
FALSE_ALARM_CASES = (
    "laplace",
    "geometric",
    "noisy max index, Laplace",
    "noisy max index, exponential",
    "SVT Alg. 1, natural form",
    "SVT Alg. 2, natural form",
)


def sniper(seconds: float) -> list[dict[str, Any]]:
    rows = []
    for entry in dp_sniper_cases():
        case = entry.case
        started = time.perf_counter()
        result = audit(case.mechanism, case.d, case.d_prime, epsilon=case.epsilon, seed=2021, tight=True, max_seconds=seconds)
        wall = time.perf_counter() - started
        ours = result.best_epsilon_lower_bound
        rows.append(
            {
                "mechanism": case.name,
                "claimed": case.epsilon,
                "exact_loss": case.true_loss,
                "proven": entry.proven,
                "dp_sniper_lcb": list(entry.published),
                "target": entry.target,
                "fast_verdict": result.verdict,
                "fast_epsilon_lb": result.epsilon_lower_bound,
                "tight_epsilon_lb": result.tight_epsilon_lower_bound,
                "certified": ours,
                "met": ours >= entry.target and wall <= 120.0,
                "tight_samples_per_input": result.tight_samples,
                "fast_samples_per_input": result.samples,
                "seconds": wall,
                "event": result.tight_event or result.event,
                "note": result.tight_reason,
            }
        )
        print(f"  {case.name:42s} target {entry.target:.4f}  ours {ours:.4f}  ({wall:.0f} s) {result.tight_event}", flush=True)
    return rows


def leaks() -> list[dict[str, Any]]:
    rows = []
    for case in buggy_cases():
        if case.name not in LEAKS:
            continue
        for seed in range(5):
            started = time.perf_counter()
            result = audit(case.mechanism, case.d, case.d_prime, epsilon=case.epsilon, seed=seed)
            wall = time.perf_counter() - started
            rows.append(
                {
                    "mechanism": case.name,
                    "seed": seed,
                    "flagged": result.violated,
                    "epsilon_lb": result.epsilon_lower_bound,
                    "family": result.family,
                    "samples_per_input": result.samples,
                    "seconds": wall,
                }
            )
        flagged = [r for r in rows if r["mechanism"] == case.name]
        print(
            f"  {case.name:42s} flagged {sum(r['flagged'] for r in flagged)}/{len(flagged)}, "
            f"at most {max(r['seconds'] for r in flagged):.2f} s",
            flush=True,
        )
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
                "family": result.family,
                "samples_per_input": result.samples,
                "seconds": result.seconds,
            }
        )
        print(
            f"  {case.name:42s} flagged={result.violated} ε_lb={result.epsilon_lower_bound:.3f} n={result.samples:,}", flush=True
        )
    return rows


def false_alarms(
    seeds: int, samples: int, *, natural_seeds: int | None = None, names: tuple[str, ...] | None = None
) -> dict[str, Any]:
    """Seeded audits of correct mechanisms at ``samples`` runs per input; ``natural_seeds`` for the slow natural forms."""
    per_case: dict[str, dict[str, int]] = {}
    total = flagged = 0
    verdicts: dict[str, int] = {"ok": 0, "inconclusive": 0, "violated": 0}
    started = time.perf_counter()
    for case in correct_cases():
        if names is not None and case.name not in names:
            continue
        runs = natural_seeds if natural_seeds is not None and "natural form" in case.name else seeds
        hits = 0
        for seed in range(runs):
            result = audit(case.mechanism, case.d, case.d_prime, epsilon=case.epsilon, samples=samples, seed=10_000 + seed)
            hits += result.violated
            verdicts[result.verdict] += 1
        per_case[case.name] = {"audits": runs, "flagged": hits}
        total += runs
        flagged += hits
        print(f"  {case.name:42s} false alarms {hits}/{runs}", flush=True)
    return {
        "runs": total,
        "flagged": flagged,
        "rate": flagged / max(total, 1),
        "per_case": per_case,
        "verdicts": verdicts,
        "samples_per_input": samples,
        "seconds": time.perf_counter() - started,
    }


def tightness() -> list[dict[str, Any]]:
    rows = []
    runs = [
        ("Laplace ε = 1", releases(Laplace(sensitivity=1.0, epsilon=1.0)), 1.0, 1.0),
        ("Laplace ε = 0.1", releases(Laplace(sensitivity=1.0, epsilon=0.1)), 0.1, 0.1),
        ("inverted, claimed ε = 0.5 (true loss 2)", releases(inverted_laplace(sensitivity=1.0, epsilon=0.5)), 0.5, 2.0),
    ]
    for name, mechanism, claimed, true_loss in runs:
        result = audit(mechanism, 0.0, 1.0, epsilon=claimed, samples=PER_INPUT, seed=2021)
        rows.append(
            {
                "mechanism": name,
                "true_loss": true_loss,
                "epsilon_lb": result.epsilon_lower_bound,
                "fraction_of_true_loss": result.epsilon_lower_bound / true_loss,
                "verdict": result.verdict,
                "samples_total": 2 * result.samples,
                "seconds": result.seconds,
                "event": result.event,
            }
        )
        print(f"  {name:42s} ε_lb = {result.epsilon_lower_bound:.4f} ({result.seconds:.2f} s)", flush=True)
    return rows


def _save(results: dict[str, Any], out: Path = OUT) -> None:
    out.parent.mkdir(exist_ok=True)
    out.write_text(json.dumps(results, indent=2, default=str))


def _tables(results: dict[str, Any]) -> None:
    if "sniper" in results:
        print(
            "\n| mechanism (ε = 0.1) | exact loss | DP-Sniper LCB (reg / NN) | target | ours (tight) | fast verdict "
            "| runs per input | seconds | met |"
        )
        print("|---|---|---|---|---|---|---|---|---|")
        for r in results["sniper"]:
            loss = r["exact_loss"]
            exact = "—" if isinstance(loss, float) and math.isnan(loss) else ("∞" if loss == math.inf else f"{loss:.4f}")
            a, b = r["dp_sniper_lcb"]
            print(
                f"| {r['mechanism'].removeprefix('DP-Sniper: ')} | {exact} | {a:.4f} / {b:.4f} | {r['target']:.4f} | "
                f"{r['certified']:.4f} | {r['fast_verdict']} ({r['fast_epsilon_lb']:.4f}) | {r['tight_samples_per_input']:,} | "
                f"{r['seconds']:.0f} | {'yes' if r['met'] else 'NO'} |"
            )
    if "leaks" in results:
        print("\n| leak | flagged | ε_lb (min) | runs per input (max) | seconds (max) |")
        print("|---|---|---|---|---|")
        for name in LEAKS:
            rows = [r for r in results["leaks"] if r["mechanism"] == name]
            print(
                f"| {name} | {sum(r['flagged'] for r in rows)}/{len(rows)} | {min(r['epsilon_lb'] for r in rows):.3f} | "
                f"{max(r['samples_per_input'] for r in rows):,} | {max(r['seconds'] for r in rows):.2f} |"
            )
    if "detection" in results:
        print("\n| buggy mechanism | claimed ε | true loss | flagged | ε_lb | family | runs per input | seconds |")
        print("|---|---|---|---|---|---|---|---|")
        for r in results["detection"]:
            loss = "∞" if math.isinf(r["true_loss"]) else f"{r['true_loss']:.3g}"
            print(
                f"| {r['mechanism']} | {r['claimed']:g} | {loss} | {'yes' if r['flagged'] else 'NO'} | {r['epsilon_lb']:.3f} | "
                f"{r['family']} | {r['samples_per_input']:,} | {r['seconds']:.2f} |"
            )
    if "false_alarms" in results:
        a = results["false_alarms"]
        print(
            f"\nfalse alarms: {a['flagged']}/{a['runs']} audits flagged at {a['samples_per_input']:,} runs per input; "
            f"per mechanism {a['per_case']}; verdicts {a['verdicts']}; {a['seconds']:.0f} s"
        )
    if "tightness" in results:
        print("\n| mechanism | ε_lb | of true loss | samples (both inputs) | seconds |")
        print("|---|---|---|---|---|")
        for r in results["tightness"]:
            print(
                f"| {r['mechanism']} | {r['epsilon_lb']:.4f} | {r['fraction_of_true_loss']:.1%} | {r['samples_total']:.2g} | "
                f"{r['seconds']:.2f} |"
            )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--quick", action="store_true", help="fewer seeds, 60 s per DP-Sniper mechanism")
    parser.add_argument("--only", nargs="*", default=None, help="sections: sniper leaks detection alarms tightness")
    parser.add_argument("--seeds", type=int, default=None, help="seeds per correct mechanism (default 200; --quick 5)")
    parser.add_argument("--natural-seeds", type=int, default=None, help="seeds for the natural-form SVT (default: --seeds)")
    parser.add_argument("--out", type=Path, default=OUT, help=f"where to write the results (default {OUT})")
    args = parser.parse_args()
    sections = set(args.only or ["sniper", "leaks", "detection", "alarms", "tightness"])
    seeds = args.seeds or (5 if args.quick else 200)
    results: dict[str, Any] = {"machine": f"{platform.machine()}, {platform.python_implementation()} {platform.python_version()}"}
    if args.out.exists():
        results = {**json.loads(args.out.read_text()), **results}  # keep the sections not re-run
    steps = [
        ("sniper", "DP-Sniper's table, tight mode", lambda: sniper(60.0 if args.quick else 110.0)),
        ("leaks", "leaks of 1%", leaks),
        ("detection", "detection (adaptive, seed 1)", detection),
        (
            "alarms",
            "false alarms",
            lambda: false_alarms(seeds, 200_000, natural_seeds=args.natural_seeds, names=FALSE_ALARM_CASES),
        ),
        ("tightness", "tightness from 10⁷ samples", tightness),
    ]
    for key, title, run in steps:
        if key in sections:
            print(title, flush=True)
            results["false_alarms" if key == "alarms" else key] = run()
            _save(results, args.out)
    _tables(results)
    print(f"results written to {args.out}")


if __name__ == "__main__":
    main()
